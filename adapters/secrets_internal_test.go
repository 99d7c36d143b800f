package adapters

import (
	"strings"
	"testing"

	"github.com/hubcli/hub/events"
)

// TestSecretsDeltas: a credential streamed across text deltas, in any
// pieces, never shows in the deltas put together; text that only looked
// like the start of one is sent whole, before the next other event at the
// latest; nothing is lost or reordered.
func TestSecretsDeltas(t *testing.T) {
	t.Parallel()
	const key = "sk-live-0123456789"
	tests := []struct {
		deltas []string
		want   string // the deltas put together, then flushed
	}{
		{[]string{"key: " + key + "."}, "key: [REDACTED]."},
		{[]string{"key: sk-li", "ve-0123", "456789 ok"}, "key: [REDACTED] ok"},
		{[]string{"s", "k", "-", "live-0123456789"}, "[REDACTED]"},
		{[]string{"ends with sk-live-01"}, "ends with sk-live-01"}, // not a key after all
		{[]string{"sk-sk-live-0123456789"}, "sk-[REDACTED]"},
		{[]string{"two ", key, " and TOKENVALUE", "42 end"}, "two [REDACTED] and [REDACTED] end"},
		{[]string{"plain text ", "with no key"}, "plain text with no key"},
	}
	for _, tt := range tests {
		s := newSecrets([]string{"MY_API_KEY=" + key, "GH_TOKEN=TOKENVALUE42", "PATH=/bin", "SHORT_TOKEN=abc"})
		var b strings.Builder
		for _, d := range tt.deltas {
			out := s.delta(d)
			b.WriteString(out)
			if strings.Contains(b.String(), "sk-live-0123456789") || strings.Contains(b.String(), "TOKENVALUE42") {
				t.Fatalf("deltas %q: sent %q, which holds a key", tt.deltas, b.String())
			}
		}
		b.WriteString(s.flush())
		if got := b.String(); got != tt.want {
			t.Errorf("deltas %q put together = %q, want %q", tt.deltas, got, tt.want)
		}
		if held := s.flush(); held != "" {
			t.Errorf("deltas %q: flush after flush = %q, want \"\"", tt.deltas, held)
		}
	}
	// Without secrets, deltas pass through untouched.
	var none secrets
	if got := none.delta("sk-live-0123456789"); got != "sk-live-0123456789" || none.flush() != "" {
		t.Errorf("no secrets: delta = %q", got)
	}
}

// TestSecretsEveryField: every string field of every event type is
// redacted.
func TestSecretsEveryField(t *testing.T) {
	t.Parallel()
	const key = "sk-live-0123456789"
	s := newSecrets([]string{"MY_API_KEY=" + key})
	k, pk := "x"+key, ptr("x"+key)
	bodies := []events.Body{
		events.RunStarted{Argv: []string{k}, Cwd: k, AgentVersion: pk},
		events.SessionStarted{SessionID: k, Model: pk, Tools: []string{k}},
		events.TextDelta{Text: k}, events.Message{Text: k}, events.Reasoning{Text: k},
		events.ToolStarted{CallID: k, Name: k, Kind: events.ToolOther, Input: []byte(`{"a":"` + k + `"}`)},
		events.ToolFinished{CallID: k, Name: k, Kind: events.ToolOther, Status: events.ToolOK, Output: k},
		events.Usage{Model: pk, CostSource: events.CostUnknown},
		events.Notice{Kind: events.NoticeStderr, Message: k, Data: []byte(`{"a":"` + k + `"}`)},
		events.RunFinished{Text: k, SessionID: pk, Error: events.NewError(events.BinInternal, "", k, "%s", k), CostSource: events.CostUnknown},
	}
	for _, b := range bodies {
		ev := events.Event{RunID: "r", Agent: "a", Body: s.body(b)}
		enc, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(enc), key) || !strings.Contains(string(enc), "[REDACTED]") {
			t.Errorf("%s redacted = %s, want [REDACTED] for every key", b.Type(), enc)
		}
	}
}

func ptr(s string) *string { return &s }
