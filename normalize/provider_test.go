package normalize_test

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Every row of ProviderRules takes its own example, and the example of no
// earlier row.
func TestProviderRulesExamples(t *testing.T) {
	t.Parallel()
	for _, p := range normalize.CheckRules(normalize.ProviderRules, func(text string) (events.Bin, events.Reason) {
		c, _ := normalize.ClassifyText(text, 0, nil)
		return c.Bin, c.Reason
	}) {
		t.Error(p)
	}
	// A check that cannot fail is no check: a row whose example another
	// row takes, and one classified otherwise, are both reported.
	bad := []normalize.TextRule{
		{Any: []string{"boom"}, Bin: events.BinUnavailable, Reason: events.ReasonServer, Seen: "t", Example: "boom"},
		{Any: []string{"big boom"}, Bin: events.BinUnavailable, Reason: events.ReasonServer, Seen: "t", Example: "big boom"},
	}
	if p := normalize.CheckRules(bad, func(string) (events.Bin, events.Reason) { return events.BinInternal, "" }); len(p) != 3 {
		t.Errorf("CheckRules found %d problems, want 3: %q", len(p), p)
	}
}

func TestFindProviderError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		want       normalize.ProviderError
		ok         bool
	}{
		{"anthropic", `API Error: 402 {"type":"error","error":{"type":"billing_error","message":"no credit"},"request_id":"req_1"}`,
			normalize.ProviderError{Type: "billing_error", Message: "no credit"}, true},
		{"openai", `Error: 429 {"error":{"message":"You exceeded your current quota","type":"insufficient_quota","param":null,"code":"insufficient_quota"}} at x`,
			normalize.ProviderError{Type: "insufficient_quota", Code: "insufficient_quota", Message: "You exceeded your current quota"}, true},
		{"gateway status code", `responseBody: '{"error":{"message":"Insufficient credits","code":402}}'`,
			normalize.ProviderError{Status: 402, Message: "Insufficient credits"}, true},
		{"google", `{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED"}}`,
			normalize.ProviderError{Status: 429, Code: "RESOURCE_EXHAUSTED", Message: "Quota exceeded"}, true},
		{"usage limit", `{"error":{"type":"usage_limit_reached","message":"limit","resets_in_seconds":3600,"resets_at":1764633600}}`,
			normalize.ProviderError{Type: "usage_limit_reached", Message: "limit", ResetsInS: 3600, ResetsAt: 1764633600}, true},
		{"after other braces", `at {object Object} then {"error":{"type":"api_error","message":"boom"}}`,
			normalize.ProviderError{Type: "api_error", Message: "boom"}, true},
		{"fields of odd types", `{"error":{"type":"usage_limit_reached","message":{"x":1},"resets_in_seconds":"60","code":429.0}}`,
			normalize.ProviderError{Type: "usage_limit_reached", Status: 429, ResetsInS: 60}, true},
		{"absurd reset", `{"error":{"type":"usage_limit_reached","resets_in_seconds":1e308,"resets_at":-5}}`,
			normalize.ProviderError{Type: "usage_limit_reached"}, true},
		// The OpenAI Responses stream's error event, as Codex prints it
		// (testdata/codex/streammodel*): the status beside the error.
		{"responses error event", `stream disconnected before completion: {"type":"error","status":400,"error":{"type":"invalid_request_error","code":null,"message":"The 'gpt-5.5' model requires a newer version of Codex.","param":"model"}}`,
			normalize.ProviderError{Status: 400, Type: "invalid_request_error", Message: "The 'gpt-5.5' model requires a newer version of Codex."}, true},
		{"responses error event, indented", "{\n  \"type\": \"error\",\n  \"status\": 400,\n  \"error\": {\n    \"type\": \"invalid_request_error\",\n    \"code\": \"unsupported_model\",\n    \"message\": \"m\",\n    \"param\": \"model\"\n  }\n}",
			normalize.ProviderError{Status: 400, Type: "invalid_request_error", Code: "unsupported_model", Message: "m"}, true},
		{"status_code beside the error", `{"type":"error","status_code":429,"error":{"type":"rate_limit_error","message":"slow"}}`,
			normalize.ProviderError{Status: 429, Type: "rate_limit_error", Message: "slow"}, true},
		{"the error's own status first", `{"status":500,"error":{"code":402,"message":"Insufficient credits"}}`,
			normalize.ProviderError{Status: 402, Message: "Insufficient credits"}, true},
		{"no status beside", `{"type":"error","status":"bad","error":{"type":"api_error","message":"x"}}`,
			normalize.ProviderError{Type: "api_error", Message: "x"}, true},
		{"a status out of range", `{"type":"error","status":700,"error":{"type":"api_error","message":"x"}}`,
			normalize.ProviderError{Type: "api_error", Message: "x"}, true},
		// OpenAI's error object without its wrapper, as OpenCode 1.18
		// prints an UnknownError's message (testdata/opencode/streamerror-logs).
		{"bare error object", `{"message":"The server had an error while processing your request (mid-stream).","type":"server_error","code":"internal_error"}`,
			normalize.ProviderError{Type: "server_error", Code: "internal_error", Message: "The server had an error while processing your request (mid-stream)."}, true},
		{"bare error object, code null", `UnknownError: {"message":"m","type":"invalid_request_error","param":"model","code":null}`,
			normalize.ProviderError{Type: "invalid_request_error", Message: "m"}, true},
		{"bare error object, code a status", `{"message":"m","type":"x","code":503}`,
			normalize.ProviderError{Status: 503, Type: "x", Message: "m"}, true},
		// An agent's own event has a type and a message, no code: not
		// a body; nor is an object whose message or type is no string.
		{"an event, no code", `{"type":"error","message":"Reconnecting... 1/5"}`, normalize.ProviderError{}, false},
		{"message not a string", `{"message":{"role":"assistant"},"type":"assistant","code":null}`, normalize.ProviderError{}, false},
		{"message null", `{"message":null,"type":"server_error","code":"x"}`, normalize.ProviderError{}, false},
		{"type not a string", `{"message":"m","type":5,"code":"x"}`, normalize.ProviderError{}, false},
		{"no body", "connect ECONNREFUSED 127.0.0.1:9", normalize.ProviderError{}, false},
		{"error not an object", `{"error":"just text"}`, normalize.ProviderError{}, false},
		{"cut body", `{"error":{"type":"api_error","mess`, normalize.ProviderError{}, false},
	}
	for _, tt := range tests {
		got, ok := normalize.FindProviderError(tt.text)
		if ok != tt.ok || got != tt.want {
			t.Errorf("%s: FindProviderError = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
	// Bounded: a giant text of braces is read only so far.
	if _, ok := normalize.FindProviderError(strings.Repeat("{", 10<<20)); ok {
		t.Error("a text of braces has no body")
	}
}

func TestClassifyText(t *testing.T) {
	t.Parallel()
	agent := []normalize.TextRule{{Any: []string{"config.toml"}, Bin: events.BinUnavailable, Reason: events.ReasonNotConfigured}}
	tests := []struct {
		name   string
		text   string
		status int
		bin    events.Bin
		reason events.Reason
		wantSt int
	}{
		{"body type beats status", `402 {"type":"error","error":{"type":"billing_error","message":"x"}}`, 0, events.BinUnavailable, events.ReasonQuota, 0},
		{"429 with quota code", `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, 429, events.BinUnavailable, events.ReasonQuota, 429},
		{"400 credit balance", `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}`, 400, events.BinUnavailable, events.ReasonQuota, 400},
		{"anthropic model 404", `{"type":"error","error":{"type":"not_found_error","message":"model: claude-x"}}`, 404, events.BinInvalidInput, events.ReasonBadModel, 404},
		{"openai model 404", `{"error":{"message":"The model x does not exist or you do not have access to it.","type":"invalid_request_error","code":"model_not_found"}}`, 0, events.BinInvalidInput, events.ReasonBadModel, 0},
		{"gateway 402 in body", `{"error":{"message":"Insufficient credits","code":402}}`, 0, events.BinUnavailable, events.ReasonQuota, 402},
		{"status and overflow", "400 This model's maximum context length is 8192 tokens", 400, events.BinInvalidInput, events.ReasonContextOverflow, 400},
		{"agent rule", "Error loading config.toml: expected '='", 0, events.BinUnavailable, events.ReasonNotConfigured, 0},
		{"network wrapped as server error", "server error: connect ECONNREFUSED 127.0.0.1:1", 0, events.BinUnavailable, events.ReasonNetwork, 0},
		{"status beats network words", "HTTP 500 after the connection reset", 500, events.BinUnavailable, events.ReasonServer, 500},
		{"plain server text", "Internal server error", 0, events.BinUnavailable, events.ReasonServer, 0},
		// The Responses error event: its status and its error decide.
		{"event 400 invalid request", `{"type":"error","status":400,"error":{"type":"invalid_request_error","code":"invalid_value","message":"Invalid value: 'other'.","param":"input"}}`,
			0, events.BinInvalidInput, events.ReasonBadRequest, 400},
		{"event 400 model too new", `{"type":"error","status":400,"error":{"type":"invalid_request_error","code":null,"message":"The 'gpt-5.5' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.","param":"model"}}`,
			0, events.BinInvalidInput, events.ReasonBadModel, 400},
		{"event 400 model unsupported", `{"type":"error","status":400,"error":{"type":"invalid_request_error","message":"The 'gpt-4o' model is not supported when using Codex with a ChatGPT account.","param":"model"}}`,
			0, events.BinInvalidInput, events.ReasonBadModel, 400},
		{"event 400 unknown model", `{"type":"error","status":400,"error":{"type":"invalid_request_error","message":"Unknown model: gpt-9"}}`,
			0, events.BinInvalidInput, events.ReasonBadModel, 400},
		{"event 429 rate limit", `{"type":"error","status":429,"error":{"type":"requests","code":"rate_limit_exceeded","message":"slow down"}}`,
			0, events.BinUnavailable, events.ReasonRateLimit, 429},
		// A bare error object: its code, else its type.
		{"bare server error", `{"message":"The server had an error while processing your request (mid-stream).","type":"server_error","code":"internal_error"}`,
			0, events.BinUnavailable, events.ReasonServer, 0},
		{"bare model too new", `{"message":"The 'm' model requires a newer version of Codex.","type":"invalid_request_error","param":"model","code":null}`,
			0, events.BinInvalidInput, events.ReasonBadModel, 0},
		// Not a body of either shape: as before.
		{"400 naming a model, no body", "400 The model `x` does not exist or you do not have access to it.", 400, events.BinInvalidInput, events.ReasonBadRequest, 400},
		{"nothing", "the agent did something odd", 0, "", "", 0},
	}
	for _, tt := range tests {
		c, ok := normalize.ClassifyText(tt.text, tt.status, agent)
		if ok != (tt.bin != "") || c.Bin != tt.bin || c.Reason != tt.reason || c.Status != tt.wantSt {
			t.Errorf("%s: ClassifyText = %s/%s status %d (ok %v), want %s/%s status %d", tt.name, c.Bin, c.Reason, c.Status, ok, tt.bin, tt.reason, tt.wantSt)
		}
	}
}

// A model the provider serves only to a newer client: the hint says to
// upgrade the CLI, whatever shape said it; other model failures keep the
// agent's hint.
func TestClassifyTextHint(t *testing.T) {
	t.Parallel()
	for text, upgrade := range map[string]bool{
		`{"type":"error","status":400,"error":{"type":"invalid_request_error","message":"The 'gpt-5.5' model requires a newer version of Codex. Please upgrade."}}`: true,
		`{"message":"The 'm' model requires a newer version of Codex.","type":"invalid_request_error","code":null}`:                                                 true,
		"The 'gpt-5.5' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.":                                             true,
		`{"type":"error","status":400,"error":{"type":"invalid_request_error","message":"Unknown model: gpt-9"}}`:                                                   false,
		`{"error":{"message":"The model x does not exist","type":"invalid_request_error","code":"model_not_found"}}`:                                                false,
	} {
		c, ok := normalize.ClassifyText(text, 0, nil)
		if !ok || c.Reason != events.ReasonBadModel || strings.Contains(c.Hint, "upgrade") != upgrade {
			t.Errorf("ClassifyText(%q) = %s/%s hint %q (ok %v), want bad_model, an upgrade hint %v", text, c.Bin, c.Reason, c.Hint, ok, upgrade)
		}
	}
}

// ClassifyBody: the body alone decides, by its code or type, else by its
// own status; the text's status stays with a known type or code.
func TestClassifyBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		text   string
		status int
		bin    events.Bin
		reason events.Reason
		wantSt int
		wait   float64
	}{
		{"event in a retryable wrapper", `stream disconnected before completion: {"type":"error","status":400,"error":{"type":"invalid_request_error","code":null,"message":"The 'gpt-5.5' model requires a newer version of Codex.","param":"model"}}`,
			0, events.BinInvalidInput, events.ReasonBadModel, 400, 0},
		{"status alone", `stream disconnected before completion: {"type":"error","status":503,"error":{"message":"busy"}}`,
			0, events.BinUnavailable, events.ReasonOverloaded, 503, 0},
		{"bare server error", `stream disconnected before completion: {"message":"oops (mid-stream).","type":"server_error","code":"internal_error"}`,
			0, events.BinUnavailable, events.ReasonServer, 0, 0},
		{"the text's status with a type", `unexpected status 429 Too Many Requests: {"error":{"type":"usage_limit_reached","message":"limit","resets_in_seconds":3600}}`,
			429, events.BinUnavailable, events.ReasonRateLimit, 429, 3600},
		{"no type, code or status", `{"error":{"message":"Input exceeds the maximum length of 1048576 characters.","input_error_code":"input_too_large"}}`, 0, "", "", 0, 0},
		{"a status no bin has", `{"type":"error","status":302,"error":{"message":"moved"}}`, 0, "", "", 0, 0},
		{"no body", "stream disconnected before completion: error sending request", 0, "", "", 0, 0},
	}
	for _, tt := range tests {
		c, ok := normalize.ClassifyBody(tt.text, tt.status)
		if ok != (tt.bin != "") || c.Bin != tt.bin || c.Reason != tt.reason || c.Status != tt.wantSt || c.RetryAfterS != tt.wait {
			t.Errorf("%s: ClassifyBody = %s/%s status %d wait %v (ok %v), want %s/%s status %d wait %v",
				tt.name, c.Bin, c.Reason, c.Status, c.RetryAfterS, ok, tt.bin, tt.reason, tt.wantSt, tt.wait)
		}
		if ok && c.Body == nil {
			t.Errorf("%s: ClassifyBody gave no Body", tt.name)
		}
	}
}

// FuzzFindProviderError: any text, and any text around a body of each
// shape read, is read without a panic, within the bounds; a body found
// has a status that is a failure's, and a bare body is found where it is.
func FuzzFindProviderError(f *testing.F) {
	for _, s := range []string{
		`{"type":"error","error":{"type":"api_error","message":"boom"}}`,
		`{"error":{"message":"m","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`,
		`{"error":{"code":429,"message":"q","status":"RESOURCE_EXHAUSTED"}}`,
		`{"type":"error","status":400,"error":{"type":"invalid_request_error","code":null,"message":"m","param":"model"}}`,
		"{\n  \"type\": \"error\",\n  \"status\": 400,\n  \"error\": {\n    \"type\": \"invalid_request_error\"\n  }\n}",
		`{"message":"m","type":"server_error","code":"internal_error"}`,
		`{"type":"error","message":"Reconnecting... 1/5"}`,
		`{"status_code":"429","error":{}}`, `{{{{`, `{"error":"x"}`,
	} {
		f.Add("stream disconnected before completion: "+s, s)
	}
	f.Fuzz(func(t *testing.T, text, body string) {
		for _, in := range []string{text, text + body, body + text} {
			pe, ok := normalize.FindProviderError(in)
			if !ok && pe != (normalize.ProviderError{}) {
				t.Fatalf("FindProviderError(%q) = %+v, false: want the zero value", in, pe)
			}
			if pe.Status != 0 && (pe.Status < 100 || pe.Status > 599) {
				t.Fatalf("FindProviderError(%q) status %d", in, pe.Status)
			}
			if pe.ResetsInS < 0 || pe.ResetsInS > normalize.MaxWaitS {
				t.Fatalf("FindProviderError(%q) resets in %v", in, pe.ResetsInS)
			}
			c, ok := normalize.ClassifyBody(in, 0)
			if ok && (c.Bin == "" || c.Reason == "" || c.Body == nil) {
				t.Fatalf("ClassifyBody(%q) = %+v, true", in, c)
			}
		}
		// A bare error object of any message is found after any text
		// without a brace.
		if !strings.ContainsAny(text, "{}") {
			msg, _ := json.Marshal(body)
			in := text + `{"message":` + string(msg) + `,"type":"server_error","code":"internal_error"}`
			if utf8.ValidString(body) && len(in) < 200<<10 {
				if pe, ok := normalize.FindProviderError(in); !ok || pe.Message != body || pe.Type != "server_error" {
					t.Fatalf("FindProviderError(%q) = %+v, %v; want the bare body with message %q", in, pe, ok, body)
				}
			}
		}
	})
}

func TestTryAgainIn(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]float64{
		"Please try again in 20s.":                      20,
		"Please try again in 11.054s.":                  11.054,
		"Rate limit reached. Please try again in 6m0s.": 360,
		"try again in 1m30s":                            90,
		"try again in 1h30m":                            5400,
		"try again in 2 hours 5 minutes.":               2*3600 + 5*60,
		"try again in 3 days 4 hours":                   3*86400 + 4*3600,
		"Please retry in 20.5s.":                        20.5,
		"retry after 30 seconds":                        30,
		"retry-after: 7":                                7,
		"try again in 500ms":                            0.5,
		"we will retry in a moment":                     0,
		"retry in 5 attempts":                           0,
		"retry after 2025-01-01":                        0,
		"try again in 99999999999 hours":                0,
		"try again at 10:14 PM":                         0,
		"try again in 40 days":                          0, // over MaxWaitS
	} {
		if got := normalize.TryAgainIn(text); math.Abs(got-want) > 1e-9 {
			t.Errorf("TryAgainIn(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestStatusInText(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]events.Reason{
		"request to http://127.0.0.1:5000/v1 failed: HTTP 503":   events.ReasonOverloaded,
		"request to http://192.168.1.5:8080 returned status 503": events.ReasonOverloaded,
		"exit status 127; upstream said status 429":              events.ReasonRateLimit,
		"status 200 then HTTP 429":                               events.ReasonRateLimit,
		"HTTP/1.1 429":                                           events.ReasonRateLimit,
		"500 Internal Server Error: upstream request timeout":    events.ReasonServer,
		"504 Gateway Timeout":                                    events.ReasonServer,
		"listening on 127.0.0.1:5000":                            "",
	} {
		c, _ := normalize.ClassifyText(text, 0, nil)
		if c.Reason != want {
			t.Errorf("ClassifyText(%q) = %s/%s (status %d), want %s", text, c.Bin, c.Reason, c.Status, want)
		}
	}
}
