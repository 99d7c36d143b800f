package claude_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/normalize"
	"github.com/hubcli/hub/normalize/claude"
)

func decode(failFast bool, lines ...string) (*claude.Decoder, []events.Body) {
	d := claude.New("", failFast)
	var out []events.Body
	for _, l := range lines {
		out = d.Decode(out, []byte(l))
	}
	return d, out
}

func exit(code int) normalize.End { return normalize.End{ExitCode: &code} }

// TestOutcome has one row per rule: Claude's structured fields first, text
// last, never the exit status alone.
func TestOutcome(t *testing.T) {
	t.Parallel()
	synthetic := func(code string, status int) string {
		return `{"type":"assistant","message":{"id":"m","model":"<synthetic>","content":[{"type":"text","text":"API Error"}]},"error":"` + code + `","api_error_status":` + itoa(status) + `,"session_id":"s"}`
	}
	result := func(fields string) string {
		return `{"type":"result","subtype":"success","session_id":"s","num_turns":1,"total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}` + fields + `}`
	}
	tests := []struct {
		name   string
		lines  []string
		end    normalize.End
		bin    events.Bin
		reason events.Reason
	}{
		{"success", []string{result(`,"is_error":false,"result":"hi"`)}, exit(0), "", ""},
		{"success exit 1 still ok", []string{result(`,"is_error":false,"result":"hi"`)}, exit(1), "", ""},
		{"auth code", []string{synthetic("authentication_failed", 401), result(`,"is_error":true,"result":"Invalid API key"`)}, exit(1), events.BinUnavailable, events.ReasonAuth},
		{"billing", []string{synthetic("billing_error", 400), result(`,"is_error":true,"result":"Credit balance is too low"`)}, exit(1), events.BinUnavailable, events.ReasonQuota},
		{"rate limit", []string{synthetic("rate_limit", 429), result(`,"is_error":true,"api_error_status":429,"result":"API Error: 429"`)}, exit(1), events.BinUnavailable, events.ReasonRateLimit},
		{"server", []string{synthetic("server_error", 500), result(`,"is_error":true,"result":"API Error: 500"`)}, exit(1), events.BinUnavailable, events.ReasonServer},
		{"overloaded", []string{result(`,"is_error":true,"api_error_status":529,"result":"API Error: 529 Overloaded"`)}, exit(1), events.BinUnavailable, events.ReasonOverloaded},
		// statuses as normalize.StatusReason maps them
		{"503 overloaded", []string{result(`,"is_error":true,"api_error_status":503,"result":"API Error: 503 Service Unavailable"`)}, exit(1), events.BinUnavailable, events.ReasonOverloaded},
		{"402 quota", []string{result(`,"is_error":true,"api_error_status":402,"result":"API Error: 402 Payment Required"`)}, exit(1), events.BinUnavailable, events.ReasonQuota},
		{"422 bad request", []string{result(`,"is_error":true,"api_error_status":422,"result":"API Error: 422 Unprocessable Entity"`)}, exit(1), events.BinInvalidInput, events.ReasonBadRequest},
		{"overflow", []string{result(`,"is_error":true,"terminal_reason":"prompt_too_long","result":"Prompt is too long"`)}, exit(1), events.BinInvalidInput, events.ReasonContextOverflow},
		{"invalid request", []string{synthetic("invalid_request", 400), result(`,"is_error":true,"result":"API Error: 400 bad"`)}, exit(1), events.BinInvalidInput, events.ReasonBadRequest},
		{"not logged in", []string{result(`,"is_error":true,"result":"Not logged in · Please run /login"`)}, exit(1), events.BinUnavailable, events.ReasonAuth},
		{"connection", []string{result(`,"is_error":true,"result":"API Error: Connection error."`)}, exit(1), events.BinUnavailable, events.ReasonNetwork},
		{"max turns", []string{`{"type":"result","subtype":"error_max_turns","is_error":true,"num_turns":3,"session_id":"s"}`}, exit(1), events.BinBudgetExceeded, events.ReasonTurns},
		{"max budget", []string{`{"type":"result","subtype":"error_max_budget_usd","is_error":true,"total_cost_usd":0.5,"session_id":"s"}`}, exit(1), events.BinBudgetExceeded, events.ReasonCost},
		{"bad session", []string{`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["No conversation found with session ID: 0000"],"session_id":"s"}`}, exit(1), events.BinInvalidInput, events.ReasonBadSession},
		{"no result exit 0", nil, exit(0), events.BinProtocol, events.ReasonNoResult},
		{"no result exit 1", nil, exit(1), events.BinAgentFailed, events.ReasonExitStatus},
		{"no result, stderr not logged in", nil, normalize.End{ExitCode: new(1), Stderr: "Not logged in · Please run /login"}, events.BinUnavailable, events.ReasonAuth},
		{"no result, stderr network", nil, normalize.End{ExitCode: new(1), Stderr: "TypeError: fetch failed\n    cause: Error: connect ECONNREFUSED 127.0.0.1:9"}, events.BinUnavailable, events.ReasonNetwork},
		{"killed", nil, normalize.End{Signal: "SIGTERM"}, events.BinAgentFailed, events.ReasonCrashed},
		// --json-schema, as Claude Code 2.1.328 fails it
		{"structured output retries", []string{`{"type":"result","subtype":"error_max_structured_output_retries","is_error":true,"num_turns":6,"terminal_reason":"structured_output_retry_exhausted","errors":["Failed to provide valid structured output after 5 attempts — last StructuredOutput error: Output does not match required schema: /score: must be integer"],"session_id":"s"}`}, exit(1), events.BinAgentFailed, events.ReasonInvalidOutput},
		{"schema refused", nil, normalize.End{ExitCode: new(1), Stderr: "Error: --json-schema is not a valid JSON Schema: strict mode: unknown keyword: \"foo\""}, events.BinInvalidInput, events.ReasonBadRequest},
		{"schema not JSON", nil, normalize.End{ExitCode: new(1), Stderr: "Error: --json-schema is not valid JSON: JSON Parse error: Unexpected identifier \"not\""}, events.BinInvalidInput, events.ReasonBadRequest},
	}
	for _, tt := range tests {
		d, _ := decode(true, tt.lines...)
		o := d.Outcome(tt.end)
		switch {
		case tt.bin == "" && (!o.OK || o.Error != nil):
			t.Errorf("%s: Outcome = %v, want ok", tt.name, o.Error)
		case tt.bin != "" && (o.OK || o.Error == nil || o.Error.Bin != tt.bin || o.Error.Reason != tt.reason):
			t.Errorf("%s: Outcome = ok %v %v, want %s/%s", tt.name, o.OK, o.Error, tt.bin, tt.reason)
		case tt.bin != "" && o.Error.Hint == "":
			t.Errorf("%s: no hint", tt.name)
		}
	}
}

