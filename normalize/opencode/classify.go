package opencode

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// ToolKind maps an OpenCode built-in tool name to its SPEC §3 kind. Names
// from OpenCode 1.18's tool registry; anything else (MCP tools are named
// "<server>_<tool>", plugins choose their own) is "other".
func ToolKind(name string) events.ToolKind {
	switch strings.ToLower(name) {
	case "bash", "shell":
		return events.ToolShell
	case "read", "list", "ls", "lsp", "todoread":
		return events.ToolRead
	case "write":
		return events.ToolWrite
	case "edit", "multiedit", "patch", "apply_patch":
		return events.ToolEdit
	case "glob", "grep", "codesearch":
		return events.ToolSearch
	case "webfetch", "websearch":
		return events.ToolWeb
	case "task":
		return events.ToolTask
	}
	return events.ToolOther
}

// Hints for the failures OpenCode reports.
const (
	hintAuth     = "check the provider's API key (opencode auth login, or the apiKey in opencode's config)"
	hintRate     = "wait and retry, or lower the request rate"
	hintQuota    = "check the provider account's billing and quota"
	hintServer   = "the provider failed; retry later"
	hintOverload = "the provider is overloaded; retry later or pick another model"
	hintOverflow = "shorten the prompt or the files in context, or start a new session"
	hintNetwork  = "check the provider's base URL and the network, then retry"
	hintModel    = "pass --model provider/model naming a model configured for opencode"
	hintConfig   = "configure a provider for opencode (opencode auth login, or its config file)"
)

// Classify maps an OpenCode error object ({name, data{message, statusCode,
// isRetryable, responseBody, responseHeaders}}) to hub's error (SPEC §4): the
// error name and HTTP status (as normalize.StatusReason maps it) first, the
// message and response body after. It never returns nil.
func Classify(e gjson.Result) *events.Error {
	name := e.Get("name").String()
	data := e.Get("data")
	msg := data.Get("message").String()
	if msg == "" {
		msg = e.Get("message").String()
	}
	body := data.Get("responseBody").String()
	code := data.Get("metadata.code").String() // e.g. ProviderHeaderTimeoutError
	status := int(data.Get("statusCode").Int())
	_, byStatus := normalize.StatusReason(status)
	text := msg + " " + body
	message := strings.TrimSpace(name + ": " + msg)
	if status > 0 {
		message = fmt.Sprintf("%s (HTTP %d)", message, status)
	}
	message = normalize.Shorten(message, 1000)

	mk := func(bin events.Bin, reason events.Reason, hint string) *events.Error {
		err := events.NewError(bin, reason, hint, "%s", message).WithHTTPStatus(status)
		if ra := retryAfter(data.Get("responseHeaders")); ra > 0 {
			err.WithRetryAfter(ra)
		}
		return err
	}
	switch {
	case name == "ContextOverflowError" || isOverflow(text):
		return mk(events.BinInvalidInput, events.ReasonContextOverflow, hintOverflow)
	case name == "ProviderAuthError" || byStatus == events.ReasonAuth:
		return mk(events.BinUnavailable, events.ReasonAuth, hintAuth)
	case name == "MessageAbortedError":
		return mk(events.BinCancelled, events.ReasonAgentAborted, "the agent aborted the request; rerun")
	case name == "ProviderModelNotFoundError" || name == "ModelNotFoundError" ||
		(status == 404 && normalize.ContainsFold(text, "model")):
		return mk(events.BinInvalidInput, events.ReasonBadModel, hintModel)
	case byStatus == events.ReasonQuota || byStatus == events.ReasonRateLimit && normalize.ContainsFold(text, "insufficient_quota", "quota", "billing"):
		return mk(events.BinUnavailable, events.ReasonQuota, hintQuota)
	case byStatus == events.ReasonRateLimit:
		return mk(events.BinUnavailable, events.ReasonRateLimit, hintRate)
	case byStatus == events.ReasonOverloaded || normalize.ContainsFold(text, "overloaded"):
		return mk(events.BinUnavailable, events.ReasonOverloaded, hintOverload)
	case byStatus == events.ReasonServer:
		return mk(events.BinUnavailable, events.ReasonServer, hintServer)
	case byStatus == events.ReasonBadRequest:
		return mk(events.BinInvalidInput, events.ReasonBadRequest, "read the provider's message and fix the request")
	case code == "ProviderHeaderTimeoutError" || code == "ProviderResponseStreamError" || normalize.IsNetworkError(text):
		return mk(events.BinUnavailable, events.ReasonNetwork, hintNetwork)
	}
	// An error the provider sent inside the stream: OpenCode 1.18.33 makes
	// it an UnknownError whose message is the provider's error object
	// itself, {"message":…,"type":"server_error","code":…} (testdata/opencode
	// streamerror-logs, streammodel-logs). Its code or type decides.
	if c, ok := normalize.ClassifyBody(text, status); ok {
		hint := cmp.Or(c.Hint, hintFor(c.Reason))
		if r := normalize.Match(textRules, text); r != nil && r.Bin == c.Bin && r.Reason == c.Reason {
			hint = r.HintOr(hints, hint) // OpenCode's own terms for it
		}
		err := mk(c.Bin, c.Reason, hint).WithHTTPStatus(c.Status)
		if err.RetryAfterS == nil && c.RetryAfterS > 0 {
			err.WithRetryAfter(c.RetryAfterS)
		}
		return err
	}
	if name == "UnknownError" && normalize.ContainsFold(msg, "unexpected server error") {
		// OpenCode 1.18 reports an unknown provider or model this way, and
		// other internal failures too; the cause is only in its own logs.
		return mk(events.BinAgentFailed, events.ReasonErrorEvent,
			"opencode hid the cause: check that --model names a provider/model it knows (`opencode models`), then rerun opencode by hand with --print-logs")
	}
	return mk(events.BinAgentFailed, events.ReasonErrorEvent, "read the message; run opencode by hand for details")
}

