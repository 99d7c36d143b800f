package normalize

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/hubcli/hub/events"
)

// ProviderError is a model provider's error body found in a CLI's text (an
// error message that quotes the response, a stack trace on stderr): the
// fields a structured error would have carried.
type ProviderError struct {
	// Status is the HTTP status the body names (error.code or status when
	// a number from 100 to 599), 0 if none.
	Status int
	// Type is error.type: Anthropic's "rate_limit_error",
	// "overloaded_error", OpenAI's "insufficient_quota", "", ….
	Type string
	// Code is error.code as text when it is not a status: OpenAI's
	// "insufficient_quota", "model_not_found", Google's status
	// "RESOURCE_EXHAUSTED".
	Code string
	// Message is error.message.
	Message string
	// ResetsInS is the seconds until a usage limit resets, when the body
	// says (OpenAI's usage_limit_reached: resets_in_seconds); 0 if not.
	ResetsInS float64
	// ResetsAt is when it resets, in Unix seconds (resets_at); 0 if not.
	ResetsAt int64
}

// maxBodyScan bounds how much text FindProviderError reads, and how many
// '{' it tries: it runs on failure paths, on text an agent wrote.
const (
	maxBodyScan  = 256 << 10
	maxBodyTries = 64
)

// FindProviderError finds the first JSON object in text that is a
// provider's error body and returns what it says. The shapes read:
//
//	{"type":"error","error":{"type":"…","message":"…"}}          Anthropic
//	{"error":{"message":"…","type":"…","code":"…"|null}}          OpenAI and compatible servers
//	{"error":{"code":402,"message":"…"}}                          gateways (OpenRouter)
//	{"error":{"code":429,"message":"…","status":"RESOURCE_EXHAUSTED"}}  Google
//	{"type":"error","status":400,"error":{"type":"…","code":…,"message":"…","param":…}}
//	                                                              the OpenAI Responses stream's error event
//	{"message":"…","type":"…","code":"…"|null}                    OpenAI's error object alone, no "error" wrapper
//
// A status beside the error object ("status", or "status_code" as Codex
// also reads it) is the body's HTTP status when the error object names
// none. The bare error object is read only with all three of message and
// type (strings) and code (any value, null too): an agent's own events
// often have a type and a message, never a code beside them. Codex prints
// the error event as the text of its own error (compact or indented);
// OpenCode 1.18 prints the bare object as an UnknownError's data.message.
//
// ok is false when there is none. It reads at most the first 256 KiB and
// tries at most 64 of its '{'.
func FindProviderError(text string) (pe ProviderError, ok bool) {
	if len(text) > maxBodyScan {
		text = text[:maxBodyScan]
	}
	for tries, i := 0, 0; tries < maxBodyTries; tries++ {
		j := strings.IndexByte(text[i:], '{')
		if j < 0 {
			return pe, false
		}
		i += j
		var body map[string]json.RawMessage
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		if dec.Decode(&body) == nil {
			if pe, ok = readBody(body); ok {
				return pe, true
			}
		}
		i++
	}
	return pe, false
}

// readBody reads one JSON object's members as a provider's error body:
// an "error" object, with the status beside it; else a bare error object.
func readBody(body map[string]json.RawMessage) (ProviderError, bool) {
	if inner, wrapped := body["error"]; wrapped {
		if len(inner) == 0 || inner[0] != '{' {
			return ProviderError{}, false
		}
		var fields map[string]json.RawMessage
		if json.Unmarshal(inner, &fields) != nil {
			return ProviderError{}, false
		}
		pe, ok := readErrorObject(fields)
		if ok && pe.Status == 0 {
			pe.Status = cmp.Or(httpStatus(body["status"]), httpStatus(body["status_code"]))
		}
		return pe, ok
	}
	if _, hasCode := body["code"]; !hasCode || !isString(body["message"]) || !isString(body["type"]) {
		return ProviderError{}, false
	}
	return readErrorObject(body)
}

// isString reports whether a JSON value is a string.
func isString(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '"' }

// httpStatus returns the HTTP status a JSON value is (a whole number from
// 100 to 599, or a string of one), 0 otherwise.
func httpStatus(raw json.RawMessage) int {
	n := number(raw)
	if n >= 100 && n <= 599 && n == float64(int(n)) {
		return int(n)
	}
	return 0
}

