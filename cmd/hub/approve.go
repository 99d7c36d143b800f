package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/hubcli/hub"
)

// maxDiffLines is how much of a call's change the terminal question shows.
const maxDiffLines = 20

// approver is the run's hub.Approver for --approve: tty asks on the
// terminal (/dev/tty, with the status line off), deny answers no (the
// agent is told and goes on), fail stops the run.
func (p runPlan) approver(text *textPrinter) hub.Approver {
	level := string(p.req.Permission.OrDefault())
	switch p.approve {
	case "deny":
		return func(context.Context, hub.ToolCall) hub.Decision {
			return hub.Decision{Verdict: hub.Deny, Message: "hub --approve deny: calls outside --permission " + level + " are refused; do without it", By: "policy"}
		}
	case "fail":
		return func(_ context.Context, c hub.ToolCall) hub.Decision {
			return hub.Decision{Verdict: hub.Stop, Message: "--approve fail stops at the first call outside --permission " + level, By: "policy"}
		}
	}
	return func(ctx context.Context, c hub.ToolCall) hub.Decision {
		var d hub.Decision
		err := text.quiet(func() error {
			var err error
			d, err = p.approval.askCall(ctx, c)
			return err
		})
		if err != nil {
			return hub.Decision{Verdict: hub.Deny, Message: "the question could not be asked on the terminal: " + err.Error(), By: "tty"}
		}
		d.By = "tty"
		return d
	}
}

// askCall asks on the terminal about one tool call (callQuestion), and
// reads the answer as a line (answerOf).
func (a approval) askCall(ctx context.Context, c hub.ToolCall) (hub.Decision, error) {
	tty, err := a.openTTY()
	if err != nil {
		return hub.Decision{}, err
	}
	defer tty.Close()
	fmt.Fprint(tty, callQuestion(c, true))
	answer, err := readAnswer(ctx, tty)
	if err != nil {
		return hub.Decision{}, err
	}
	return answerOf(answer), nil
}

// callQuestion is the question about one tool call: what it is, its paths,
// why the agent asks, and the start of its change; then the answers, read
// as a line (enter: hub run's terminal, in its own line mode) or as one
// key (hub chat's).
func callQuestion(c hub.ToolCall, enter bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n%s asks to call %s (%s)", c.Agent, shown(c.Name), c.Kind)
	if len(c.Input) > 0 && len(c.Input) <= 300 {
		fmt.Fprintf(&b, ": %s", shown(string(c.Input)))
	}
	b.WriteString("\n")
	for _, p := range c.Paths {
		fmt.Fprintf(&b, "  path: %s\n", shown(p))
	}
	if c.Reason != "" {
		fmt.Fprintf(&b, "  why:  %s\n", shown(c.Reason))
	}
	if c.Diff != "" {
		lines := strings.Split(strings.TrimRight(c.Diff, "\n"), "\n")
		for i, l := range lines {
			if i == maxDiffLines {
				fmt.Fprintf(&b, "  … %d more lines\n", len(lines)-maxDiffLines)
				break
			}
			fmt.Fprintf(&b, "  │ %s\n", shownLine(l))
		}
	}
	b.WriteString("Allow it? [y]es once, [a]lways for this tool, [n]o, [q]uit (stop the run)")
	if enter {
		b.WriteString(", then Enter")
	}
	b.WriteString(" ")
	return b.String()
}

// answerOf is the Decision an answer to callQuestion gives: y allows the
// call once, a allows the tool for the rest of the run or session, q
// stops the run, anything else (n) denies the call.
func answerOf(answer string) hub.Decision {
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "y", "yes":
		return hub.Decision{Verdict: hub.AllowOnce}
	case "a", "always":
		return hub.Decision{Verdict: hub.AllowSession}
	case "q", "quit":
		return hub.Decision{Verdict: hub.Stop, Message: "stopped at the terminal"}
	}
	return hub.Decision{Verdict: hub.Deny, Message: "the user said no at the terminal"}
}