// TestStructuredOutput: with --json-schema the answer is
// result.structured_output, as Claude Code gave it; a success without it
// has no answer (Claude Code 2.1.328 ends a turn where the model never
// called StructuredOutput as a success), and the message of exhausted
// retries names the last problem.
func TestStructuredOutput(t *testing.T) {
	t.Parallel()
	d, _ := decode(true, `{"type":"result","subtype":"success","is_error":false,"result":"{\"score\":3}","structured_output":{"score": 3},"session_id":"s","num_turns":2}`)
	if o := d.Outcome(exit(0)); !o.OK || string(o.Answer) != `{"score": 3}` {
		t.Errorf("Outcome = ok %v answer %s, want ok and the structured_output as given", o.OK, o.Answer)
	}
	for _, line := range []string{
		`{"type":"result","subtype":"success","is_error":false,"result":"Hello","session_id":"s","num_turns":2}`,
		`{"type":"result","subtype":"success","is_error":false,"result":"Hello","structured_output":null,"session_id":"s","num_turns":2}`,
	} {
		d, _ := decode(true, line)
		if o := d.Outcome(exit(0)); !o.OK || o.Answer != nil {
			t.Errorf("Outcome of %s = ok %v answer %s, want ok and no answer", line, o.OK, o.Answer)
		}
	}
	d, _ = decode(true, `{"type":"result","subtype":"error_max_structured_output_retries","is_error":true,"errors":["Failed to provide valid structured output after 2 attempts — last StructuredOutput error: Output does not match required schema: /score: must be <= 10"],"session_id":"s"}`)
	if o := d.Outcome(exit(1)); o.Error == nil || !strings.Contains(o.Error.Message, "/score: must be <= 10") {
		t.Errorf("Outcome = %v, want the last StructuredOutput error in the message", o.Error)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}

// TestFailFast: an api_retry for 401 aborts unless fail-fast is off; a 429
// retry never does.
func TestFailFast(t *testing.T) {
	t.Parallel()
	retry := func(status int, code string) string {
		return `{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":500,"error_status":` + itoa(status) + `,"error":"` + code + `","session_id":"s"}`
	}
	d, out := decode(true, retry(401, "authentication_failed"))
	if st := d.Status(); st.Abort == nil || st.Abort.Reason != events.ReasonAuth {
		t.Errorf("Status() after a 401 retry = %+v, want an auth abort", st)
	}
	if n, ok := out[0].(events.Notice); !ok || n.Kind != events.NoticeRetry {
		t.Errorf("first event = %#v, want a retry notice", out[0])
	}
	if d, _ := decode(false, retry(401, "authentication_failed")); d.Status().Abort != nil {
		t.Errorf("Status() with fail-fast off = abort, want none")
	}
	if d, _ := decode(true, retry(429, "rate_limit")); d.Status().Abort != nil {
		t.Errorf("Status() after a 429 retry = abort, want none")
	}
}

// TestUsageCountedOnce: partial messages give input at message_start and
// output at message_delta; the assistant lines repeating the message id add
// nothing.
func TestUsageCountedOnce(t *testing.T) {
	t.Parallel()
	lines := []string{
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":10,"cache_read_input_tokens":5,"cache_creation_input_tokens":2,"output_tokens":1}}}}`,
		`{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"he"}}}`,
		`{"type":"assistant","message":{"id":"msg_1","model":"m","content":[{"type":"text","text":"hello"}],"usage":{"input_tokens":10,"output_tokens":1}}}`,
		`{"type":"assistant","message":{"id":"msg_1","model":"m","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}],"usage":{"input_tokens":10,"output_tokens":1}}}`,
		`{"type":"stream_event","event":{"type":"message_delta","usage":{"output_tokens":42}}}`,
		`{"type":"stream_event","event":{"type":"message_delta","usage":{"output_tokens":42}}}`,
	}
	_, out := decode(true, lines...)
	var usages []events.Usage
	for _, b := range out {
		if u, ok := b.(events.Usage); ok {
			usages = append(usages, u)
		}
	}
	if len(usages) != 1 {
		t.Fatalf("usage events = %d, want 1", len(usages))
	}
	want := events.Tokens{Input: 10, Output: 42, CacheRead: 5, CacheWrite: 2}
	if got := usages[0].Step; got.Input != want.Input || got.Output != want.Output || got.CacheRead != want.CacheRead || got.CacheWrite != want.CacheWrite || got.CostUSD != nil {
		t.Errorf("usage step = %+v, want %+v with unknown cost", got, want)
	}
}

func TestToolKind(t *testing.T) {
	t.Parallel()
	want := map[string]events.ToolKind{"Bash": events.ToolShell, "Read": events.ToolRead, "Write": events.ToolWrite,
		"Edit": events.ToolEdit, "Grep": events.ToolSearch, "WebFetch": events.ToolWeb, "Task": events.ToolTask,
		"mcp__github__create_issue": events.ToolMCP, "TodoWrite": events.ToolOther}
	for name, kind := range want {
		if got := claude.ToolKind(name); got != kind {
			t.Errorf("ToolKind(%q) = %s, want %s", name, got, kind)
		}
	}
}

// FuzzDecoder: any line never panics and every event validates.
func FuzzDecoder(f *testing.F) {
	raws, _ := filepath.Glob("../../testdata/claude/*.jsonl")
	for _, raw := range raws {
		b, _ := os.ReadFile(raw)
		for _, l := range strings.Split(string(b), "\n") {
			f.Add([]byte(l))
		}
	}
	f.Add([]byte(`{"type":"user","message":{"content":[{"type":"tool_result","content":[{"text":1}],"is_error":true}]}}`))
	f.Add([]byte(`{"type":"stream_event","event":{"type":"message_delta","usage":{"output_tokens":-3}}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if !gjson.ValidBytes(line) {
			return // the runner never hands a decoder invalid JSON
		}
		d := claude.New("", true)
		bodies := d.Decode(nil, line)
		bodies = d.Decode(bodies, line)
		o := d.Outcome(exit(0))
		bodies = append(bodies, events.RunFinished{OK: o.OK, Error: o.Error, Text: o.Text, CostSource: events.CostUnknown})
		if err := hubtest.ValidateBodies("claude", bodies); err != nil {
			t.Fatal(err)
		}
	})
}