// number returns the number a JSON value is, or a string holds; 0 if
// neither.
func number(raw json.RawMessage) float64 {
	var v float64
	if json.Unmarshal(raw, &v) != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			v, _ = strconv.ParseFloat(s, 64)
		}
	}
	return v
}

// readErrorObject reads the members of a provider's error object (the
// "error" object of its body, or the bare object), field by field: a field
// of an unexpected type ("resets_in_seconds":"60") is skipped, not the
// body.
func readErrorObject(fields map[string]json.RawMessage) (ProviderError, bool) {
	str := func(k string) string {
		var v string
		_ = json.Unmarshal(fields[k], &v)
		return v
	}
	num := func(k string) float64 { return number(fields[k]) }
	pe := ProviderError{Type: cmp.Or(str("type"), str("error_type")), Message: str("message")}
	if v := num("resets_in_seconds"); v > 0 && v <= MaxWaitS {
		pe.ResetsInS = v
	}
	if v := num("resets_at"); v > 0 && v < 1e11 {
		pe.ResetsAt = int64(v)
	}
	for _, k := range []string{"code", "status"} {
		if n := httpStatus(fields[k]); n != 0 {
			if pe.Status == 0 {
				pe.Status = n
			}
		} else if s := str(k); s != "" && pe.Code == "" && num(k) == 0 {
			pe.Code = s
		}
	}
	if pe.Type == "" && pe.Code == "" && pe.Message == "" && pe.Status == 0 {
		return ProviderError{}, false
	}
	return pe, true
}

// TextRule is one row of a table that classifies a failure a CLI reported
// only as text. A text that contains any of Any (ignoring case) is
// Bin/Reason. Seen says where the wording was seen (a CLI and its version,
// or a provider's API); Example is a text in that wording, which the
// table's test classifies. Hint, when set, is the next step for this
// wording; without it the agent's hint for the reason applies (Hints).
type TextRule struct {
	Any     []string
	Bin     events.Bin
	Reason  events.Reason
	Seen    string
	Example string
	Hint    string
}

// HintOr is the row's Hint, or the agent's hint for the row's reason.
func (r *TextRule) HintOr(h Hints, fallback string) string {
	if r.Hint != "" {
		return r.Hint
	}
	return h.For(r.Reason, fallback)
}

// Match returns the first rule of rules that takes text, nil if none.
func Match(rules []TextRule, text string) *TextRule {
	ls := strings.ToLower(text)
	for i := range rules {
		for _, sub := range rules[i].Any {
			if strings.Contains(ls, strings.ToLower(sub)) {
				return &rules[i]
			}
		}
	}
	return nil
}

// CheckRules returns the problems of a rule table, for its test: a row
// without Example or Seen, a row whose Example an earlier row takes
// (Match), and a row whose Example classify (the agent's classifier of
// text) does not give the row's bin and reason.
func CheckRules(rules []TextRule, classify func(text string) (events.Bin, events.Reason)) []string {
	var out []string
	for i, r := range rules {
		if r.Example == "" || r.Seen == "" {
			out = append(out, fmt.Sprintf("row %d (%q): no Example or Seen", i, r.Any))
			continue
		}
		if m := Match(rules, r.Example); m != &rules[i] {
			out = append(out, fmt.Sprintf("row %d's example %q is taken by an earlier row (%q)", i, r.Example, m.Any))
		}
		if bin, reason := classify(r.Example); bin != r.Bin || reason != r.Reason {
			out = append(out, fmt.Sprintf("row %d: %q is classified %s/%s, want %s/%s", i, r.Example, bin, reason, r.Bin, r.Reason))
		}
	}
	return out
}

