package normalize_test

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/normalize"
)

// TestSalvage: a JSON object cut anywhere becomes the valid object of its
// complete members, with a cut string value closed on a character boundary.
func TestSalvage(t *testing.T) {
	t.Parallel()
	tests := []struct{ head, want string }{
		{`{"type":"result","result":"Hello wor`, `{"type":"result","result":"Hello wor"}`},
		{`{"type":"result","res`, `{"type":"result"}`},
		{`{"type":"result","result":`, `{"type":"result"}`},
		{`{"type":"result","n":12`, `{"type":"result"}`},
		{`{"type":"result","n":12,`, `{"type":"result","n":12}`},
		{`{"a":{"b":[1,2,{"c":"d`, `{"a":{"b":[1,2,{"c":"d"}]}}`},
		{`{"a":["x","y`, `{"a":["x","y"]}`},
		{`{"a":{"b":1}`, `{"a":{"b":1}}`},
		{`{"a":"esc \"q\" and \n and \u00e9 and \u00`, `{"a":"esc \"q\" and \n and \u00e9 and "}`},
		{`{"a":"cut after backslash \`, `{"a":"cut after backslash "}`},
		{`{"a":"` + "日本" + "\xe8\xaa", `{"a":"` + "日本" + `"}`},
		{`{"a":"` + "🎉"[:3], `{"a":""}`},
		{`{"a":1}garbage`, `{"a":1}`},
		{`  {"a":"`, `  {"a":""}`},
		{`{`, `{}`},
		{`{"k": {"inner key`, `{"k": {}}`},
		{`[1,2`, ``},
		{`not json`, ``},
		{`{"a":1,}`, ``},
		{`{"a":tru`, `{}`},
		{`{"a":"x"}}`, `{"a":"x"}`},
	}
	for _, tt := range tests {
		got := string(normalize.Salvage([]byte(tt.head)))
		if got != tt.want {
			t.Errorf("Salvage(%q) = %q, want %q", tt.head, got, tt.want)
		}
		if got != "" && !gjson.Valid(got) {
			t.Errorf("Salvage(%q) = %q: not valid JSON", tt.head, got)
		}
	}
}

// TestSalvageEveryCut: every prefix of a real event salvages to valid JSON
// or nil, and never panics.
func TestSalvageEveryCut(t *testing.T) {
	t.Parallel()
	line := `{"duration_api_ms":26,"session_id":"5bd3","total_cost_usd":0.00424,"usage":{"input_tokens":800,"x":[1,"a\"b",{"c":null}]},"is_error":false,"subtype":"success","result":"héllo \u2028 🎉 \\ end","type":"result"}`
	for n := range len(line) + 1 {
		got := normalize.Salvage([]byte(line[:n]))
		if got != nil && !gjson.ValidBytes(got) {
			t.Fatalf("Salvage(%q) = %q: not valid JSON", line[:n], got)
		}
		if n > 1 && got == nil {
			t.Fatalf("Salvage(%q) = nil, want an object", line[:n])
		}
		if strings.HasPrefix(line[:n], `{"duration_api_ms":26,`) && !gjson.GetBytes(got, "duration_api_ms").Exists() {
			t.Fatalf("Salvage(%q) = %q lost a complete member", line[:n], got)
		}
	}
}
