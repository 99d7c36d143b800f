package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
)

// approval is how a run's grant is approved: --confirm asks on the
// terminal, --yes approves it ahead; with neither, only a grant short of
// --permission full goes ahead.
type approval struct {
	confirm bool
	yes     bool
	// tty opens the terminal to ask on; nil means /dev/tty.
	tty func() (io.ReadWriteCloser, error)
}

// check is the run's hub.Confirm (SPEC §6.1): --permission full needs
// --confirm or --yes, and --confirm needs a "y" read from the terminal
// (/dev/tty, not stdin, which may carry the prompt). Every refusal is
// permission_denied/confirmation_required, and the run starts nothing.
func (a approval) check(ctx context.Context, req hub.Request, g grant.Rule) error {
	switch {
	case a.yes:
		return nil
	case !a.confirm && g.Level == grant.Full:
		return events.NewError(events.BinPermissionDenied, events.ReasonConfirmationRequired,
			"add --confirm to be asked on the terminal, or --yes to approve it ahead (scripts, CI)",
			"--permission full lets %s do anything it can; hub runs it only when approved", req.Agent)
	case !a.confirm:
		return nil
	}
	tty, err := a.openTTY()
	if err != nil {
		return events.NewError(events.BinPermissionDenied, events.ReasonConfirmationRequired,
			"run it from a terminal, or approve it ahead with --yes",
			"--confirm needs a terminal to ask on, and there is none (%v); nothing was started", err)
	}
	defer tty.Close()
	fmt.Fprint(tty, grantSummary(req, g)+"Run it? [y/N] ")
	answer, err := readAnswer(ctx, tty)
	if err != nil {
		return err
	}
	if a := strings.ToLower(strings.TrimSpace(answer)); a == "y" || a == "yes" {
		return nil
	}
	return events.NewError(events.BinPermissionDenied, events.ReasonConfirmationRequired,
		"run it again and answer y to start it", "not confirmed on the terminal (answer %q); nothing was started", strings.TrimSpace(answer))
}

// openTTY opens the terminal to ask on: a.tty, or /dev/tty.
func (a approval) openTTY() (io.ReadWriteCloser, error) {
	if a.tty != nil {
		return a.tty()
	}
	return os.OpenFile("/dev/tty", os.O_RDWR, 0)
}

// readAnswer reads one line from tty, or returns ctx's cause when ctx ends
// first (a Ctrl-C at the question). The read goes on in its goroutine
// until the caller closes tty.
func readAnswer(ctx context.Context, tty io.Reader) (string, error) {
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(tty).ReadString('\n')
		got <- line
	}()
	select {
	case line := <-got:
		return line, nil
	case <-ctx.Done():
		return "", context.Cause(ctx)
	}
}

// grantSummary is what --confirm shows before it asks: agent, model,
// directory, permission and how it is held, limits, auth mode.
func grantSummary(req hub.Request, g grant.Rule) string {
	var b strings.Builder
	line := func(k, v string) {
		if k != "" {
			k += ":"
		}
		fmt.Fprintf(&b, "  %-11s %s\n", k, shown(v))
	}
	fmt.Fprintf(&b, "hub is about to run %s:\n", req.Agent)
	line("model", orElse(req.Model, "the agent's default"))
	dir := req.Cwd
	if dir == "" {
		dir, _ = os.Getwd()
	}
	line("directory", dir)
	if req.Sandbox != "" {
		then := "the change is reported, not applied"
		if req.Apply {
			then = "the change is shown and applied only after you approve it"
		}
		line("sandbox", fmt.Sprintf("%s: the agent works in a copy of the directory; %s", req.Sandbox, then))
	}
	line("permission", fmt.Sprintf("%s (%s: %s)", g.Level, g.How, g.Means))
	if g.Note != "" {
		line("", g.Note)
	}
	line("limits", limitsSummary(req))
	auth := "inherit (API keys in the environment are used, and billed)"
	if req.Auth == grant.AuthLogin {
		auth = "login (billed API keys removed; the CLI's saved login is used)"
	}
	line("auth", auth)
	return b.String()
}

// limitsSummary lists the limits a run has, or "none".
func limitsSummary(req hub.Request) string {
	l := req.Limits
	var parts []string
	if l.Timeout > 0 {
		parts = append(parts, "timeout "+l.Timeout.String())
	}
	if l.IdleTimeout > 0 {
		parts = append(parts, "idle timeout "+l.IdleTimeout.String())
	}
	if l.MaxCostUSD > 0 {
		parts = append(parts, fmt.Sprintf("max cost $%.2f", l.MaxCostUSD))
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"max tokens", l.MaxTokens}, {"max turns", l.MaxTurns}, {"max tool steps", l.MaxToolSteps}} {
		if n.v > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", n.name, n.v))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// shown is s as the terminal may print it: quoted, escapes and all, when
// it holds a control character or invalid UTF-8 (a --cwd or --model with
// a newline or a terminal escape must not redraw the question).
func shown(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) && r != ' ' }) >= 0 {
		return strconv.QuoteToGraphic(s)
	}
	return s
}

func orElse(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// MaxShownDiff is how much of a change --confirm shows before it asks
// whether to apply it: 64 KiB (the rest is counted; --diff-out has it all).
const MaxShownDiff = 64 << 10

// approveChange is the run's hub.Approve with --confirm and --apply:
// it shows the change on the terminal (each line made harmless, as shown
// does) and needs a "y" to apply it.
func (a approval) approveChange(ctx context.Context, diff []byte, files []events.FileChanged) error {
	tty, err := a.openTTY()
	if err != nil {
		return events.NewError(events.BinPermissionDenied, events.ReasonConfirmationRequired,
			"save it with --diff-out FILE and apply it later with `hub apply FILE`",
			"--confirm needs a terminal to show the change on, and there is none (%v); nothing was applied", err)
	}
	defer tty.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "The agent's change (%d path(s), %d bytes of diff):\n", len(files), len(diff))
	shownDiff := diff[:min(len(diff), MaxShownDiff)]
	for _, l := range strings.SplitAfter(string(shownDiff), "\n") {
		if l == "" {
			continue
		}
		fmt.Fprintln(&b, shownLine(strings.TrimSuffix(l, "\n")))
	}
	if len(diff) > MaxShownDiff {
		fmt.Fprintf(&b, "… %d more bytes not shown (--diff-out FILE writes it all)\n", len(diff)-MaxShownDiff)
	}
	fmt.Fprint(tty, b.String()+"Apply it? [y/N] ")
	answer, err := readAnswer(ctx, tty)
	if err != nil {
		return err
	}
	if a := strings.ToLower(strings.TrimSpace(answer)); a == "y" || a == "yes" {
		return nil
	}
	return events.NewError(events.BinPermissionDenied, events.ReasonConfirmationRequired,
		"save it with --diff-out FILE to apply later with `hub apply FILE`, or run again and answer y",
		"the change was not approved on the terminal (answer %q); nothing was applied", strings.TrimSpace(answer))
}

// shownLine is a diff line as the terminal may print it: its control
// characters (an escape sequence in a file the agent wrote) quoted.
func shownLine(s string) string {
	if !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) && r != ' ' && r != '\t' }) >= 0 {
		q := strconv.QuoteToGraphic(s)
		return q[1 : len(q)-1]
	}
	return s
}
