package adapters

import (
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
