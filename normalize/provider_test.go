package normalize_test

import (
	"math"
	"strings"
	"testing"

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
		{"nothing", "the agent did something odd", 0, "", "", 0},
	}
	for _, tt := range tests {
		c, ok := normalize.ClassifyText(tt.text, tt.status, agent)
		if ok != (tt.bin != "") || c.Bin != tt.bin || c.Reason != tt.reason || c.Status != tt.wantSt {
			t.Errorf("%s: ClassifyText = %s/%s status %d (ok %v), want %s/%s status %d", tt.name, c.Bin, c.Reason, c.Status, ok, tt.bin, tt.reason, tt.wantSt)
		}
	}
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
