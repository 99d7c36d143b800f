package redact

import (
	"encoding/json"
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
		s := New([]string{"MY_API_KEY=" + key, "GH_TOKEN=TOKENVALUE42", "PATH=/bin", "SHORT_TOKEN=abc"})
		var b strings.Builder
		for _, d := range tt.deltas {
			out := s.Delta(d)
			b.WriteString(out)
			if strings.Contains(b.String(), "sk-live-0123456789") || strings.Contains(b.String(), "TOKENVALUE42") {
				t.Fatalf("deltas %q: sent %q, which holds a key", tt.deltas, b.String())
			}
		}
		b.WriteString(s.Flush())
		if got := b.String(); got != tt.want {
			t.Errorf("deltas %q put together = %q, want %q", tt.deltas, got, tt.want)
		}
		if held := s.Flush(); held != "" {
			t.Errorf("deltas %q: flush after flush = %q, want \"\"", tt.deltas, held)
		}
	}
	// Without secrets, deltas pass through untouched.
	var none Redactor
	if got := none.Delta("sk-live-0123456789"); got != "sk-live-0123456789" || none.Flush() != "" {
		t.Errorf("no secrets: delta = %q", got)
	}
}

// TestSecretsEveryField: every string field of every event type is
// redacted.
func TestSecretsEveryField(t *testing.T) {
	t.Parallel()
	const key = "sk-live-0123456789"
	s := New([]string{"MY_API_KEY=" + key})
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
		ev := events.Event{RunID: "r", Agent: "a", Body: s.Body(b)}
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

// TestSecretsFragments: a credential cut short before it is redacted (a
// decoder shortened an error message or a notice's head) is still
// redacted: a run matching the start of a value (12 bytes at least, or all
// of a shorter value) extended as far as it matches, and a run matching
// its end (12 bytes at least) extended backwards; in plain strings and in
// raw JSON, which stays valid.
func TestSecretsFragments(t *testing.T) {
	t.Parallel()
	key := "sk-ant-api03-" + strings.Repeat("AbCdEfGhIj0123456789", 4) + "kLmNoPqRsTuVwXyZ-_0123456789abcdefAA" // 129 bytes
	s := New([]string{"ANTHROPIC_API_KEY=" + key, "GH_TOKEN=TOKENVALUE42", `DB_PASSWORD=p4ss\wo"rd-0123456789`})
	tests := []struct{ in, want string }{
		{"pi: 401 invalid x-api-key " + key[:80] + "…", "pi: 401 invalid x-api-key [REDACTED]…"},   // cut: its start
		{"near \"" + key[len(key)-50:] + "\" end", "near \"[REDACTED]\" end"},                      // cut: its end
		{"a " + key[:12] + " b", "a [REDACTED] b"},                                                 // 12 bytes of its start
		{"a " + key[len(key)-12:] + " b", "a [REDACTED] b"},                                        // 12 bytes of its end
		{"a " + key[:11] + " b " + key[len(key)-11:], "a " + key[:11] + " b " + key[len(key)-11:]}, // too short to tell
		{key[:40] + key, "[REDACTED]"},                                                             // a cut one, then a whole one: one span
		{"x" + key + "y" + key[:20], "x[REDACTED]y[REDACTED]"},                                     // whole and cut
		{"TOKENVALUE4 TOKENVALUE42", "TOKENVALUE4 [REDACTED]"},                                     // a short value: whole only
		{"no key here", "no key here"},
	}
	for _, tt := range tests {
		if got := s.String(tt.in); got != tt.want {
			t.Errorf("str(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{`{"bytes":900,"head":"{\"error\":\"` + key[:100] + `…"}`, `{"bytes":900,"head":"{\"error\":\"[REDACTED]…"}`},
		{`{"command":"curl -H 'x-api-key: ` + key[:30] + `"}`, `{"command":"curl -H 'x-api-key: [REDACTED]"}`},
		// The value escaped in JSON, whole and cut.
		{`{"a":"p4ss\\wo\"rd-0123456789"}`, `{"a":"[REDACTED]"}`},
		{`{"a":"x p4ss\\wo\"rd-012"}`, `{"a":"x [REDACTED]"}`},
	} {
		got := s.Raw(json.RawMessage(tt.in))
		if string(got) != tt.want || !json.Valid(got) {
			t.Errorf("raw(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
	// A cut that ends inside an escape: the decoded strings are redacted.
	in := `{"a":"p4ss\\wo\"rd-0123456789","n":1.50}`
	s2 := New([]string{`DB_PASSWORD=X_p4ss\wo"rd-0123456789`})
	if got := s2.Raw(json.RawMessage(in)); strings.Contains(string(got), "rd-0123456789") || !json.Valid(got) {
		t.Errorf("raw(%s) = %s, want the end of the value redacted, valid JSON", in, got)
	}
	// Deltas: a start of a key cut off by the next other event is redacted
	// when it is flushed.
	d := New([]string{"ANTHROPIC_API_KEY=" + key})
	if got := d.Delta("key: "+key[:30]) + d.Flush(); got != "key: [REDACTED]" {
		t.Errorf("delta then flush of a cut key = %q, want %q", got, "key: [REDACTED]")
	}
}
