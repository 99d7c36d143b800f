package main

import (
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hubcli/hub/events"
)

func TestHarmless(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text\n\twith tab", "plain text\n\twith tab"},
		{"\x1b[31mred\x1b[0m", "␛[31mred␛[0m"},
		{"title\x1b]0;pwned\x07", "title␛]0;pwned␇"},
		{"back\bspace", "back␈space"},
		{"over\rwrite", "overwrite"},
		{"crlf\r\n", "crlf\n"},
		{"csi \u009b2J", "csi \uFFFD2J"},
		{"del\x7f", "del␡"},
		{"if admin \u202e } \u2066x\u2069", "if admin \uFFFD } \uFFFDx\uFFFD"},
		{"ünïcödé ✓", "ünïcödé ✓"},
	}
	for _, tt := range tests {
		if got := harmless(tt.in); got != tt.want {
			t.Errorf("harmless(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"a  b\n c", 10, "a b c"},
		{"\x1b[2J clear", 20, "␛[2J clear"},
		{"abcdef", 3, "abc…"},
		{"ééé", 3, "é…"}, // never half a character
	}
	for _, tt := range tests {
		if got := oneLine(tt.in, tt.n); got != tt.want {
			t.Errorf("oneLine(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestStatusPieces(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{0, "0s"}, {1500 * time.Millisecond, "1s"}, {65 * time.Second, "1m05s"}, {2*time.Hour + 3*time.Minute, "2h03m"}, {-time.Second, "0s"}} {
		if got := clock(tt.d); got != tt.want {
			t.Errorf("clock(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
	for _, tt := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {1234567, "1,234,567"}} {
		if got := thousands(tt.n); got != tt.want {
			t.Errorf("thousands(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
	for _, tt := range []struct {
		s    string
		cols int
		want string
	}{{"abcdef", 0, "abcdef"}, {"abcdef", 4, "abc"}, {"abc", 4, "abc"}, {"日本語", 5, "日本"}, {"⠋ 1s", 10, "⠋ 1s"}} {
		if got := cutColumns(tt.s, tt.cols); got != tt.want {
			t.Errorf("cutColumns(%q, %d) = %q, want %q", tt.s, tt.cols, got, tt.want)
		}
	}
}

func ev(b events.Body) events.Event { return events.Event{Body: b} }

func usage(total int64, cost *float64) events.Event {
	return ev(events.Usage{Total: events.Tokens{Input: total, CostUSD: cost}, CostSource: events.CostReported})
}

func TestLiveStatusLine(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 1, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	cost := 0.0123
	s := newLiveStatus(t0)
	steps := []struct {
		ev   *events.Event
		at   int
		want string
	}{
		{nil, 0, "⠋ 0s · starting"},
		{&[]events.Event{ev(events.TextDelta{Text: "x"})}[0], 1, "⠋ 1s · 0 tokens · turn 1"},
		{&[]events.Event{ev(events.ToolStarted{CallID: "a", Name: "bash"})}[0], 2, "⠋ 5s · 0 tokens · turn 1 · bash 3s"},
		{&[]events.Event{ev(events.ToolStarted{CallID: "b", Name: "read\x1b[2J"})}[0], 6, "⠋ 7s · 0 tokens · turn 1 · read␛[2J 1s (+1 more)"},
		{&[]events.Event{ev(events.ToolFinished{CallID: "b"})}[0], 7, "⠋ 8s · 0 tokens · turn 1 · bash 6s"},
		{&[]events.Event{ev(events.ToolFinished{CallID: "a"})}[0], 8, "⠋ 8s · 0 tokens · turn 1"},
		{&[]events.Event{usage(1234, &cost)}[0], 9, "⠋ 9s · 1,234 tokens · $0.0123 · turn 1"},
		{&[]events.Event{ev(events.Reasoning{Text: "hm"})}[0], 10, "⠋ 10s · 1,234 tokens · $0.0123 · turn 2"},
		{&[]events.Event{usage(2000, nil)}[0], 11, "⠋ 11s · 2,000 tokens · cost unknown · turn 2"},
		// A tool that runs after its turn's usage (pi) is still turn 2's.
		{&[]events.Event{ev(events.ToolStarted{CallID: "c", Name: "bash"})}[0], 11, "⠋ 11s · 2,000 tokens · cost unknown · turn 2 · bash 0s"},
		// A turn with only a usage event is counted at its usage.
		{&[]events.Event{usage(2100, nil)}[0], 11, "⠋ 11s · 2,100 tokens · cost unknown · turn 3 · bash 0s"},
	}
	for i, st := range steps {
		if st.ev != nil {
			s.observe(*st.ev, at(st.at))
		}
		now := at(st.at)
		if i == 2 || i == 3 || i == 4 {
			now = now.Add([]time.Duration{3, 1, 1}[i-2] * time.Second)
		}
		if got := s.line(now, 0, 0); got != st.want {
			t.Errorf("step %d: line = %q, want %q", i, got, st.want)
		}
	}
	s = newLiveStatus(t0)
	s.observe(events.Event{Agent: "opencode", Body: events.RunStarted{}}, t0)
	s.observe(ev(events.Notice{Kind: events.NoticeStderr}), t0)
	if got, want := s.line(at(3), 0, 0), "⠋ 3s · starting opencode"; got != want {
		t.Errorf("before the agent's first event: line = %q, want %q", got, want)
	}
	s.observe(ev(events.SessionStarted{}), at(4))
	if got, want := s.line(at(4), 0, 0), "⠋ 4s · 0 tokens"; got != want {
		t.Errorf("after session.started: line = %q, want %q", got, want)
	}
	s = newLiveStatus(t0)
	s.observe(usage(2000, nil), at(11))
	if got := s.line(at(11), 1, 12); got != "⠙ 11s · 2,0" {
		t.Errorf("line cut to 12 columns, frame 1 = %q, want %q", got, "⠙ 11s · 2,0")
	}
}

var okFinish = ev(events.RunFinished{OK: true, Usage: events.Tokens{Input: 3, Output: 4}, Turns: 1, DurationMS: 1500})

// TestTextCleanLines: when stdout and stderr are one place (console.shared,
// a terminal or 2>&1), a notice, a tool line and the summary each start on
// a line of their own, the answer's text goes on after them, and the
// model's escape sequences arrive as text.
func TestTextCleanLines(t *testing.T) {
	var both syncBuffer
	p := newTextPrinter(&both, &both, false, console{shared: true, width: func() int { return 0 }})
	for _, e := range []events.Event{
		ev(events.TextDelta{Text: "Hello wor"}),
		ev(events.Notice{Kind: events.NoticeStderr, Message: "warming up"}),
		ev(events.TextDelta{Text: "ld.\x1b]0;owned\x07\n"}),
		ev(events.ToolStarted{Name: "bash", Input: json.RawMessage(`{"command":"ls"}`)}),
		ev(events.TextDelta{Text: "Done"}),
		okFinish,
	} {
		if err := p.print(e); err != nil {
			t.Fatal(err)
		}
	}
	p.close()
	want := "Hello wor\nhub: stderr: warming up\nld.␛]0;owned␇\n→ bash {\"command\":\"ls\"}\nDone\n" +
		"── ok · 7 tokens (3 in, 4 out, 0 cache read, 0 cache write) · cost unknown · 1 turns · 0 tool calls · 1.5s\n"
	if got := both.String(); got != want {
		t.Errorf("output:\n%q\nwant\n%q", got, want)
	}
}

// TestTextSeparateStreams: with the answer in a file (stdout not shared
// with stderr), the answer is exactly the model's text and a newline, and
// no line break is added to it for the stderr lines.
func TestTextSeparateStreams(t *testing.T) {
	var out, errb syncBuffer
	p := newTextPrinter(&out, &errb, false, console{width: func() int { return 0 }})
	for _, e := range []events.Event{
		ev(events.TextDelta{Text: "Hello wor"}),
		ev(events.Notice{Kind: events.NoticeStderr, Message: "warming up"}),
		ev(events.TextDelta{Text: "ld."}),
		okFinish,
	} {
		if err := p.print(e); err != nil {
			t.Fatal(err)
		}
	}
	p.close()
	if got, want := out.String(), "Hello world.\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got := errb.String(); !strings.HasPrefix(got, "hub: stderr: warming up\n── ok") || strings.Contains(got, "\x1b") {
		t.Errorf("stderr = %q, want the notice then the summary, no escape byte", got)
	}
}

// TestTextStatusLine: on a terminal the status line is drawn every
// statusEvery, never while a line of the answer is open on the same
// terminal, is cleared before any other line and at the end, and its
// goroutine is gone after close (synctest fails a bubble that leaves one).
func TestTextStatusLine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var both syncBuffer
		p := newTextPrinter(&both, &both, false, console{status: true, shared: true, width: func() int { return 80 }})
		defer p.close()
		time.Sleep(statusEvery)
		synctest.Wait()
		const clear = "\r\x1b[2K"
		if got, want := both.String(), clear+"⠙ 0s · starting"; got != want {
			t.Fatalf("after %s: %q, want %q", statusEvery, got, want)
		}
		_ = p.print(ev(events.ToolStarted{CallID: "a", Name: "bash", Input: json.RawMessage(`{}`)}))
		time.Sleep(4 * statusEvery) // 1.25s in all: the tool has run 1s
		synctest.Wait()
		s := both.String()
		if !strings.HasSuffix(s, clear+"⠴ 1s · 0 tokens · turn 1 · bash 1s") || !strings.Contains(s, clear+"→ bash {}\n") {
			t.Fatalf("with a tool running: %q", s)
		}
		// A line of the answer is open: no redraw until it ends.
		_ = p.print(ev(events.ToolFinished{CallID: "a", Name: "bash", Status: events.ToolOK}))
		_ = p.print(ev(events.TextDelta{Text: "partial"}))
		n := len(both.String())
		time.Sleep(4 * statusEvery)
		synctest.Wait()
		if got := both.String()[n:]; got != "" {
			t.Errorf("drawn while the answer's line was open: %q", got)
		}
		_ = p.print(ev(events.TextDelta{Text: " line\n"}))
		time.Sleep(statusEvery)
		synctest.Wait()
		if s := both.String(); !strings.HasSuffix(s, "partial line\n"+clear+"⠋ 2s · 0 tokens · turn 1") {
			t.Errorf("after the answer's line ended: %q", s)
		}
		_ = p.print(okFinish)
		p.close()
		s = both.String()
		if !strings.HasSuffix(s, clear+"── ok · 7 tokens (3 in, 4 out, 0 cache read, 0 cache write) · cost unknown · 1 turns · 0 tool calls · 1.5s\n") {
			t.Errorf("the end: %q", s)
		}
		n = len(s)
		time.Sleep(4 * statusEvery)
		if got := both.String()[n:]; got != "" {
			t.Errorf("drawn after the run: %q", got)
		}
	})
}

// TestTextColor: colour marks tool lines, notices and the summary; off,
// there is no escape byte.
func TestTextColor(t *testing.T) {
	for _, on := range []bool{true, false} {
		var out, errb syncBuffer
		p := newTextPrinter(&out, &errb, false, console{color: on, width: func() int { return 0 }})
		_ = p.print(ev(events.ToolStarted{Name: "bash", Input: json.RawMessage(`{}`)}))
		_ = p.print(ev(events.Notice{Kind: events.NoticeRetry, Message: "again"}))
		_ = p.print(ev(events.RunFinished{Error: events.NewError(events.BinUnavailable, events.ReasonRateLimit, "wait", "429")}))
		p.close()
		s := errb.String()
		for _, want := range []string{"→ bash", "hub: retry:", "── failed: unavailable/rate_limit"} {
			colored := strings.Contains(s, "m"+want+"\x1b[0")
			if colored != on {
				t.Errorf("color %v: %q coloured = %v in %q", on, want, colored, s)
			}
		}
		if !on && strings.Contains(s, "\x1b") {
			t.Errorf("color off: escape byte in %q", s)
		}
	}
}

// TestTextQuiet: while hub asks a question on the terminal (--confirm),
// the status line is cleared and not redrawn; it comes back after.
func TestTextQuiet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var both syncBuffer
		p := newTextPrinter(&both, &both, false, console{status: true, shared: true, width: func() int { return 80 }})
		defer p.close()
		time.Sleep(statusEvery)
		synctest.Wait()
		var during, before string
		err := p.quiet(func() error {
			before = both.String()
			n := len(before)
			time.Sleep(8 * statusEvery)
			synctest.Wait()
			during = both.String()[n:]
			return errors.New("refused")
		})
		if err == nil || err.Error() != "refused" {
			t.Errorf("quiet(f) = %v, want f's error", err)
		}
		if !strings.HasSuffix(before, "\r\x1b[2K⠙ 0s · starting\r\x1b[2K") || during != "" {
			t.Errorf("before asking: %q, while asking: %q; want the status line cleared, then nothing", before, during)
		}
		time.Sleep(statusEvery)
		synctest.Wait()
		if s := both.String(); !strings.HasSuffix(s, "\r\x1b[2K⠋ 2s · starting") {
			t.Errorf("after the question: %q, want the status line back", s)
		}
		var nilPrinter *textPrinter
		if err := nilPrinter.quiet(func() error { return nil }); err != nil {
			t.Errorf("nil printer: quiet = %v", err)
		}
		nilPrinter.close()
	})
}

// A background job (`hub run … > out &`) draws no status line, which
// would erase the shell's prompt; brought to the foreground, it draws.
func TestTextStatusBackground(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var both syncBuffer
		var fg atomic.Bool
		p := newTextPrinter(&both, &both, false, console{status: true, width: func() int { return 80 }, foreground: fg.Load})
		defer p.close()
		time.Sleep(4 * statusEvery)
		synctest.Wait()
		if s := both.String(); s != "" {
			t.Fatalf("in the background: %q, want nothing", s)
		}
		fg.Store(true)
		time.Sleep(statusEvery)
		synctest.Wait()
		if s := both.String(); !strings.HasPrefix(s, "\r\x1b[2K") || !strings.HasSuffix(s, " 1s · starting") {
			t.Fatalf("in the foreground: %q, want the status line", s)
		}
	})
}
