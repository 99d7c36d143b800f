package hub

import (
	"strings"
	"testing"

	"github.com/hubcli/hub/events"
)

// TestDamagedLine: a line that is not JSON is other output; one that starts
// with '{' is a parse_error naming the damage, and an event written into its
// middle (a second writer on stdout) is recovered — but never a member of
// the damaged event itself.
func TestDamagedLine(t *testing.T) {
	t.Parallel()
	const inner = `{"type":"result","result":"hi"}`
	tests := []struct {
		line    string
		kind    events.NoticeKind
		message string // a part of the notice's message
		event   string // the recovered event, "" if none
	}{
		{"Starting up…", events.NoticeNonJSONOutput, "Starting up", ""},
		{`ing the answer."}}`, events.NoticeNonJSONOutput, "answer", ""},
		{`{"type":"text","part":{"te`, events.NoticeParseError, "cut short after 26 bytes", ""},
		{`{"type":"text","text":"hel` + inner, events.NoticeParseError, "written into it at byte 26", inner},
		{`{"type":"text","x":1,` + inner, events.NoticeParseError, "invalid JSON", ""},       // a member, after ','
		{`{"type":"a","part":{"type":"b"}`, events.NoticeParseError, "cut short", ""},        // a member, after ':'
		{`{"type":"a","list":[{"type":"b"}`, events.NoticeParseError, "cut short", ""},       // an element, after '['
		{`{"type":"a"}}`, events.NoticeParseError, "invalid JSON at byte 12", ""},            // one brace too many
		{`{"type":"a", "v": tru` + inner, events.NoticeParseError, "written into it", inner}, // a literal cut by the splice
	}
	for _, tt := range tests {
		n, event := damagedLine([]byte(tt.line))
		if n.Kind != tt.kind || !strings.Contains(n.Message, tt.message) || string(event) != tt.event {
			t.Errorf("damagedLine(%q) = %s %q, event %q; want %s containing %q, event %q",
				tt.line, n.Kind, n.Message, event, tt.kind, tt.message, tt.event)
		}
	}
}