// providerCodes maps the error types and codes of the providers' bodies
// (error.type, error.code) to SPEC §4; a body's type or code decides
// before its HTTP status.
var providerCodes = map[string]struct {
	bin    events.Bin
	reason events.Reason
}{
	// Anthropic (docs: API errors)
	"authentication_error":  {events.BinUnavailable, events.ReasonAuth},
	"permission_error":      {events.BinUnavailable, events.ReasonAuth},
	"billing_error":         {events.BinUnavailable, events.ReasonQuota},
	"rate_limit_error":      {events.BinUnavailable, events.ReasonRateLimit},
	"overloaded_error":      {events.BinUnavailable, events.ReasonOverloaded},
	"api_error":             {events.BinUnavailable, events.ReasonServer},
	"request_too_large":     {events.BinInvalidInput, events.ReasonPromptTooLarge},
	"not_found_error":       {events.BinInvalidInput, events.ReasonBadRequest}, // "model: x" is bad_model, below
	"invalid_request_error": {events.BinInvalidInput, events.ReasonBadRequest},
	// OpenAI (error codes) and compatible servers
	"invalid_api_key":         {events.BinUnavailable, events.ReasonAuth},
	"insufficient_quota":      {events.BinUnavailable, events.ReasonQuota},
	"usage_limit_reached":     {events.BinUnavailable, events.ReasonRateLimit}, // a plan's window: it lifts
	"usage_not_included":      {events.BinUnavailable, events.ReasonQuota},
	"rate_limit_exceeded":     {events.BinUnavailable, events.ReasonRateLimit},
	"server_is_overloaded":    {events.BinUnavailable, events.ReasonOverloaded},
	"slow_down":               {events.BinUnavailable, events.ReasonOverloaded},
	"server_error":            {events.BinUnavailable, events.ReasonServer},
	"model_not_found":         {events.BinInvalidInput, events.ReasonBadModel},
	"context_length_exceeded": {events.BinInvalidInput, events.ReasonContextOverflow},
	// Google (status names)
	"RESOURCE_EXHAUSTED": {events.BinUnavailable, events.ReasonRateLimit},
	"UNAUTHENTICATED":    {events.BinUnavailable, events.ReasonAuth},
	"PERMISSION_DENIED":  {events.BinUnavailable, events.ReasonAuth},
	"UNAVAILABLE":        {events.BinUnavailable, events.ReasonOverloaded},
	"INTERNAL":           {events.BinUnavailable, events.ReasonServer},
}

