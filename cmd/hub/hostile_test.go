package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestHostileValues: values a broken or hostile agent can write — a line of
// six million '[' (gjson's validator recursed until the stack overflowed,
// killing hub with no run.finished), a cost of 1e400 (+Inf: the event could
// not be encoded and run.finished was lost, with exit 0 for claude), a
// negative cost, a tool input nested 20,000 deep and one with invalid UTF-8
// (the event failed to encode: internal, a seq gap) — still give a valid
// stream, one run.finished last, and the run's real outcome.
func TestHostileValues(t *testing.T) {
	step := `echo '{"type":"step_start","sessionID":"ses_h","part":{}}'`
	text := `echo '{"type":"text","sessionID":"ses_h","part":{"type":"text","text":"the answer"}}'`
	finish := func(cost string) string {
		return `echo '{"type":"step_finish","sessionID":"ses_h","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":` + cost + `}}'`
	}
	tool := func(input string) string {
		return `printf '%s\n' '{"type":"tool_use","sessionID":"ses_h","part":{"type":"tool","tool":"bash","callID":"c1","state":{"status":"completed","input":` + input + `,"output":"x"}}}'`
	}
	deep := `{"command":'"$(head -c 20000 /dev/zero | tr '\\0' '[')$(head -c 20000 /dev/zero | tr '\\0' ']')"'}`
	tests := []struct {
		name, body string
		wantCost   bool // run.finished cost_usd not null
	}{
		{"deep line", `head -c 6000000 /dev/zero | tr '\0' '['; echo` + "\n" + step + "\n" + text + "\n" + finish("0.001"), true},
		{"infinite cost", step + "\n" + text + "\n" + finish("1e400"), false},
		{"negative cost", step + "\n" + text + "\n" + finish("-100"), false},
		{"deep tool input", step + "\n" + tool(deep) + "\n" + text + "\n" + finish("0.001"), true},
		{"invalid UTF-8 tool input", step + "\n" + tool(`{"command":"a\377b"}`) + "\n" + text + "\n" + finish("0.001"), true},
	}
	for _, tt := range tests {
		bin := fakeAgent(t, tt.body)
		code, stdout, stderr := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "x")
		if err := hubtest.ValidateStream([]byte(stdout)); err != nil {
			t.Errorf("%s: stream invalid: %v\n%.2000s", tt.name, err, stdout)
		}
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		var fin struct {
			Type string   `json:"type"`
			OK   bool     `json:"ok"`
			Text string   `json:"text"`
			Cost *float64 `json:"cost_usd"`
		}
		_ = json.Unmarshal([]byte(lines[len(lines)-1]), &fin)
		if code != 0 || fin.Type != "run.finished" || !fin.OK || fin.Text != "the answer" || (fin.Cost != nil) != tt.wantCost {
			t.Errorf("%s: exit %d, last event %+v, stderr %q; want 0 and an ok run.finished with the answer, cost known %v", tt.name, code, fin, stderr, tt.wantCost)
		}
	}
}

// TestNoticeFlood: 1,000 lines of noise give 100 non_json_output notices and
// one more that counts the 900 not sent, not 1,000 notices.
func TestNoticeFlood(t *testing.T) {
	bin := fakeAgent(t, `i=0; while [ $i -lt 1000 ]; do echo "progress: $i"; i=$((i+1)); done
echo '{"type":"step_start","sessionID":"ses_h","part":{}}'
echo '{"type":"text","sessionID":"ses_h","part":{"type":"text","text":"the answer"}}'
echo '{"type":"step_finish","sessionID":"ses_h","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}'`)
	code, stdout, _ := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "x")
	if err := hubtest.ValidateStream([]byte(stdout)); err != nil {
		t.Fatalf("stream invalid: %v", err)
	}
	var n int
	var summary string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var ev struct {
			Type, Kind string
			Data       struct {
				NotSent int `json:"not_sent"`
			}
		}
		_ = json.Unmarshal([]byte(line), &ev)
		if ev.Type == "notice" && ev.Kind == "non_json_output" {
			if ev.Data.NotSent > 0 {
				summary = line
				if ev.Data.NotSent != 900 {
					t.Errorf("summary notice counts %d, want 900", ev.Data.NotSent)
				}
			} else {
				n++
			}
		}
	}
	if code != 0 || n != 100 || summary == "" {
		t.Errorf("exit %d, %d non_json_output notices, summary %q; want 0, 100 and a summary", code, n, summary)
	}
}
