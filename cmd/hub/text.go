package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fatih/color"

	"github.com/hubcli/hub/events"
)

// textPrinter renders events for people: the answer on stdout; tool calls,
// notices and the closing summary on stderr, so `hub run … > answer.txt`
// keeps only the answer. With --schema (structured) the answer is the
// value that matched, printed on stdout once the run is ok; the agent's
// text (which may be an answer hub sent back, or none at all for Claude
// Code's tool) streams on stderr.
//
// On a terminal (console) stderr also carries a live status line, redrawn
// in place every statusEvery and cleared before anything else is written,
// and tool lines, notices and the summary are coloured. Whatever the
// console, a line on stderr never starts in the middle of the answer's
// line when both go to one place, and the model's text cannot move the
// cursor or change the terminal: its control characters are shown, not
// sent (harmless).
//
// print is safe for concurrent use (the agent's stderr notices come from
// another goroutine than its events); close stops the redraws and must be
// called once the run is over.
type textPrinter struct {
	mu         sync.Mutex
	out        *errWriter // the answer's stream (stdout)
	info       io.Writer  // stderr
	structured bool
	con        console
	pal        palette
	now        func() time.Time

	sawDelta     bool // text.delta events carry the answer; skip message
	turns        int  // a session's turns ended (turn.finished): its summary counts them
	wroteAnswer  bool
	answerEndsNL bool // what the answer's stream holds so far ends in "\n"
	// midLine says the place stderr writes to is in the middle of a line
	// of the answer: the answer goes to stderr (structured), or stdout and
	// stderr are one file (console.shared). A stderr line then first ends
	// it, and the status line waits.
	midLine bool

	status *liveStatus // nil: no status line
	drawn  bool        // the status line is on the screen
	held   int         // questions being asked (quiet): no status line
	frame  int
	stop   chan struct{}
	done   chan struct{}
}

func newTextPrinter(out, info io.Writer, structured bool, con console) *textPrinter {
	p := &textPrinter{
		out:          &errWriter{w: out},
		info:         info,
		structured:   structured,
		con:          con,
		pal:          newPalette(con.color),
		now:          time.Now,
		answerEndsNL: true,
	}
	if con.status {
		p.status = newLiveStatus(p.now())
		p.stop, p.done = make(chan struct{}), make(chan struct{})
		go p.redraw()
	}
	return p
}

// redraw draws the status line every statusEvery until close.
func (p *textPrinter) redraw() {
	defer close(p.done)
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.frame++
			p.draw()
			p.mu.Unlock()
		}
	}
}

// close clears the status line and stops its redraws. It blocks until the
// redrawing goroutine is gone; safe to call twice, and on a nil printer.
func (p *textPrinter) close() {
	if p == nil || p.stop == nil {
		return
	}
	p.mu.Lock()
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.clearStatus()
	p.status = nil
	p.mu.Unlock()
	<-p.done
}

// quiet runs f, a question on the terminal, with the status line cleared
// and not redrawn until f returns; events printed meanwhile still are.
// On a nil printer it just runs f.
func (p *textPrinter) quiet(f func() error) error {
	if p == nil {
		return f()
	}
	p.mu.Lock()
	p.held++
	p.clearStatus()
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.held--
		p.mu.Unlock()
	}()
	return f()
}

// draw puts the status line on the screen, unless a line of the answer is
// open there, a question is being asked (quiet) or hub is a background job.
func (p *textPrinter) draw() {
	if p.status == nil || p.midLine || p.held > 0 || (p.con.foreground != nil && !p.con.foreground()) {
		return
	}
	line := p.status.line(p.now(), p.frame, p.con.width())
	fmt.Fprint(p.info, "\r\x1b[2K"+p.pal.status.Sprint(line))
	p.drawn = true
}

func (p *textPrinter) clearStatus() {
	if p.drawn {
		fmt.Fprint(p.info, "\r\x1b[2K")
		p.drawn = false
	}
}

// line writes one line (s, without its "\n") on stderr: on a line of its
// own, with the status line redrawn below it.
func (p *textPrinter) line(s string) {
	p.clearStatus()
	if p.midLine {
		fmt.Fprint(p.info, "\n")
		p.midLine = false
		// The answer's stream is stderr, or stdout is the same file:
		// either way it now ends in "\n".
		p.answerEndsNL = true
	}
	fmt.Fprint(p.info, s+"\n")
	p.draw()
}

