package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
)

// agentStatus is one row of `hub agents`.
type agentStatus struct {
	Name       string `json:"name"`
	Installed  bool   `json:"installed"`
	Version    string `json:"version"`
	MinVersion string `json:"min_version"`
	Path       string `json:"path"`
	Status     string `json:"status"` // "ok" or the bin that stops it: not_installed, unsupported_version
	Message    string `json:"message"`
	Hint       string `json:"hint"`
}

func agentsCommand() *cli.Command {
	return &cli.Command{
		Name:         "agents",
		Usage:        "list the agents hub supports: installed or not, versions, paths",
		Flags:        []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print a JSON array"}},
		OnUsageError: usageErr,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("%s takes no arguments, got %q", c.Command.Name, c.Args().Slice())
			}
			var rows []agentStatus
			for _, name := range adapters.Names() {
				ad, _ := adapters.Lookup(name)
				info := ad.Info()
				row := agentStatus{Name: name, MinVersion: info.MinVersion, Status: "ok", Hint: info.InstallHint}
				inst, err := ad.Detect(c.Context, "")
				row.Path, row.Version = inst.Path, inst.Version
				row.Installed = inst.Path != ""
				var he *events.Error
				if errors.As(err, &he) {
					row.Status, row.Message, row.Hint = string(he.Bin), he.Message, he.Hint
				} else if err != nil {
					row.Status, row.Message = string(events.BinInternal), err.Error()
				} else {
					row.Hint = ""
				}
				rows = append(rows, row)
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tSTATUS\tVERSION\tMIN\tPATH")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, r.Status, dash(r.Version), r.MinVersion, dash(r.Path))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, r := range rows {
				if r.Status != "ok" {
					fmt.Fprintf(c.App.Writer, "%s: %s; %s\n", r.Name, r.Message, r.Hint)
				}
			}
			return nil
		},
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
