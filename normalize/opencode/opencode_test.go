package opencode_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/normalize"
	"github.com/hubcli/hub/normalize/opencode"
)

// TestClassify has one row per rule of Classify; OpenCode's error objects
// are version-specific, so each shape seen gets its own row.
func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		err    string
		bin    events.Bin
		reason events.Reason
		status int
	}{
		{"401", `{"name":"APIError","data":{"message":"Incorrect API key provided","statusCode":401,"isRetryable":false}}`, events.BinUnavailable, events.ReasonAuth, 401},
		{"403", `{"name":"APIError","data":{"message":"forbidden","statusCode":403}}`, events.BinUnavailable, events.ReasonAuth, 403},
		{"auth name", `{"name":"ProviderAuthError","data":{"providerID":"x","message":"no key"}}`, events.BinUnavailable, events.ReasonAuth, 0},
		{"429", `{"name":"APIError","data":{"message":"Rate limit","statusCode":429,"isRetryable":true}}`, events.BinUnavailable, events.ReasonRateLimit, 429},
		{"429 quota", `{"name":"APIError","data":{"message":"You exceeded your current quota","statusCode":429,"responseBody":"{\"error\":{\"code\":\"insufficient_quota\"}}"}}`, events.BinUnavailable, events.ReasonQuota, 429},
		{"500", `{"name":"APIError","data":{"message":"Internal error","statusCode":500,"isRetryable":true}}`, events.BinUnavailable, events.ReasonServer, 500},
		{"502", `{"name":"APIError","data":{"message":"Bad gateway","statusCode":502}}`, events.BinUnavailable, events.ReasonServer, 502},
		{"503", `{"name":"APIError","data":{"message":"Service Unavailable","statusCode":503}}`, events.BinUnavailable, events.ReasonOverloaded, 503},
		{"529", `{"name":"APIError","data":{"message":"Overloaded","statusCode":529}}`, events.BinUnavailable, events.ReasonOverloaded, 529},
		{"402", `{"name":"APIError","data":{"message":"Insufficient credits","statusCode":402}}`, events.BinUnavailable, events.ReasonQuota, 402},
		{"404", `{"name":"APIError","data":{"message":"Not Found","statusCode":404}}`, events.BinInvalidInput, events.ReasonBadRequest, 404},
		{"422", `{"name":"APIError","data":{"message":"Unprocessable","statusCode":422}}`, events.BinInvalidInput, events.ReasonBadRequest, 422},
		{"overflow name", `{"name":"ContextOverflowError","data":{"message":"too long"}}`, events.BinInvalidInput, events.ReasonContextOverflow, 0},
		{"overflow body", `{"name":"APIError","data":{"message":"Bad Request","statusCode":400,"responseBody":"{\"error\":{\"code\":\"context_length_exceeded\"}}"}}`, events.BinInvalidInput, events.ReasonContextOverflow, 400},
		{"400", `{"name":"APIError","data":{"message":"invalid tool schema","statusCode":400}}`, events.BinInvalidInput, events.ReasonBadRequest, 400},
		{"model", `{"name":"ProviderModelNotFoundError","data":{"providerID":"mock","modelID":"nope"}}`, events.BinInvalidInput, events.ReasonBadModel, 0},
		{"404 model", `{"name":"APIError","data":{"message":"The model does not exist","statusCode":404}}`, events.BinInvalidInput, events.ReasonBadModel, 404},
		{"aborted", `{"name":"MessageAbortedError","data":{"message":"aborted"}}`, events.BinCancelled, events.ReasonAgentAborted, 0},
		{"network", `{"name":"UnknownError","data":{"message":"Unable to connect. Is the computer able to access the url?"}}`, events.BinUnavailable, events.ReasonNetwork, 0},
		{"header timeout", `{"name":"UnknownError","data":{"message":"The operation timed out."}}`, events.BinUnavailable, events.ReasonNetwork, 0},
		{"bun socket", `{"name":"UnknownError","data":{"message":"The socket connection was closed unexpectedly. For more information, pass ` + "`verbose: true`" + ` in the second argument to fetch()"}}`, events.BinUnavailable, events.ReasonNetwork, 0},
		// An error inside the stream: the provider's error object is the
		// message (1.18.33, testdata/opencode/stream*-logs).
		{"bare server error", `{"name":"UnknownError","data":{"message":"{\"message\":\"The server had an error while processing your request (mid-stream).\",\"type\":\"server_error\",\"code\":\"internal_error\"}"}}`,
			events.BinUnavailable, events.ReasonServer, 0},
		{"bare model too new", `{"name":"UnknownError","data":{"message":"{\"message\":\"The 'mock-model' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.\",\"type\":\"invalid_request_error\",\"param\":\"model\",\"code\":null}"}}`,
			events.BinInvalidInput, events.ReasonBadModel, 0},
		{"bare bad request", `{"name":"UnknownError","data":{"message":"{\"message\":\"Invalid value\",\"type\":\"invalid_request_error\",\"param\":\"x\",\"code\":\"invalid_value\"}"}}`,
			events.BinInvalidInput, events.ReasonBadRequest, 0},
		{"responses error event", `{"name":"UnknownError","data":{"message":"{\"type\":\"error\",\"status\":429,\"error\":{\"type\":\"requests\",\"code\":\"rate_limit_exceeded\",\"message\":\"slow\"}}"}}`,
			events.BinUnavailable, events.ReasonRateLimit, 429},
		{"unknown", `{"name":"UnknownError","data":{"message":"something else"}}`, events.BinAgentFailed, events.ReasonErrorEvent, 0},
		{"empty", `{}`, events.BinAgentFailed, events.ReasonErrorEvent, 0},
	}
	for _, tt := range tests {
		e := opencode.Classify(gjson.Parse(tt.err))
		if e.Bin != tt.bin || e.Reason != tt.reason {
			t.Errorf("Classify(%s) = %s/%s, want %s/%s", tt.name, e.Bin, e.Reason, tt.bin, tt.reason)
		}
		if upgrade := strings.Contains(tt.name, "too new"); strings.Contains(e.Hint, "upgrade opencode") != upgrade {
			t.Errorf("Classify(%s) hint %q, want one to upgrade opencode: %v", tt.name, e.Hint, upgrade)
		}
		gotStatus := 0
		if e.HTTPStatus != nil {
			gotStatus = *e.HTTPStatus
		}
		if gotStatus != tt.status || e.Hint == "" || e.Retryable != events.Retryable(tt.bin, tt.reason) {
			t.Errorf("Classify(%s) = status %d hint %q retryable %v, want %d, a hint, %v", tt.name, gotStatus, e.Hint, e.Retryable, tt.status, events.Retryable(tt.bin, tt.reason))
		}
	}
}