func isOverflow(s string) bool {
	return normalize.ContainsFold(s, "context_length_exceeded", "maximum context length",
		"prompt is too long", "context window", "too many tokens")
}

// retryAfter reads Retry-After (seconds) or retry-after-ms from a headers
// object; 0 when absent.
func retryAfter(h gjson.Result) float64 {
	if !h.IsObject() {
		return 0
	}
	var s, ms string
	h.ForEach(func(k, v gjson.Result) bool {
		switch strings.ToLower(k.String()) {
		case "retry-after":
			s = v.String()
		case "retry-after-ms":
			ms = v.String()
		}
		return true
	})
	if v, err := strconv.ParseFloat(ms, 64); err == nil && v > 0 {
		return v / 1000
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil && v > 0 {
		return v
	}
	return 0
}

// textRules are OpenCode's own wordings of failures it reports only as
// text: stderr when it exits ("Error: …"), its log lines, the cause behind
// an "Unexpected server error". Each row's example is tested
// (TestTextRules); Seen is the version it was read from.
var textRules = []normalize.TextRule{
	// ChatGPT's Codex backend refuses a model to an older client (a 400
	// invalid_request_error, inside the stream): OpenCode makes it an
	// UnknownError whose message is the error object, and logs its
	// fields (testdata/opencode/streammodel-logs).
	{Any: []string{"model requires a newer version of"},
		Bin: events.BinInvalidInput, Reason: events.ReasonBadModel, Seen: "opencode 1.18.33 (the provider's text)",
		Example: "The 'mock-model' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.",
		Hint:    "upgrade opencode (npm i -g opencode-ai@latest): the provider serves this model only to a newer client; or pass --model naming another model"},
	{Any: []string{"ProviderModelNotFoundError", "model not found", "ModelNotFoundError"},
		Bin: events.BinInvalidInput, Reason: events.ReasonBadModel, Seen: "opencode 1.18.33",
		Example: "ProviderModelNotFoundError: Model not found: nope/x. Did you mean: standardcompute?"},
	{Any: []string{"is not valid JSON", "Config file at", "Configuration is invalid", "ConfigInvalidError", "ConfigJsonError"},
		Bin: events.BinUnavailable, Reason: events.ReasonNotConfigured, Seen: "opencode 1.18.33",
		Example: "Error: Config file at /home/u/.config/opencode/opencode.json is not valid JSON(C):",
		Hint:    "fix the config file the message names (opencode.json, or the file OPENCODE_CONFIG names), then rerun"},
	{Any: []string{"ProviderInitError", "no provider", "API key is missing", "missing api key"},
		Bin: events.BinUnavailable, Reason: events.ReasonNotConfigured, Seen: "opencode 1.18.33",
		Example: "ProviderInitError: failed to initialize provider mock"},
	{Any: []string{"ProviderAuthError", "invalid api key", "incorrect api key"},
		Bin: events.BinUnavailable, Reason: events.ReasonAuth, Seen: "opencode 1.18.33",
		Example: "ProviderAuthError: Unauthorized"},
	{Any: []string{"session not found", "NotFoundError: Session"},
		Bin: events.BinInvalidInput, Reason: events.ReasonBadSession, Seen: "opencode 1.18.33",
		Example: "Error: Session not found",
		Hint:    "pass a session id that opencode knows (from run.finished.session_id)"},
	{Any: []string{"context_length_exceeded", "maximum context length", "prompt is too long", "context window", "too many tokens"},
		Bin: events.BinInvalidInput, Reason: events.ReasonContextOverflow, Seen: "opencode 1.18.33 (the provider's text)",
		Example: "AI_APICallError: This model's maximum context length is 128000 tokens"},
	{Any: []string{"Cannot connect to API", "Unable to connect"},
		Bin: events.BinUnavailable, Reason: events.ReasonNetwork, Seen: "opencode 1.18.33",
		Example: "Cannot connect to API: Unable to connect. Is the computer able to access the url?"},
}

// classifyText recognizes failures OpenCode reports only as text (it
// prints "Error: …" on stderr and exits; its log lines): its own wordings
// (textRules), then the network phrases. nil when nothing matches.
func classifyText(s string) *events.Error {
	if s == "" {
		return nil
	}
	if r := normalize.Match(textRules, s); r != nil {
		return events.NewError(r.Bin, r.Reason, r.HintOr(hints, hintOther), "%s", s)
	}
	if normalize.IsNetworkError(s) {
		return events.NewError(events.BinUnavailable, events.ReasonNetwork, hintNetwork, "%s", s)
	}
	return nil
}