func (p *textPrinter) answer(s string) {
	s = harmless(s)
	if s == "" {
		return
	}
	var w io.Writer = p.out
	if p.structured {
		w = p.info
	}
	if p.structured || p.con.shared {
		p.clearStatus()
	}
	fmt.Fprint(w, s)
	p.answerEndsNL = strings.HasSuffix(s, "\n")
	p.midLine = (p.structured || p.con.shared) && !p.answerEndsNL
	p.wroteAnswer = true
}

func (p *textPrinter) print(ev events.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status != nil {
		p.status.observe(ev, p.now())
	}
	switch b := ev.Body.(type) {
	case events.TextDelta:
		p.sawDelta = true
		p.answer(b.Text)
	case events.Message:
		if !p.sawDelta {
			if p.wroteAnswer && !p.answerEndsNL {
				p.answer("\n")
			}
			p.answer(b.Text)
		}
		p.sawDelta = false
	case events.ToolStarted:
		p.line(p.pal.tool.Sprint("→ "+oneLine(b.Name, 80)) + " " + oneLine(string(b.Input), 120))
	case events.ToolFinished:
		code := ""
		if b.ExitCode != nil {
			code = fmt.Sprintf(" exit %d", *b.ExitCode)
		}
		p.line(fmt.Sprintf("%s %s%s (%d bytes)", p.pal.tool.Sprint("← "+oneLine(b.Name, 80)),
			p.pal.toolStatus(b.Status), code, b.OutputBytes))
	case events.TurnStarted:
		p.sawDelta = false
	case events.TurnFinished:
		p.clearStatus()
		p.endAnswer()
		p.turns++
		p.turnLines(b)
	case events.FileChanged:
		what := string(b.Change)
		if b.OldPath != nil {
			what += " from " + oneLine(shown(*b.OldPath), 300)
		}
		if b.Protected != "" {
			what += " — " + p.pal.bad.Sprint("refused: "+oneLine(b.Protected, 300))
		}
		p.line(p.pal.file.Sprint("± "+oneLine(shown(b.Path), 300)) + " " + what)
	case events.ApprovalDecided:
		what := fmt.Sprintf("%s %s (%s", oneLine(b.Name, 80), b.Verdict, b.By)
		if b.WaitedMS > 0 {
			what += fmt.Sprintf(", after %s", (time.Duration(b.WaitedMS) * time.Millisecond).Round(100*time.Millisecond))
		}
		what += ")"
		if b.Message != "" {
			what += ": " + oneLine(b.Message, 300)
		}
		p.line(p.pal.notice.Sprint("hub: approval:") + " " + what)
	case events.Notice:
		switch b.Kind {
		case events.NoticeUnknownEvent:
		default:
			p.line(p.pal.notice.Sprint("hub: "+string(b.Kind)+":") + " " + oneLine(b.Message, 300))
		}
	case events.RunFinished:
		p.clearStatus()
		p.endAnswer()
		if p.structured && b.OK && b.Structured != nil {
			fmt.Fprintf(p.out, "%s\n", events.EscapeLineSeparators(b.Structured))
		}
		p.status = nil // the summary is the last word
		p.summary(b)
	}
	// The answer is the point of text output: failing to write it fails the
	// run. The stderr lines are best effort.
	return p.out.err
}

// endAnswer ends the answer's line, if it is open: what follows (a turn's
// end, the summary) starts on a line of its own.
func (p *textPrinter) endAnswer() {
	if p.wroteAnswer && !p.answerEndsNL {
		if p.structured {
			fmt.Fprintln(p.info)
		} else {
			fmt.Fprintln(p.out)
		}
		p.answerEndsNL, p.midLine = true, false
	}
}

// say writes s on stderr on a line of its own (a message of the command
// around the run, such as hub chat's).
func (p *textPrinter) say(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line(s)
}

// turnLines tell how a session's turn ended: "── turn 2 · …" with its own
// tokens, cost, tool calls and time; interrupted, or failed with its
// error and what to do next.
func (p *textPrinter) turnLines(b events.TurnFinished) {
	stats := fmt.Sprintf("%s tokens · %s · %d tool calls · %s", thousands(b.Usage.Sum()), costWords(b.CostUSD, b.CostSource),
		b.ToolCalls, (time.Duration(b.DurationMS) * time.Millisecond).String())
	head := fmt.Sprintf("── turn %d", b.Turn)
	switch {
	case b.OK:
		p.line(p.pal.status.Sprint(head + " · " + stats))
		return
	case b.Interrupted:
		p.line(p.pal.warn.Sprint(head+" interrupted") + p.pal.status.Sprint(" · "+stats))
	default:
		p.line(p.pal.bad.Sprint(head+" failed: "+binReason(b.Error)) + p.pal.status.Sprint(" · "+stats))
	}
	if e := b.Error; e != nil && !b.Interrupted {
		p.line("   " + oneLine(e.Message, 2000))
		if e.Hint != "" {
			p.line("   " + p.pal.hint.Sprint("next:") + " " + oneLine(e.Hint, 2000))
		}
	}
}