func TestToolKind(t *testing.T) {
	t.Parallel()
	want := map[string]events.ToolKind{
		"bash": events.ToolShell, "read": events.ToolRead, "list": events.ToolRead, "write": events.ToolWrite,
		"edit": events.ToolEdit, "patch": events.ToolEdit, "glob": events.ToolSearch, "grep": events.ToolSearch,
		"webfetch": events.ToolWeb, "task": events.ToolTask, "github_create_issue": events.ToolOther, "todowrite": events.ToolOther,
	}
	for name, kind := range want {
		if got := opencode.ToolKind(name); got != kind {
			t.Errorf("ToolKind(%q) = %s, want %s", name, got, kind)
		}
	}
}

func decode(lines ...string) (*opencode.Decoder, []events.Body) {
	d := opencode.New("p/m", true)
	var out []events.Body
	for _, l := range lines {
		out = d.Decode(out, []byte(l))
	}
	return d, out
}

func exit(code int) normalize.End { return normalize.End{ExitCode: &code} }

func TestRecoveredError(t *testing.T) {
	t.Parallel()
	d, out := decode(
		`{"type":"error","sessionID":"s","error":{"name":"APIError","data":{"message":"overloaded","statusCode":529}}}`,
		`{"type":"text","sessionID":"s","part":{"text":"fine now"}}`,
		`{"type":"step_finish","sessionID":"s","part":{"reason":"stop","tokens":{"input":1,"output":1},"cost":0.5}}`,
	)
	o := d.Outcome(exit(0))
	if !o.OK || o.Text != "fine now" {
		t.Errorf("Outcome = %+v, want ok with the text", o)
	}
	var recovered int
	for _, b := range out {
		if n, ok := b.(events.Notice); ok && n.Kind == events.NoticeRecoveredError {
			recovered++
		}
	}
	if recovered != 1 {
		t.Errorf("recovered_error notices = %d, want 1", recovered)
	}
}

// TestMissingCost: a step without a cost makes the run's cost unknown (null),
// never $0.
func TestMissingCost(t *testing.T) {
	t.Parallel()
	_, out := decode(
		`{"type":"step_finish","sessionID":"s","part":{"reason":"tool-calls","tokens":{"input":1,"output":1},"cost":0.5}}`,
		`{"type":"step_finish","sessionID":"s","part":{"reason":"stop","tokens":{"input":1,"output":1}}}`,
	)
	u := out[len(out)-1].(events.Usage)
	if u.Total.CostUSD != nil || u.CostSource != events.CostUnknown || u.Step.CostUSD != nil {
		t.Errorf("usage = %+v, want null costs and source unknown", u)
	}
	if u.Total.Input != 2 || u.Total.Output != 2 {
		t.Errorf("total tokens = %+v, want 2 in, 2 out", u.Total)
	}
}

