package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
)

// agentStatus is one row of `hub agents`.
type agentStatus struct {
	Name       string `json:"name"`
	Installed  bool   `json:"installed"`
	Version    string `json:"version"`
	MinVersion string `json:"min_version"`
	// TestedVersion is the newest version hub's tests run on; Warning says
	// when the installed one is newer (it still runs).
	TestedVersion string `json:"tested_version"`
	Warning       string `json:"warning,omitempty"`
	Path          string `json:"path"`
	Status        string `json:"status"` // "ok" or the bin that stops it: not_installed, unsupported_version
	Message       string `json:"message"`
	Hint          string `json:"hint"`
	// Permissions says how the agent is held to each --permission level.
	Permissions []grant.Rule `json:"permissions,omitempty"`

	err *events.Error // Detect's error, nil when ok or not an *events.Error
}

// detectAgent is ad's row of `hub agents`: it runs ad.Detect(ctx, bin)
// (bin "" for the agent's default name in PATH), which blocks until the
// version command has exited or been killed with its processes (ctx's
// deadline, or the agent's own probe timeout). hub doctor builds on it.
//
// hub agents takes a version from the version cache as hub run does (ctx
// is not adapters.WithFreshProbe): it lists what hub run would find, the
// same path and version, and costs nothing when the cache holds them (four
// probes take seconds). Whether the agent still starts is hub doctor's
// question; doctor's ctx asks for a fresh probe.
func detectAgent(ctx context.Context, ad adapters.Adapter, bin string) agentStatus {
	info := ad.Info()
	row := agentStatus{Name: ad.Name(), MinVersion: info.MinVersion, TestedVersion: info.TestedVersion, Status: "ok", Hint: info.InstallHint, Permissions: grants(info)}
	inst, err := ad.Detect(ctx, bin)
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
	if err == nil && info.NewerThanTested(inst.Version) {
		row.Warning = fmt.Sprintf("version %s is newer than the newest hub was tested on (%s): it should work (events and fields hub does not know become notices); if a run goes wrong, pin %s@%s",
			inst.Version, info.TestedVersion, info.Package, info.TestedVersion)
	}
	row.err = he
	return row
}

func agentsCommand() *cli.Command {
	return &cli.Command{
		Name:  "agents",
		Usage: "list the agents hub supports: installed or not, versions, paths",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print a JSON array"},
			&cli.BoolFlag{Name: "permissions", Usage: "print how each agent is held to each --permission level (a Markdown table), and probe nothing"}},
		OnUsageError: usageErr,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("%s takes no arguments, got %q", c.Command.Name, c.Args().Slice())
			}
			if c.Bool("permissions") {
				_, err := fmt.Fprint(c.App.Writer, permissionTable())
				return err
			}
			var rows []agentStatus
			for _, name := range adapters.Names() {
				ad, _ := adapters.Lookup(name)
				rows = append(rows, detectAgent(c.Context, ad, ""))
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			tw := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tSTATUS\tVERSION\tMIN\tTESTED\tPATH")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Name, r.Status, dash(r.Version), r.MinVersion, dash(r.TestedVersion), dash(r.Path))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, r := range rows {
				if r.Status != "ok" {
					fmt.Fprintf(c.App.Writer, "%s: %s; %s\n", r.Name, r.Message, r.Hint)
				}
				if r.Warning != "" {
					fmt.Fprintf(c.App.Writer, "%s: warning: %s\n", r.Name, r.Warning)
				}
			}
			return nil
		},
	}
}

// grants are info's grants in the order of grant.Levels; a level
// the adapter has no grant for is refused.
func grants(info adapters.Info) []grant.Rule {
	out := make([]grant.Rule, 0, len(grant.Levels))
	for _, level := range grant.Levels {
		g, ok := info.Grants[level]
		if !ok {
			g = grant.Rule{How: grant.Refused, Note: "hub does not know how to hold this agent to it"}
		}
		g.Level = level
		out = append(out, g)
	}
	return out
}

// permissionTable is the agent × level table (SPEC §6.1) as Markdown: for
// each agent and level, how it is enforced, what hub passes the CLI, and
// what that does not cover. docs/permissions.md holds it as printed.
func permissionTable() string {
	var b strings.Builder
	b.WriteString("| agent | level | how | what hub passes the CLI | notes |\n|---|---|---|---|---|\n")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
	for _, name := range adapters.Names() {
		ad, _ := adapters.Lookup(name)
		for _, g := range grants(ad.Info()) {
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s | %s |\n", name, g.Level, g.How, cell(g.Means), cell(g.Note))
		}
	}
	return b.String()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
