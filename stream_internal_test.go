package hub

import (
	"slices"
	"testing"
	"time"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/framer"
	"github.com/hubcli/hub/normalize"
)

// stubDecoder decodes every line into a message holding it.
type stubDecoder struct{}

func (stubDecoder) Decode(dst []events.Body, line []byte) []events.Body {
	return append(dst, events.Message{Text: string(line)})
}
func (stubDecoder) Status() normalize.Status                { return normalize.Status{} }
func (stubDecoder) Outcome(normalize.End) normalize.Outcome { return normalize.Outcome{} }

// TestStreamPublish: events that do not come from JSON lines (a transport
// with its own framing) go through the same steps as decoded ones:
// sequenced from the run's first event, redacted, metered, and stopped by
// a guard at the event that trips it, after which nothing is forwarded.
func TestStreamPublish(t *testing.T) {
	t.Parallel()
	var got []events.Event
	s := newStream("acp", options{runID: "r", clock: func() time.Time { return time.Unix(0, 0) }}, func(ev events.Event) error {
		got = append(got, ev)
		return nil
	})
	stopAt := events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted, "grant it", "a write outside the grant")
	guard := GuardFunc(func(b events.Body) *events.Error {
		if ts, ok := b.(events.ToolStarted); ok && ts.Kind == events.ToolWrite {
			return stopAt
		}
		return nil
	})
	s.attempt(stubDecoder{}, 0, []string{"OPENAI_API_KEY=sk-secret-value-1234"}, []Guard{guard})
	s.emit(events.RunStarted{Argv: []string{}})
	s.line(framer.Line{Bytes: []byte(`{"type":"first"}`)})
	s.publish([]events.Body{
		events.Message{Text: "key sk-secret-value-1234"},
		events.ToolStarted{CallID: "1", Name: "read", Kind: events.ToolRead, Input: []byte(`{}`)},
		events.ToolStarted{CallID: "2", Name: "write", Kind: events.ToolWrite, Input: []byte(`{}`)},
		events.Message{Text: "after the guard"},
	})
	s.line(framer.Line{Bytes: []byte(`{"type":"x"}`)}) // a line after the stop: not published either
	if len(got) != 5 {
		t.Fatalf("sent %d events, want run.started, the decoded line, the message and two tool calls: %v", len(got), got)
	}
	for i, ev := range got {
		if ev.Seq != int64(i) {
			t.Errorf("event %d has seq %d", i, ev.Seq)
		}
	}
	if m := got[1].Body.(events.Message); m.Text != `{"type":"first"}` {
		t.Errorf("decoded line = %q", m.Text)
	}
	if m := got[2].Body.(events.Message); m.Text != "key [REDACTED]" {
		t.Errorf("message = %q, want the key redacted", m.Text)
	}
	if s.over != stopAt || !s.halted() {
		t.Errorf("over = %v, want the guard's error", s.over)
	}
	if _, _, _, tools := s.meter.Totals(); tools != 2 {
		t.Errorf("meter counted %d tool calls, want 2", tools)
	}
}

// TestStreamUncleanLines: a line that is not JSON as it is, taken apart
// where a terminal writes over it (issue 14, item 7). Every record in it is
// decoded, in order — records separated by a bare "\r" lost all but the last
// before — and what is not a record is dropped when a later piece wrote
// over it (a spinner), reported when it is what a terminal shows, as
// before. Lines that need no taking apart are as they were.
func TestStreamUncleanLines(t *testing.T) {
	t.Parallel()
	const notice = "notice:"
	tests := []struct {
		name, line string
		want       []string // decoded lines, or notice: and the kind
	}{
		{"clean", `{"a":1}`, []string{`{"a":1}`}},
		{"CR between records", "{\"a\":1}\r{\"b\":2}\r{\"c\":3}", []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}},
		{"CR after each record", "{\"a\":1}\r{\"b\":2}\r", []string{`{"a":1}`, `{"b":2}`}},
		{"spinner before the record", "\r⠋ working\r{\"type\":\"x\"}", []string{`{"type":"x"}`}},
		{"spinner between records", "{\"a\":1}\r⠋ working\r{\"b\":2}", []string{`{"a":1}`, `{"b":2}`}},
		{"erase between records", "{\"a\":1}\x1b[2K⠙\x1b[1G{\"b\":2}", []string{`{"a":1}`, `{"b":2}`}},
		{"erased record", "{\"a\":1}\x1b[2K", []string{`{"a":1}`}},
		{"progress: the last frame shown", "10%\r20%\r30% done", []string{notice + "non_json_output"}},
		{"a record cut by a spinner", "{\"a\":\r⠋\r{\"b\":2}", []string{notice + "parse_error", `{"b":2}`}},
		{"a record then text shown", "{\"a\":1}\rdone.", []string{`{"a":1}`, notice + "non_json_output"}},
		{"spinner alone, erased", "⠋ working\x1b[2K", nil},
		{"ANSI around a record", "\x1b[32m{\"a\":1}\x1b[0m", []string{`{"a":1}`}},
		{"JSON, not an object, shown", "[1,2]", []string{"[1,2]"}},
		{"banner", "starting up…", []string{notice + "non_json_output"}},
	}
	for _, tt := range tests {
		var got []string
		s := newStream("x", options{runID: "r", clock: func() time.Time { return time.Unix(0, 0) }}, func(ev events.Event) error {
			switch b := ev.Body.(type) {
			case events.Message:
				got = append(got, b.Text)
			case events.Notice:
				got = append(got, notice+string(b.Kind))
			}
			return nil
		})
		s.attempt(stubDecoder{}, 0, nil, nil)
		s.line(framer.Line{Bytes: []byte(tt.line), Size: int64(len(tt.line))})
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: line(%q) gave %q, want %q", tt.name, tt.line, got, tt.want)
		}
	}
}

// TestStreamUncleanLineGuard: a guard that stops the run at one record of
// a line stops the line there: the records after it are not forwarded.
func TestStreamUncleanLineGuard(t *testing.T) {
	t.Parallel()
	var got []string
	s := newStream("x", options{runID: "r", clock: func() time.Time { return time.Unix(0, 0) }}, func(ev events.Event) error {
		if m, ok := ev.Body.(events.Message); ok {
			got = append(got, m.Text)
		}
		return nil
	})
	stop := events.NewError(events.BinBudgetExceeded, events.ReasonTurns, "raise it", "over")
	s.attempt(stubDecoder{}, 0, nil, []Guard{GuardFunc(func(b events.Body) *events.Error {
		if m, ok := b.(events.Message); ok && m.Text == `{"b":2}` {
			return stop
		}
		return nil
	})})
	s.line(framer.Line{Bytes: []byte("{\"a\":1}\r{\"b\":2}\r{\"c\":3}\rnot json")})
	if want := []string{`{"a":1}`, `{"b":2}`}; !slices.Equal(got, want) || s.over != stop {
		t.Errorf("forwarded %q (stopped by %v), want %q and the guard's stop", got, s.over, want)
	}
}