func TestOutcomeRules(t *testing.T) {
	t.Parallel()
	stop := `{"type":"step_finish","sessionID":"s","part":{"reason":"stop","tokens":{},"cost":0}}`
	toolCalls := `{"type":"step_finish","sessionID":"s","part":{"reason":"tool-calls","tokens":{},"cost":0}}`
	tests := []struct {
		name   string
		lines  []string
		end    normalize.End
		bin    events.Bin
		reason events.Reason
	}{
		{"stop exit 0", []string{stop}, exit(0), "", ""},
		// The last step is the terminal event, whatever the exit (the
		// runner adds an exit_status notice).
		{"stop exit 1", []string{stop}, exit(1), "", ""},
		{"stop then killed", []string{stop}, normalize.End{Signal: "SIGKILL"}, "", ""},
		{"stop then linger kill", []string{stop}, normalize.End{Signal: "SIGTERM", Stopped: true}, "", ""},
		{"tool-calls last", []string{toolCalls}, exit(0), events.BinProtocol, events.ReasonNoResult},
		{"nothing", nil, exit(0), events.BinProtocol, events.ReasonNoResult},
		{"killed", []string{toolCalls}, normalize.End{Signal: "SIGKILL"}, events.BinAgentFailed, events.ReasonCrashed},
		{"stderr network", nil, normalize.End{ExitCode: new(1), Stderr: "\x1b[31mError:\x1b[0m Unable to connect to http://x"}, events.BinUnavailable, events.ReasonNetwork},
		{"stderr session", nil, normalize.End{ExitCode: new(1), Stderr: "Error: Session not found"}, events.BinInvalidInput, events.ReasonBadSession},
	}
	for _, tt := range tests {
		d, _ := decode(tt.lines...)
		o := d.Outcome(tt.end)
		switch {
		case tt.bin == "" && (!o.OK || o.Error != nil):
			t.Errorf("%s: Outcome = %v, want ok", tt.name, o.Error)
		case tt.bin != "" && (o.OK || o.Error == nil || o.Error.Bin != tt.bin || o.Error.Reason != tt.reason):
			t.Errorf("%s: Outcome = ok %v %v, want %s/%s", tt.name, o.OK, o.Error, tt.bin, tt.reason)
		}
	}
}

func TestToolOutputCut(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", normalize.DefaultOutputCap+10)
	line, _ := json.Marshal(map[string]any{"type": "tool_use", "sessionID": "s", "part": map[string]any{
		"tool": "read", "callID": "c", "state": map[string]any{"status": "completed", "input": map[string]any{"filePath": "/a"}, "output": big}}})
	_, out := decode(string(line))
	fin := out[len(out)-1].(events.ToolFinished)
	if !fin.Truncated || fin.OutputBytes != int64(len(big)) || len(fin.Output) != normalize.DefaultOutputCap || fin.Kind != events.ToolRead {
		t.Errorf("tool.finished = truncated %v bytes %d len %d kind %s", fin.Truncated, fin.OutputBytes, len(fin.Output), fin.Kind)
	}
}

// FuzzDecoder: any line never panics and every event validates.
func FuzzDecoder(f *testing.F) {
	raws, _ := filepath.Glob("../../testdata/opencode/*.jsonl")
	for _, raw := range raws {
		b, _ := os.ReadFile(raw)
		for _, l := range strings.Split(string(b), "\n") {
			f.Add([]byte(l))
		}
	}
	f.Add([]byte(`{"type":"tool_use","part":{"state":{"status":"error","error":"The user rejected permission"}}}`))
	f.Add([]byte(`{"type":"step_finish","part":{"tokens":{"input":-5,"output":"x"},"cost":"free"}}`))
	f.Add([]byte(`{"type":"error","error":null}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if !gjson.ValidBytes(line) {
			return // the runner never hands a decoder invalid JSON
		}
		d := opencode.New("", true)
		bodies := d.Decode(nil, line)
		bodies = d.Decode(bodies, line)
		o := d.Outcome(exit(0))
		bodies = append(bodies, events.RunFinished{OK: o.OK, Error: o.Error, Text: o.Text, CostSource: events.CostUnknown})
		if err := hubtest.ValidateBodies("opencode", bodies); err != nil {
			t.Fatal(err)
		}
	})
}