// ProviderRules are the providers' and their SDKs' own wordings, for text
// that carries no body and no status: the Anthropic and OpenAI APIs'
// messages as the SDKs print them. Each agent's table goes first; these
// after a body's type and code, and after the HTTP status, except where a
// status is refined by the text (quota on a 429 or 400, a model on a 404,
// an overflow on a 400). Every row has a test (provider_test.go).
var ProviderRules = []TextRule{
	{Any: []string{"prompt is too long", "context_length_exceeded", "maximum context length", "exceeds the context window",
		"context window exceeds", "model_context_window_exceeded", "input is too long for"},
		Bin: events.BinInvalidInput, Reason: events.ReasonContextOverflow, Seen: "Anthropic and OpenAI APIs",
		Example: "This model's maximum context length is 128000 tokens. However, your messages resulted in 200000 tokens."},
	{Any: []string{"credit balance is too low", "insufficient_quota", "exceeded your current quota", "insufficient credits",
		"payment required", "billing_error", "purchase credits", "quota exceeded"},
		Bin: events.BinUnavailable, Reason: events.ReasonQuota, Seen: "Anthropic and OpenAI APIs, gateways",
		Example: "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},
	{Any: []string{"invalid x-api-key", "invalid api key", "incorrect api key", "invalid_api_key", "authentication_error", "invalid bearer token"},
		Bin: events.BinUnavailable, Reason: events.ReasonAuth, Seen: "Anthropic and OpenAI APIs",
		Example: "Incorrect API key provided: sk-abc. You can find your API key at https://platform.openai.com/account/api-keys."},
	{Any: []string{"rate limit", "rate_limit", "too many requests"},
		Bin: events.BinUnavailable, Reason: events.ReasonRateLimit, Seen: "Anthropic and OpenAI APIs",
		Example: "Rate limit reached for gpt-5 in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1."},
	// A plan's usage limit lifts on a clock (a 5-hour or weekly window),
	// whether or not the text says when: a rate limit, not a quota.
	{Any: []string{"usage limit", "usage_limit_reached"},
		Bin: events.BinUnavailable, Reason: events.ReasonRateLimit, Seen: "OpenAI API (usage_limit_reached)",
		Example: "The usage limit has been reached"},
	{Any: []string{"overloaded", "at capacity", "service unavailable"},
		Bin: events.BinUnavailable, Reason: events.ReasonOverloaded, Seen: "Anthropic API",
		Example: "Overloaded"},
	// ChatGPT's Codex backend refuses a model to a Codex older than the
	// model: a 400 invalid_request_error, sent as the Responses stream's
	// error event. Upgrading the CLI, not another model, is the fix.
	{Any: []string{"model requires a newer version of"},
		Bin: events.BinInvalidInput, Reason: events.ReasonBadModel,
		Seen:    "ChatGPT's Codex backend (Responses error event), through codex 0.169.0 and opencode 1.18.33",
		Example: "The 'gpt-5.5' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.",
		Hint:    "upgrade the agent's CLI to its latest version (this model needs a newer one), or pass --model naming a model this version supports"},
	{Any: []string{"model_not_found", "does not exist or you do not have access", "model not found", "unknown model",
		"unsupported model", "model is not supported", "model not supported"},
		Bin: events.BinInvalidInput, Reason: events.ReasonBadModel, Seen: "OpenAI API",
		Example: "The model `gpt-9` does not exist or you do not have access to it."},
	{Any: []string{"internal server error", "internal_server_error", "bad gateway", "gateway timeout", "server_error", "api_error"},
		Bin: events.BinUnavailable, Reason: events.ReasonServer, Seen: "Anthropic and OpenAI APIs",
		Example: "Internal server error"},
	// OpenAI's message of an HTTP 500, which opencode acp passes on
	// without the status (testdata/acp/opencode-err500).
	{Any: []string{"the server had an error while processing your request"},
		Bin: events.BinUnavailable, Reason: events.ReasonServer, Seen: "OpenAI API, through opencode acp 1.18.33",
		Example: "The server had an error while processing your request. Sorry about that!"},
}

// Hints are an agent's hints by reason: the next step its users take for
// each failure (SPEC §4's hint), in the agent's own terms.
type Hints map[events.Reason]string

// For returns the hint for reason r, or fallback when there is none.
func (h Hints) For(r events.Reason, fallback string) string {
	if s, ok := h[r]; ok {
		return s
	}
	return fallback
}

// TextClass is what ClassifyText made of a text.
type TextClass struct {
	Bin    events.Bin
	Reason events.Reason
	// Status is the HTTP status found (in a body, or by the agent's own
	// pattern), 0 if none.
	Status int
	// Body is the provider's error body found, if any.
	Body *ProviderError
	// RetryAfterS is the wait the text names, in seconds: the body's
	// resets_in_seconds, else TryAgainIn; 0 if none.
	RetryAfterS float64
	// Hint is the Hint of the row of ProviderRules that decided the
	// reason, "" if none has one: the agent's hint for the reason
	// applies then.
	Hint string
}

// ClassifyText classifies a failure a CLI reported only as text (an error
// message, stderr), given the HTTP status the agent's own wording names
// (0 if none). In order:
//
//  1. a provider's error body in the text (FindProviderError): its type
//     or code (providerCodes), else its status;
//  2. the agent's own rules (its wording: setup and config errors, …);
//  3. the HTTP status (StatusReason), refined by the text: an overflow on
//     a 400 or 413, quota wording on a 400, 403 or 429, a model on a 404;
//  4. the network phrases (IsNetworkError): a connection that failed
//     before any status, even where the CLI calls it a server error;
//  5. ProviderRules, the providers' own wordings.
//
// ok is false when nothing matched.
func ClassifyText(text string, status int, agent []TextRule) (c TextClass, ok bool) {
	defer func() {
		c.RetryAfterS = TryAgainIn(text)
		if c.Body != nil && c.Body.ResetsInS > 0 && c.Body.ResetsInS <= MaxWaitS {
			c.RetryAfterS = c.Body.ResetsInS
		}
	}()
	if status == 0 {
		status = statusInText(text)
	}
	if pe, found := FindProviderError(text); found {
		c.Body = &pe
		if status == 0 {
			status = pe.Status
		}
		if bin, reason, known := bodyCode(pe); known {
			c.Bin, c.Reason, c.Status = bin, reason, status
			return refine(c, text), true
		}
	}
	c.Status = status
	if r := Match(agent, text); r != nil {
		c.Bin, c.Reason = r.Bin, r.Reason
		return c, true
	}
	if bin, reason := StatusReason(status); bin != "" {
		c.Bin, c.Reason = bin, reason
		return refine(c, text), true
	}
	if IsNetworkError(text) {
		c.Bin, c.Reason = events.BinUnavailable, events.ReasonNetwork
		return c, true
	}
	if r := Match(ProviderRules, text); r != nil {
		c.Bin, c.Reason, c.Hint = r.Bin, r.Reason, r.Hint
		return c, true
	}
	return c, false
}

// bodyCode is the class of a body's code, else of its type
// (providerCodes); known is false when neither is known.
func bodyCode(pe ProviderError) (bin events.Bin, reason events.Reason, known bool) {
	for _, k := range []string{pe.Code, pe.Type} {
		if r, ok := providerCodes[k]; ok && k != "" {
			return r.bin, r.reason, true
		}
	}
	return "", "", false
}

// ClassifyBody classifies a text by the provider's error body it quotes
// alone (FindProviderError): the body's code or type (providerCodes), else
// the body's own HTTP status (StatusReason), refined by the text as
// ClassifyText refines; status is the HTTP status the agent's wording
// names (0 if none), which a body's type or code keeps. ok is false when
// the text holds no body, or one that says none of these.
//
// It is step 1 of ClassifyText with the body's status added, for an agent
// whose own wordings would take the text first and say less: Codex puts
// "stream disconnected before completion: " (a retryable server error of
// its own) before whatever the stream's failure said, a body included.
func ClassifyBody(text string, status int) (c TextClass, ok bool) {
	pe, found := FindProviderError(text)
	if !found {
		return c, false
	}
	c.Body = &pe
	bin, reason, known := bodyCode(pe)
	switch {
	case known:
		c.Bin, c.Reason, c.Status = bin, reason, cmp.Or(status, pe.Status)
	case pe.Status != 0:
		if bin, reason = StatusReason(pe.Status); bin == "" {
			return TextClass{}, false
		}
		c.Bin, c.Reason, c.Status = bin, reason, pe.Status
	default:
		return TextClass{}, false
	}
	c = refine(c, text)
	c.RetryAfterS = TryAgainIn(text)
	if pe.ResetsInS > 0 && pe.ResetsInS <= MaxWaitS {
		c.RetryAfterS = pe.ResetsInS
	}
	return c, true
}

// refine narrows a class read from a status or a body's generic type by
// what the text says: an overflow, quota or a missing model. A model the
// text says is unknown, unsupported or too new for the client is
// bad_model on a 404, on no status, and on a 400 whose body is an
// invalid_request_error (the Responses error event's); the row's hint
// comes with it.
func refine(c TextClass, text string) TextClass {
	if c.Reason == events.ReasonBadRequest && c.Body != nil && c.Body.Type == "not_found_error" && strings.HasPrefix(c.Body.Message, "model:") {
		c.Reason = events.ReasonBadModel // Anthropic: {"type":"not_found_error","message":"model: x"}
		return c
	}
	if c.Reason == events.ReasonBadRequest && c.Status == 404 && strings.Contains(strings.ToLower(text), "model") {
		c.Reason = events.ReasonBadModel // a 404 that names a model
		return c
	}
	r := Match(ProviderRules, text)
	if r == nil {
		return c
	}
	switch {
	case r.Reason == events.ReasonContextOverflow && c.Bin == events.BinInvalidInput:
		c.Reason = r.Reason
	case r.Reason == events.ReasonQuota && (c.Reason == events.ReasonRateLimit || c.Reason == events.ReasonBadRequest || c.Reason == events.ReasonAuth):
		c.Bin, c.Reason = r.Bin, r.Reason
	case r.Reason == events.ReasonBadModel && c.Reason == events.ReasonBadRequest &&
		(c.Status == 404 || c.Status == 0 || c.Status == 400 && c.Body != nil && c.Body.Type == "invalid_request_error"):
		c.Reason = r.Reason
	}
	if c.Bin == r.Bin && c.Reason == r.Reason {
		c.Hint = r.Hint
	}
	return c
}

// tryAgainRe finds the phrase that names a wait in a provider's or CLI's
// message, and what follows it: "try again in 20s", "Please try again in
// 6m0s", "try again in 2 hours 5 minutes", "retry in 20.5s", "retry after
// 30 seconds", "retry-after: 7".
var tryAgainRe = regexp.MustCompile(`(?i)(try again in|retry in|retry after|retry-after:?)\s+(.{0,80})`)

// waitPart is one number and its unit in a wait: "2 hours", "5m", "0s",
// "1.5 days".
var waitPart = regexp.MustCompile(`(?i)^\s*,?\s*(?:and\s+)?(\d+(?:\.\d+)?)\s*(milliseconds?|ms|minutes?|mins?|m|seconds?|secs?|s|hours?|hrs?|h|days?|d|weeks?|w)`)

// unitSeconds are the seconds of each unit's first letter, milliseconds
// apart.
var unitSeconds = map[byte]float64{'s': 1, 'm': 60, 'h': 3600, 'd': 86400, 'w': 7 * 86400}

// TryAgainIn returns the seconds a message says to wait ("try again in
// 20s", "6m0s", "2 hours 5 minutes", "3 days"), 0 when it names none: a
// number without a time unit is no wait ("retry in 5 attempts"), but for
// "retry-after:", a header's seconds. A wait over MaxWaitS is none.
func TryAgainIn(text string) float64 {
	m := tryAgainRe.FindStringSubmatch(text)
	if m == nil {
		return 0
	}
	rest, wait, parts := m[2], 0.0, 0
	for {
		// Go's durations run the parts together: "1m30s", "6m0s".
		p := waitPart.FindStringSubmatch(rest)
		if p == nil {
			break
		}
		if after := rest[len(p[0]):]; after != "" && (after[0]|0x20 >= 'a' && after[0]|0x20 <= 'z') {
			break // "5 attempts", "2025-01-01" is no unit
		}
		v, _ := strconv.ParseFloat(p[1], 64)
		unit := strings.ToLower(p[2])
		switch {
		case unit == "ms" || strings.HasPrefix(unit, "milli"):
			wait += v / 1000
		default:
			wait += v * unitSeconds[unit[0]]
		}
		parts++
		rest = rest[len(p[0]):]
	}
	if parts == 0 && strings.HasPrefix(strings.ToLower(m[1]), "retry-after") {
		if v, err := strconv.ParseFloat(strings.Fields(m[2] + " ")[0], 64); err == nil {
			wait = v
		}
	}
	if wait <= 0 || wait > MaxWaitS {
		return 0
	}
	return wait
}

// MaxWaitS bounds the waits hub believes a text or body names: 31 days,
// the longest window of a plan's usage limit, in seconds; a longer one is
// taken for none.
const MaxWaitS = 31 * 24 * 3600

// statusInTextRe finds an HTTP status written with its reason phrase
// ("500 Internal Server Error"), after "HTTP", "HTTP/1.1" or "status"
// ("HTTP 504", "status 429", "HTTP/2 503").
var statusInTextRe = regexp.MustCompile(`(?i)(?:\b(?:HTTP(?:/[\d.]+)?|status)[ :]*([1-5]\d\d)\b|\b([45]\d\d) (?:Bad Request|Unauthorized|Payment Required|Forbidden|Not Found|Request Entity Too Large|Too Many Requests|Internal Server Error|Bad Gateway|Service Unavailable|Gateway Time-?out))`)

// statusInText returns the first failed HTTP status (400 to 599) a text
// names that way, 0 if none: "exit status 127" or a 1xx–3xx before it
// does not count, nor a port ("http://127.0.0.1:5000").
func statusInText(text string) int {
	for _, m := range statusInTextRe.FindAllStringSubmatchIndex(text, 8) {
		digits := text[max(m[2], m[4]):max(m[3], m[5])]
		if start := max(m[2], m[4]); start > 0 && (text[start-1] == ':' || text[start-1] == '.') {
			continue // a port or an address
		}
		if n, _ := strconv.Atoi(digits); n >= 400 && n <= 599 {
			return n
		}
	}
	return 0
}