// costWords is a cost for people: "$0.0123 reported", or "cost unknown".
func costWords(usd *float64, source events.CostSource) string {
	if usd == nil {
		return "cost unknown"
	}
	return fmt.Sprintf("$%.4f %s", *usd, source)
}

func (p *textPrinter) summary(b events.RunFinished) {
	turns := fmt.Sprintf("%d turns", b.Turns)
	if p.turns > 0 {
		// A session: its turns, and the model turns they took.
		turns = fmt.Sprintf("%d turns (%d model turns)", p.turns, b.Turns)
	}
	stats := fmt.Sprintf("%d tokens (%d in, %d out, %d cache read, %d cache write) · %s · %s · %d tool calls · %s",
		b.Usage.Sum(), b.Usage.Input, b.Usage.Output, b.Usage.CacheRead, b.Usage.CacheWrite,
		costWords(b.CostUSD, b.CostSource), turns, b.ToolCalls, (time.Duration(b.DurationMS) * time.Millisecond).String())
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
		p.line(p.pal.ok.Sprint("── ok") + " · " + stats)
		return
	}
	e := b.Error
	p.line(p.pal.bad.Sprint("── failed: "+binReason(e)) + " · " + stats)
	p.line("   " + oneLine(e.Message, 2000))
	if e.Hint != "" {
		p.line("   " + p.pal.hint.Sprint("next:") + " " + oneLine(e.Hint, 2000))
	}
	if b.SessionID != nil {
		p.line("   session: " + oneLine(*b.SessionID, 200))
	}
}

// palette is text output's colours, all off when colour is.
type palette struct {
	tool, file, notice, ok, bad, hint, status, warn *color.Color
}

func newPalette(on bool) palette {
	p := palette{
		tool:   color.New(color.FgCyan),
		file:   color.New(color.FgMagenta),
		notice: color.New(color.FgYellow),
		ok:     color.New(color.FgGreen, color.Bold),
		bad:    color.New(color.FgRed, color.Bold),
		hint:   color.New(color.FgCyan, color.Bold),
		status: color.New(color.Faint),
		warn:   color.New(color.FgYellow),
	}
	for _, c := range []*color.Color{p.tool, p.file, p.notice, p.ok, p.bad, p.hint, p.status, p.warn} {
		if on {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
	}
	return p
}

func (p palette) toolStatus(s events.ToolStatus) string {
	switch s {
	case events.ToolOK:
		return p.ok.Sprint(string(s))
	case events.ToolError:
		return p.bad.Sprint(string(s))
	default:
		return p.warn.Sprint(string(s))
	}
}

// oneLine is s on one line of at most n bytes (cut at a character, then
// "…"), with its runs of white space made one space and its control
// characters shown, not sent (harmless).
func oneLine(s string, n int) string {
	s = harmless(strings.Join(strings.Fields(s), " "))
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// harmless makes text from the model or the agent safe to write to a
// terminal: a control character other than newline and tab (ESC, which
// starts every terminal control sequence, BEL, backspace, a C1 control
// such as CSI U+009B) is written as its visible picture (ESC as "␛",
// U+241B; a C1 control, and a bidirectional override or isolate, as
// U+FFFD), and a carriage return, which would let a line overwrite the
// one before, is dropped. Text without such characters is returned as it
// is.
func harmless(s string) string {
	clean := true
	for _, r := range s {
		if isControl(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range s {
		switch {
		case !isControl(r):
			b.WriteRune(r)
		case r == '\r':
		case r < 0x20:
			b.WriteRune(0x2400 + r) // the control pictures: ␛ for ESC
		case r == 0x7f:
			b.WriteRune('\u2421') // ␡
		default:
			b.WriteRune('\uFFFD')
		}
	}
	return b.String()
}

// isControl reports a C0 control but newline and tab, DEL, a C1 control,
// or a bidirectional embedding, override or isolate (U+202A–U+202E,
// U+2066–U+2069), which reorder how the rest of the line is shown
// ("Trojan Source", CVE-2021-42574).
func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t') || (r >= 0x7f && r < 0xa0) ||
		(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

// binReason is "bin/reason", or "bin" when the bin has no reasons (internal).
func binReason(e *events.Error) string {
	if e.Reason == "" {
		return string(e.Bin)
	}
	return string(e.Bin) + "/" + string(e.Reason)
}
