package main

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/acpserver"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
)

// acpCommand is `hub acp`: hub as an ACP agent on stdin and stdout (SPEC
// §6.5). kill is passed to every run (hub.WithKill).
func acpCommand(kill <-chan struct{}) *cli.Command {
	return &cli.Command{
		Name:      "acp",
		Usage:     "be an ACP (Agent Client Protocol) agent on stdin/stdout for an editor: each session/prompt is a turn of --agent",
		ArgsUsage: " ",
		Description: "Takes hub run's flags and config file, but no prompt: the ACP client sends each prompt (session/prompt),\n" +
			"and each runs as the next turn of a hub session of --agent with these flags (one agent process for the\n" +
			"ACP session where the CLI can hold one), its events streamed back as session/update. stdout carries only\n" +
			"the protocol; hub's own diagnostics go to stderr. --turn-timeout and --session-idle bound each turn and the\n" +
			"wait for the next prompt. --output and --color do not apply; --prompt-file, --session-in, --raw-log, --diff-out,\n" +
			"--status-file and --confirm (no terminal to ask on) are refused; --permission full needs --yes.",
		Flags:           runFlags(),
		HideHelpCommand: true,
		Action:          acpAction(kill),
		OnUsageError:    usageErr,
	}
}

// acpAction is hub acp: the template request from the flags and the config
// file, checked as hub run checks it, then the ACP connection on stdin and
// stdout until the client closes it or a signal comes.
func acpAction(kill <-chan struct{}) cli.ActionFunc {
	return func(c *cli.Context) error {
		o, err := configuredRunOptions(c)
		if err != nil {
			return err
		}
		p, err := acpPlan(o)
		if err != nil {
			return err
		}
		if err := p.load(c.Context, nil); err != nil { // prices, --schema, --cwd, --file; reads no prompt
			return acpUsage(toldBeforeStart(err, c.App.ErrWriter))
		}
		if p.warning != "" {
			fmt.Fprintf(c.App.ErrWriter, "hub: warning: %s\n", p.warning)
		}
		opts := []hub.Option{hub.WithKill(kill), hub.WithConfirm(p.approval.check),
			hub.WithTurnTimeout(p.turnTimeout), hub.WithSessionIdle(p.sessionIdle)}
		// As for hub run: hub is a child subreaper that runs nothing but
		// its runs, so what escapes a guard is killed with its run.
		if err := hub.BecomeSubreaper(); err == nil {
			opts = append(opts, hub.WithOrphans())
			defer hub.ReapOrphans()
		}
		logger := slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: slog.LevelWarn}))
		if p.approve == "deny" || p.approve == "fail" {
			opts = append(opts, hub.WithApprover(p.approver(nil)))
		}
		err = acpserver.Serve(c.Context, acpserver.Config{Request: p.req, Options: opts, Version: hubVersion(), Logger: logger,
			ForwardApprovals: p.approve == "editor"},
			c.App.Reader, c.App.Writer)
		if errors.Is(err, acpserver.ErrConnection) {
			// The client's input broke off: a protocol failure, not a signal.
			fmt.Fprintf(c.App.ErrWriter, "hub: hub acp stopped (%v); the running prompts were cancelled\n", err)
			return statusError{events.BinProtocol.ExitCode()}
		}
		if err != nil {
			return cancelledError{fmt.Sprintf("hub acp stopped (%v); the running prompts were cancelled", err)}
		}
		return nil
	}
}

// acpPlan checks hub acp's options and builds the template request with
// hub run's plan (with a stand-in prompt, then cleared): the same checks,
// the same request, but for what a server of many runs cannot take.
func acpPlan(o runOptions) (runPlan, error) {
	switch {
	case len(o.Args) > 0:
		return runPlan{}, usagef("acp: takes no prompt (got %q): the ACP client sends each prompt (session/prompt)", o.Args)
	case o.PromptFile != "":
		return runPlan{}, usagef("acp: --prompt-file: the ACP client sends each prompt (session/prompt)")
	case o.Confirm:
		return runPlan{}, usagef("acp: --confirm asks on the terminal, which hub acp has not (stdin and stdout carry the protocol): approve ahead with --yes")
	case o.RawLog != "":
		return runPlan{}, usagef("acp: --raw-log names one run's file, and hub acp makes a run of every prompt")
	case o.DiffOut != "":
		return runPlan{}, usagef("acp: --diff-out names one run's file, and hub acp makes a run of every prompt")
	case o.StatusFile != "":
		return runPlan{}, usagef("acp: --status-file names one run's file, and hub acp makes a run of every prompt")
	case o.SessionIn != "":
		return runPlan{}, usagef("acp: --session-in: the ACP client sends each prompt (session/prompt)")
	}
	o.Args, o.DashDash, o.ACP = []string{"(from the ACP client)"}, true, true
	p, err := o.plan()
	if err != nil {
		return runPlan{}, acpUsage(err)
	}
	p.req.Prompt = ""
	if p.req.Permission == grant.Full && !o.Yes {
		return runPlan{}, usagef("acp: --permission full needs --yes (hub acp cannot ask on a terminal)")
	}
	return p, nil
}

// acpUsage names hub acp in a usage error of hub run's checks.
func acpUsage(err error) error {
	var ue usageError
	if errors.As(err, &ue) {
		if rest, ok := strings.CutPrefix(ue.msg, "run: "); ok {
			return usageError{"acp: " + rest}
		}
	}
	return err
}
