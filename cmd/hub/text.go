package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hubcli/hub/events"
)

// textPrinter renders events for people: the answer on stdout; tool calls,
// notices and the closing summary on stderr, so `hub run … > answer.txt`
// keeps only the answer. With --schema (structured) the answer is the
// value that matched, printed on stdout once the run is ok; the agent's
// text (which may be an answer hub sent back, or none at all for Claude
// Code's tool) streams on stderr.
type textPrinter struct {
	out, info   io.Writer
	structured  bool
	err         error // the first write error: the sink then fails the run
	sawDelta    bool  // text.delta events carry the answer; skip message
	endsWithNL  bool
	wroteAnswer bool
}

func newTextPrinter(out, info io.Writer, structured bool) *textPrinter {
	p := &textPrinter{endsWithNL: true, structured: structured}
	p.out = &errWriter{w: out}
	p.info = info
	return p
}

func (p *textPrinter) answer(s string) {
	if s == "" {
		return
	}
	w := p.out
	if p.structured {
		w = p.info
	}
	fmt.Fprint(w, s)
	p.endsWithNL = strings.HasSuffix(s, "\n")
	p.wroteAnswer = true
}

func (p *textPrinter) print(ev events.Event) error {
	switch b := ev.Body.(type) {
	case events.TextDelta:
		p.sawDelta = true
		p.answer(b.Text)
	case events.Message:
		if !p.sawDelta {
			if p.wroteAnswer && !p.endsWithNL {
				p.answer("\n")
			}
			p.answer(b.Text)
		}
		p.sawDelta = false
	case events.ToolStarted:
		fmt.Fprintf(p.info, "→ %s %s\n", b.Name, oneLine(string(b.Input), 120))
	case events.ToolFinished:
		code := ""
		if b.ExitCode != nil {
			code = fmt.Sprintf(" exit %d", *b.ExitCode)
		}
		fmt.Fprintf(p.info, "← %s %s%s (%d bytes)\n", b.Name, b.Status, code, b.OutputBytes)
	case events.FileChanged:
		if p.wroteAnswer && !p.endsWithNL && !p.structured {
			fmt.Fprintln(p.out) // the path goes on a line of its own
			p.endsWithNL = true
		}
		what := string(b.Change)
		if b.OldPath != nil {
			what += " from " + shown(*b.OldPath)
		}
		if b.Protected != "" {
			what += " — refused: " + b.Protected
		}
		fmt.Fprintf(p.info, "± %s %s\n", shown(b.Path), what)
	case events.Notice:
		switch b.Kind {
		case events.NoticeUnknownEvent:
		default:
			fmt.Fprintf(p.info, "hub: %s: %s\n", b.Kind, oneLine(b.Message, 300))
		}
	case events.RunFinished:
		switch {
		case p.wroteAnswer && !p.endsWithNL && p.structured:
			fmt.Fprintln(p.info)
		case p.wroteAnswer && !p.endsWithNL:
			fmt.Fprintln(p.out)
		}
		if p.structured && b.OK && b.Structured != nil {
			fmt.Fprintf(p.out, "%s\n", events.EscapeLineSeparators(b.Structured))
		}
		p.summary(b)
	}
	// The answer is the point of text output: failing to write it fails the
	// run. The stderr lines are best effort.
	return p.out.(*errWriter).err
}

func (p *textPrinter) summary(b events.RunFinished) {
	cost := "cost unknown"
	if b.CostUSD != nil {
		cost = fmt.Sprintf("$%.4f %s", *b.CostUSD, b.CostSource)
	}
	stats := fmt.Sprintf("%d tokens (%d in, %d out, %d cache read, %d cache write) · %s · %d turns · %d tool calls · %s",
		b.Usage.Sum(), b.Usage.Input, b.Usage.Output, b.Usage.CacheRead, b.Usage.CacheWrite,
		cost, b.Turns, b.ToolCalls, (time.Duration(b.DurationMS) * time.Millisecond).String())
	if b.DiffBytes != nil {
		switch {
		case *b.DiffBytes == 0:
			stats += " · no change"
		case b.Applied != nil && *b.Applied:
			stats += fmt.Sprintf(" · change applied (%d bytes of diff)", *b.DiffBytes)
		case b.Applied != nil:
			stats += fmt.Sprintf(" · change not applied (%d bytes of diff)", *b.DiffBytes)
		default:
			stats += fmt.Sprintf(" · change not applied (%d bytes of diff; --apply applies it)", *b.DiffBytes)
		}
	}
	if b.OK {
		fmt.Fprintf(p.info, "── ok · %s\n", stats)
		return
	}
	e := b.Error
	fmt.Fprintf(p.info, "── failed: %s · %s\n   %s\n", binReason(e), stats, e.Message)
	if e.Hint != "" {
		fmt.Fprintf(p.info, "   next: %s\n", e.Hint)
	}
	if b.SessionID != nil {
		fmt.Fprintf(p.info, "   session: %s\n", *b.SessionID)
	}
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// binReason is "bin/reason", or "bin" when the bin has no reasons (internal).
func binReason(e *events.Error) string {
	if e.Reason == "" {
		return string(e.Bin)
	}
	return string(e.Bin) + "/" + string(e.Reason)
}
