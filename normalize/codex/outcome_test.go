package codex

import (
	"strings"
	"testing"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// TestClassifyRows: one message per row of the rules table (and per pattern
// where the patterns are different wordings), taken from real Codex output
// (testdata/codex) or codex-rs's error texts. A row that stops matching its
// message — a reordering, a typo — fails here.
func TestClassifyRows(t *testing.T) {
	tests := []struct {
		msg    string
		bin    events.Bin
		reason events.Reason
		status int
		wait   float64
	}{
		// context overflow
		{"Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying.",
			events.BinInvalidInput, events.ReasonContextOverflow, 0, 0},
		{"Your input exceeds the context window of this model. Please adjust your input and try again.",
			events.BinInvalidInput, events.ReasonContextOverflow, 0, 0},
		// prompt too large
		{`{"error":{"message":"Input exceeds the maximum length of 1048576 characters.","input_error_code":"input_too_large"}}`,
			events.BinInvalidInput, events.ReasonPromptTooLarge, 0, 0},
		// auth
		{"unexpected status 401 Unauthorized: Incorrect API key provided, url: http://127.0.0.1:1/v1/responses, request id: req_mock_5",
			events.BinUnavailable, events.ReasonAuth, 401, 0},
		{"unexpected status 403 Forbidden: project has no access", events.BinUnavailable, events.ReasonAuth, 403, 0},
		{"exceeded retry limit, last status: 401 Unauthorized", events.BinUnavailable, events.ReasonAuth, 401, 0},
		// not configured
		{"Missing environment variable: `MOCK_API_KEY`. Create an API key and export it.",
			events.BinUnavailable, events.ReasonNotConfigured, 0, 0},
		// a plan's usage limit lifts on a clock: a rate limit, with the
		// wait when the message gives one; a quota has none
		{"You've hit your usage limit. Upgrade to Pro or try again in 2 hours 5 minutes.",
			events.BinUnavailable, events.ReasonRateLimit, 0, 2*3600 + 5*60},
		{`unexpected status 429 Too Many Requests: {"error":{"type":"usage_limit_reached","message":"limit","resets_in_seconds":3600}}`,
			events.BinUnavailable, events.ReasonRateLimit, 429, 3600},
		{"You've hit your usage limit. Try again in 99999999999 hours.", events.BinUnavailable, events.ReasonRateLimit, 0, 0},
		{"Quota exceeded. Check your plan and billing details.", events.BinUnavailable, events.ReasonQuota, 0, 0},
		{"You exceeded your current quota, please check your plan and billing details.", events.BinUnavailable, events.ReasonQuota, 0, 0},
		{"unexpected status 402 Payment Required: add credits", events.BinUnavailable, events.ReasonQuota, 402, 0},
		// rate limit
		{"exceeded retry limit, last status: 429 Too Many Requests, request id: req_mock_8",
			events.BinUnavailable, events.ReasonRateLimit, 429, 0},
		{"Rate limit reached for gpt-5.5 on tokens per min (TPM): Limit 30000. Please try again in 11.054s.",
			events.BinUnavailable, events.ReasonRateLimit, 0, 11.054},
		// overloaded
		{"Selected model is at capacity. Please try a different model.", events.BinUnavailable, events.ReasonOverloaded, 0, 0},
		{"unexpected status 503 Service Unavailable: The server is overloaded", events.BinUnavailable, events.ReasonOverloaded, 503, 0},
		{"unexpected status 529 Site Overloaded", events.BinUnavailable, events.ReasonOverloaded, 529, 0},
		// server
		{"We’re currently experiencing high demand, which may cause temporary errors.", events.BinUnavailable, events.ReasonServer, 0, 0},
		{"unexpected status 502 Bad Gateway: upstream", events.BinUnavailable, events.ReasonServer, 502, 0},
		{"exceeded retry limit, last status: 500 Internal Server Error", events.BinUnavailable, events.ReasonServer, 500, 0},
		{"stream disconnected before completion: error decoding response body", events.BinUnavailable, events.ReasonServer, 0, 0},
		// network
		{"Connection failed: error sending request for url (http://127.0.0.1:9/v1/responses)", events.BinUnavailable, events.ReasonNetwork, 0, 0},
		{"error sending request for url (https://api.example/v1/responses): failed to lookup address information",
			events.BinUnavailable, events.ReasonNetwork, 0, 0},
		{"stream disconnected: idle timeout waiting for SSE", events.BinUnavailable, events.ReasonServer, 0, 0},
		{"connect ECONNREFUSED 127.0.0.1:9", events.BinUnavailable, events.ReasonNetwork, 0, 0},
		// bad model
		{"The model `gpt-9` does not exist or you do not have access to it.", events.BinInvalidInput, events.ReasonBadModel, 0, 0},
		{"The 'gpt-5.5' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.",
			events.BinInvalidInput, events.ReasonBadModel, 0, 0},
		{`unexpected status 400 Bad Request: {"detail":"The 'gpt-5.5' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again."}`,
			events.BinInvalidInput, events.ReasonBadModel, 400, 0},
		// the Responses stream's error event (testdata/codex/streammodel*):
		// its status and error decide, not "stream disconnected"
		{`stream disconnected before completion: {"type":"error","status":400,"error":{"type":"invalid_request_error","code":null,"message":"The 'gpt-5.5' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.","param":"model"}}`,
			events.BinInvalidInput, events.ReasonBadModel, 400, 0},
		{"stream disconnected before completion: {\n  \"type\": \"error\",\n  \"status\": 400,\n  \"error\": {\n    \"type\": \"invalid_request_error\",\n    \"code\": null,\n    \"message\": \"The 'gpt-5.5' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.\",\n    \"param\": \"model\"\n  }\n}",
			events.BinInvalidInput, events.ReasonBadModel, 400, 0},
		{`{"type":"error","status":400,"error":{"type":"invalid_request_error","code":"invalid_value","message":"Invalid value: 'other'.","param":"input[3].action.type"}}`,
			events.BinInvalidInput, events.ReasonBadRequest, 400, 0},
		{`stream disconnected before completion: {"type":"error","status":400,"error":{"type":"invalid_request_error","message":"The 'gpt-4o' model is not supported when using Codex with a ChatGPT account."}}`,
			events.BinInvalidInput, events.ReasonBadModel, 400, 0},
		{`stream disconnected before completion: {"type":"error","status":429,"error":{"type":"requests","code":"rate_limit_exceeded","message":"Rate limit reached. Please try again in 20s."}}`,
			events.BinUnavailable, events.ReasonRateLimit, 429, 20},
		// OpenAI's bare error object (testdata/codex/streamerror)
		{`stream disconnected before completion: {"message":"The server had an error while processing your request (mid-stream).","type":"server_error","code":"internal_error"}`,
			events.BinUnavailable, events.ReasonServer, 0, 0},
		// bad session
		{"Error: thread/resume: thread/resume failed: no rollout found for thread id 00000000-0000-0000-0000-000000000000 (code -32600)",
			events.BinInvalidInput, events.ReasonBadSession, 0, 0},
		// bad request
		{"unexpected status 400 Bad Request: Invalid 'input': empty", events.BinInvalidInput, events.ReasonBadRequest, 400, 0},
		{"unexpected status 413 Payload Too Large", events.BinInvalidInput, events.ReasonBadRequest, 413, 0},
		{"unexpected status 400 Bad Request: invalid value for 'timeout'", events.BinInvalidInput, events.ReasonBadRequest, 400, 0}, // an answer, not a network failure
		// nothing known
		{"turn failed", events.BinAgentFailed, events.ReasonErrorEvent, 0, 0},
	}
	for _, tt := range tests {
		e := Classify(tt.msg)
		if e.Bin != tt.bin || e.Reason != tt.reason {
			t.Errorf("Classify(%q) = %s/%s, want %s/%s", tt.msg, e.Bin, e.Reason, tt.bin, tt.reason)
			continue
		}
		if got := intOr0(e.HTTPStatus); got != tt.status {
			t.Errorf("Classify(%q) http_status = %d, want %d", tt.msg, got, tt.status)
		}
		var wait float64
		if e.RetryAfterS != nil {
			wait = *e.RetryAfterS
		}
		if wait != tt.wait {
			t.Errorf("Classify(%q) retry_after_s = %v, want %v", tt.msg, wait, tt.wait)
		}
		if e.Hint == "" || e.Message == "" || e.Retryable != events.Retryable(e.Bin, e.Reason) {
			t.Errorf("Classify(%q) = %+v: want a message, a hint and SPEC's retryable flag", tt.msg, e)
		}
	}
}

// A model the provider serves only to a newer Codex: the hint says to
// upgrade Codex, whether a body or the text alone says so.
func TestClassifyUpgradeHint(t *testing.T) {
	for _, msg := range []string{
		"The 'gpt-5.5' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.",
		`stream disconnected before completion: {"type":"error","status":400,"error":{"type":"invalid_request_error","code":null,"message":"The 'gpt-5.5' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.","param":"model"}}`,
		`{"message":"The 'gpt-5.5' model requires a newer version of Codex.","type":"invalid_request_error","code":null}`,
	} {
		if e := Classify(msg); e.Reason != events.ReasonBadModel || e.Hint != hintUpgrade {
			t.Errorf("Classify(%q) = %s/%s hint %q, want bad_model, hint %q", msg, e.Bin, e.Reason, e.Hint, hintUpgrade)
		}
	}
	if e := Classify("The model `gpt-9` does not exist or you do not have access to it."); e.Hint != hintModel {
		t.Errorf("a model that does not exist: hint %q, want %q", e.Hint, hintModel)
	}
}

func intOr0(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

func TestReconnect(t *testing.T) {
	a, m, cause, ok := Reconnect("Reconnecting... 2/5 (unexpected status 401 Unauthorized: bad key)")
	if !ok || a != 2 || m != 5 || cause != "unexpected status 401 Unauthorized: bad key" {
		t.Errorf("Reconnect = %d %d %q %v", a, m, cause, ok)
	}
	if _, _, _, ok := Reconnect("unexpected status 401 Unauthorized"); ok {
		t.Error("a final error parsed as a retry")
	}
}

func TestFallback(t *testing.T) {
	one, zero := 1, 0
	tests := []struct {
		name      string
		end       normalize.End
		lastError string
		bin       events.Bin
		reason    events.Reason
	}{
		{"bad session on stderr", normalize.End{ExitCode: &one, Stderr: "Reading additional input from stdin...\nError: thread/resume: thread/resume failed: no rollout found for thread id x (code -32600)\n\nStack backtrace:\n   0: <unknown>\n"},
			"", events.BinInvalidInput, events.ReasonBadSession},
		{"config does not parse", normalize.End{ExitCode: &one, Stderr: "Error loading config.toml:\n/h/config.toml:1:17: invalid basic string, expected `\"`\n  |\n1 | model = \"gpt-5.5\n  |                 ^\n"},
			"", events.BinUnavailable, events.ReasonNotConfigured},
		{"wire_api chat", normalize.End{ExitCode: &one, Stderr: "Error loading config.toml: `wire_api = \"chat\"` is no longer supported.\nHow to fix: set `wire_api = \"responses\"` in your provider config.\nMore info: https://example/7782\nin `model_providers.m.wire_api`\n"},
			"", events.BinUnavailable, events.ReasonNotConfigured},
		{"last error decides", normalize.End{ExitCode: &one}, "Selected model is at capacity.", events.BinUnavailable, events.ReasonOverloaded},
		{"killed", normalize.End{Signal: "SIGKILL"}, "", events.BinAgentFailed, events.ReasonCrashed},
		{"exit status", normalize.End{ExitCode: &one, Stderr: "Error: something odd\n"}, "", events.BinAgentFailed, events.ReasonExitStatus},
		{"exit 0, no turn end", normalize.End{ExitCode: &zero}, "", events.BinProtocol, events.ReasonNoResult},
	}
	for _, tt := range tests {
		e := Fallback(tt.end, tt.lastError)
		if e.Bin != tt.bin || e.Reason != tt.reason {
			t.Errorf("%s: Fallback = %s/%s (%s), want %s/%s", tt.name, e.Bin, e.Reason, e.Message, tt.bin, tt.reason)
		}
	}
	if e := Fallback(tests[1].end, ""); !strings.Contains(e.Message, "invalid basic string") {
		t.Errorf("config error message = %q, want the cause line kept", e.Message)
	}
	e := Fallback(tests[0].end, "")
	if want := "Error: thread/resume: thread/resume failed: no rollout found for thread id x (code -32600)"; e.Message != want {
		t.Errorf("message = %q, want the stderr line without the banner and the backtrace: %q", e.Message, want)
	}
}
