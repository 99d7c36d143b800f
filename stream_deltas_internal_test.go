package hub

import (
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest/leakcheck"
)

// TestStreamDeltasAcrossNotices: a key streamed in pieces with notices and
// usage between them (they do not end the text) is held back whole; an
// event that ends the text sends what was held first.
func TestStreamDeltasAcrossNotices(t *testing.T) {
	t.Parallel()
	const key = "hubcanary-3f9d2c71b5e8a604"
	var got []events.Event
	s := newStream("claude", options{runID: "r", clock: func() time.Time { return time.Time{} }}, func(ev events.Event) error {
		got = append(got, ev)
		return nil
	})
	s.attempt(stubDecoder{}, 0, []string{"OPENAI_API_KEY=" + key}, nil)
	for i, p := range []string{"the key is ", "hub", "can", "ary", "-3f9", "d2c7", "1b5e", "8a60", "4 ok"} {
		s.emit(events.TextDelta{Text: p})
		if i%2 == 0 {
			s.emit(events.Notice{Kind: events.NoticeUnknownEvent, Message: "x"})
		}
	}
	s.emit(events.Message{Text: "the key is " + key + " ok"})
	var deltas strings.Builder
	for _, ev := range got {
		if d, ok := ev.Body.(events.TextDelta); ok {
			deltas.WriteString(d.Text)
		}
		b, _ := ev.MarshalJSON()
		if _, ok := leakcheck.Leak(string(b), key, 12); ok {
			t.Errorf("event %s holds the key", b)
		}
	}
	if deltas.String() != "the key is [REDACTED] ok" {
		t.Errorf("deltas put together = %q, want %q", deltas.String(), "the key is [REDACTED] ok")
	}
	if last := got[len(got)-1].Body; last.Type() != events.TypeMessage {
		t.Errorf("last event %s, want the message after every delta", last.Type())
	}
}
