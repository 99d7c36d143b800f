package pi

import (
	"cmp"
	"regexp"
	"strconv"
	"strings"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// ToolKind maps a pi tool name to its SPEC §3 kind: pi 0.73.1's built-in
// tools are read, bash, edit, write, grep, find and ls; extensions and
// custom tools choose their own names and are "other".
func ToolKind(name string) events.ToolKind {
	switch name {
	case "bash":
		return events.ToolShell
	case "read":
		return events.ToolRead
	case "write":
		return events.ToolWrite
	case "edit":
		return events.ToolEdit
	case "grep", "find", "ls":
		return events.ToolSearch
	}
	return events.ToolOther
}

// isBlocked reports whether a failed tool result says an extension's
// tool_call hook blocked the call: pi's default reason, or the reason of
// hub's own extension (adapters/pi confine.ts), which starts "hub: ". A
// hook of the user's may give its own reason, which hub cannot tell from
// other failures.
func isBlocked(out string) bool {
	return strings.HasPrefix(out, "Tool execution was blocked") || strings.HasPrefix(out, "hub: ")
}

// exitRe finds the status pi's bash tool appends to a failed command's
// output: "…\n\nCommand exited with code 2".
var exitRe = regexp.MustCompile(`(?:^|\n)Command exited with code (\d+)$`)

// exitCode is a bash call's exit status: 0 when it succeeded, the status
// pi appended when it failed, unknown otherwise (timed out, aborted).
func exitCode(out string, ok bool) (int, bool) {
	if ok {
		return 0, true
	}
	if m := exitRe.FindStringSubmatch(out); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return n, true
		}
	}
	return 0, false
}

// statusRe finds the HTTP status pi-ai puts first in errorMessage ("401
// Incorrect API key provided", from the OpenAI and Anthropic SDKs' errors).
var statusRe = regexp.MustCompile(`^\s*([1-5]\d\d)\b`)

// leadingStatus returns the HTTP status errorMessage starts with, 0 if none.
func leadingStatus(msg string) int {
	if m := statusRe.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 0
}

// retriesRe is pi 0.73.1's test for errors its auto-retry takes
// (AgentSession._isRetryableError), context overflows excepted.
var retriesRe = regexp.MustCompile(`(?i)overloaded|provider.?returned.?error|rate.?limit|too many requests|429|500|502|503|504|service.?unavailable|server.?error|internal.?error|network.?error|connection.?error|connection.?refused|connection.?lost|websocket.?closed|websocket.?error|other side closed|fetch failed|upstream.?connect|reset before headers|socket hang up|ended without|http2 request did not get a response|timed? out|timeout|terminated|retry delay`)

// piRetries reports whether pi's auto-retry (when enabled) retries a call
// that failed with msg.
func piRetries(msg string) bool {
	return msg != "" && !isOverflow(msg) && retriesRe.MatchString(msg)
}

// isOverflow is pi-ai's isContextOverflow test on an error message (its
// OVERFLOW_PATTERNS less the ones that need the model's context window).
func isOverflow(msg string) bool {
	if normalize.ContainsFold(msg, "rate limit", "too many requests") {
		return false
	}
	return normalize.ContainsFold(msg, "prompt is too long", "request_too_large", "input is too long",
		"exceeds the context window", "maximum prompt length", "reduce the length of the messages",
		"maximum context length", "exceeds the available context size", "greater than the context length",
		"context window exceeds limit", "exceeded model token limit", "model_context_window_exceeded",
		"context_length_exceeded", "context length exceeded", "too many tokens", "token limit exceeded") ||
		overflowRe.MatchString(msg)
}

var overflowRe = regexp.MustCompile(`(?i)input token count.*exceeds the maximum|exceeds the limit of \d+|too large for model with \d+ maximum context length|prompt too long; exceeded (?:max )?context length`)

// Hints for the failures pi reports.
const (
	hintAuth     = "check the provider's API key: its environment variable (e.g. OPENAI_API_KEY), `pi` then /login, or apiKey in models.json under PI_CODING_AGENT_DIR (default ~/.pi/agent)"
	hintConfig   = "configure a provider for pi: set its API key variable (e.g. ANTHROPIC_API_KEY), run `pi` and /login, or add it to models.json under PI_CODING_AGENT_DIR"
	hintModel    = "pass --model provider/model naming a model pi knows (`pi --list-models`; custom providers are defined in models.json under PI_CODING_AGENT_DIR)"
	hintSession  = "pass a session id pi knows (run.finished.session_id of an earlier run in the same directory)"
	hintQuota    = "check the provider account's billing and quota"
	hintRate     = "wait and retry, or lower the request rate"
	hintServer   = "the provider failed; retry later"
	hintOverload = "the provider is overloaded; retry later or pick another model"
	hintOverflow = "shorten the prompt or the files in context, or start a new session"
	hintNetwork  = "check the provider's base URL and the network, then retry"
	hintRequest  = "read the provider's message and fix the request (model name, options)"
	hintAborted  = "pi aborted the model call; rerun"
)

// Classify maps the errorMessage of a failed pi model call to hub's error
// (SPEC §4). pi-ai (0.73.1) puts the HTTP status first ("429 You exceeded
// your current quota…", "401 Incorrect API key provided") and the
// provider's message after it, or a transport's text alone ("Connection
// error.", "terminated"). Rules, first match wins:
//
//	context overflow text (pi-ai's patterns)       invalid_input/context_overflow
//	the leading status and the provider's text     normalize.ClassifyText: a body's
//	                                               type or code, 401/403 auth, 402 or
//	                                               quota words quota, 429 rate_limit,
//	                                               503/529 overloaded, 5xx server, a
//	                                               404 naming a model bad_model, other
//	                                               4xx bad_request; then the network
//	                                               phrases, then the providers' words
//	"aborted"                                      cancelled/agent_aborted
//	anything else                                  agent_failed/error_event
//
// http_status is set from the leading status, retry_after_s from a "try
// again in 20s" the provider wrote. It never returns nil.
func Classify(msg string) *events.Error {
	status := leadingStatus(msg)
	text := normalize.Shorten(strings.TrimSpace(msg), 1000)
	if text == "" {
		text = "pi reported an error without a message"
	}
	mk := func(bin events.Bin, reason events.Reason, hint string) *events.Error {
		return events.NewError(bin, reason, hint, "%s", text).WithHTTPStatus(status)
	}
	if isOverflow(msg) {
		return mk(events.BinInvalidInput, events.ReasonContextOverflow, hintOverflow)
	}
	if c, ok := normalize.ClassifyText(msg, status, nil); ok {
		e := mk(c.Bin, c.Reason, cmp.Or(c.Hint, hintFor(c.Reason)))
		if c.RetryAfterS > 0 && (e.Retryable || e.Reason == events.ReasonQuota) {
			e.WithRetryAfter(c.RetryAfterS) // a quota that names a wait lifts then (the verdict says so)
		}
		return e
	}
	if normalize.ContainsFold(msg, "aborted") {
		return mk(events.BinCancelled, events.ReasonAgentAborted, hintAborted)
	}
	return mk(events.BinAgentFailed, events.ReasonErrorEvent, "read the message; run pi by hand with the same arguments for details")
}

// hints are pi's hints by reason (hintFor).
var hints = normalize.Hints{
	events.ReasonAuth: hintAuth, events.ReasonQuota: hintQuota, events.ReasonRateLimit: hintRate,
	events.ReasonOverloaded: hintOverload, events.ReasonServer: hintServer, events.ReasonNetwork: hintNetwork,
	events.ReasonBadModel: hintModel, events.ReasonContextOverflow: hintOverflow, events.ReasonNotConfigured: hintConfig,
}

// hintFor is the hint of a reason of pi's model-call failures.
func hintFor(r events.Reason) string { return hints.For(r, hintRequest) }

// Outcome implements normalize.Decoder. The exit status never makes a run a
// success and never turns a successful answer into a failure (pi exits 0 on
// provider errors). In order:
//
//   - no assistant message at all: the stderr text of a setup error (exit 1:
//     no API key, unknown provider, unknown session) decides, else the exit
//     status or signal, else protocol/no_result (see noResult);
//   - the last assistant message failed (stopReason "error"): Classify its
//     errorMessage, or auto_retry_end's finalError when pi gave up retrying;
//     a compaction_start{reason: "overflow"} right after it (pi's own
//     overflow verdict) makes it invalid_input/context_overflow;
//   - stopReason "aborted": cancelled/agent_aborted;
//   - stopReason "stop" or "length" followed by agent_end: ok, even when the
//     stream then ends after a compaction_start;
//   - anything else (a tool call with no answer after it, no agent_end):
//     the stream was cut; see cut.
func (d *Decoder) Outcome(end normalize.End) normalize.Outcome {
	out := normalize.Outcome{Text: d.lastText, SessionID: d.sessionID}
	switch l := d.last; {
	case d.abort != nil:
		out.Error = d.abort
	case !l.seen:
		out.Error = noResult(end)
	case l.stopReason == "error":
		msg := l.errorMessage
		if d.finalError != "" {
			msg = d.finalError
		}
		out.Error = Classify(msg)
		if d.overflowCut && out.Error.Reason != events.ReasonContextOverflow {
			out.Error = events.NewError(events.BinInvalidInput, events.ReasonContextOverflow, hintOverflow,
				"%s (pi judged it a context overflow)", out.Error.Message).WithHTTPStatus(leadingStatus(msg))
		}
	case l.stopReason == "aborted":
		msg := l.errorMessage
		if msg == "" {
			msg = "the model call was aborted"
		}
		out.Error = events.NewError(events.BinCancelled, events.ReasonAgentAborted, hintAborted, "pi: %s", normalize.Shorten(msg, 600))
	case (l.stopReason == "stop" || l.stopReason == "length") && l.ended:
		out.OK = true
	default:
		out.Error = cut(end, l.stopReason)
	}
	return out
}

// noResult classifies a run without any assistant message from its stderr
// (pi prints setup errors there and exits 1), exit status and signal.
func noResult(end normalize.End) *events.Error {
	tail := normalize.CleanText(end.Stderr)
	last := normalize.Shorten(normalize.LastLines(tail), 600)
	for i := range setupErrors {
		if line := lineWith(tail, setupErrors[i].Any...); line != "" {
			r := &setupErrors[i]
			return events.NewError(r.Bin, r.Reason, r.HintOr(hints, hintRequest), "pi: %s", normalize.Shorten(line, 600))
		}
	}
	switch {
	case end.Signal != "":
		return events.NewError(events.BinAgentFailed, events.ReasonCrashed,
			"rerun; if it repeats, run pi by hand to see why it dies",
			"pi was killed by %s before any answer%s", end.Signal, normalize.Suffix(last))
	case end.ExitCode != nil && *end.ExitCode != 0:
		return events.NewError(events.BinAgentFailed, events.ReasonExitStatus,
			"read the message; run pi by hand with the same arguments for details",
			"pi exited with status %d before any answer%s", *end.ExitCode, normalize.Suffix(last))
	}
	return events.NewError(events.BinProtocol, events.ReasonNoResult,
		"rerun; if it repeats, report it with the --raw-log transcript",
		"pi exited without any answer from the model%s", normalize.Suffix(last))
}

// setupErrors are the stderr lines pi prints when it exits before any
// model call; each row's example is tested (TestSetupErrors), Seen is the
// version it was read from.
var setupErrors = []normalize.TextRule{
	{Any: []string{"no api key found", "no models available", "api key is required"},
		Bin: events.BinUnavailable, Reason: events.ReasonNotConfigured, Seen: "pi 0.73.1",
		Example: "No API key found for anthropic."},
	// A provider pi does not know is one that is not configured: built
	// in, or defined in models.json, which pi skips without a word when it
	// is not valid JSON (testdata/pi/badconfig).
	{Any: []string{"unknown provider"},
		Bin: events.BinUnavailable, Reason: events.ReasonNotConfigured, Seen: "pi 0.73.1",
		Example: `Error: Unknown provider "nope". Use --list-models to see available providers/models.`,
		Hint:    "define the provider for pi: a built-in one with its API key variable, or a custom one in models.json under PI_CODING_AGENT_DIR (default ~/.pi/agent; pi ignores that file when it is not valid JSON); `pi --list-models` lists what pi knows"},
	{Any: []string{"model not found", "no model matching", "unknown model", `model "`},
		Bin: events.BinInvalidInput, Reason: events.ReasonBadModel, Seen: "pi 0.73.1",
		Example: `Error: Model "x" not found for provider anthropic`},
	{Any: []string{"no session found", "session file not found"},
		Bin: events.BinInvalidInput, Reason: events.ReasonBadSession, Seen: "pi 0.73.1",
		Example: "No session found matching 'abc'", Hint: hintSession},
	// pi asks on stdin whether to fork a session of another directory; with
	// no answer it exits 0 without one.
	{Any: []string{"session found in different project"},
		Bin: events.BinInvalidInput, Reason: events.ReasonBadSession, Seen: "pi 0.73.1",
		Example: "Session found in different project: /tmp/a",
		Hint:    "resume with --cwd set to the directory the session was made in (pi keeps sessions per directory)"},
	{Any: []string{"unknown option"},
		Bin: events.BinInvalidInput, Reason: events.ReasonBadRequest, Seen: "pi 0.73.1",
		Example: "Error: Unknown option --frobnicate",
		Hint:    "hub passed pi an option it does not know; check the pi version (`hub agents`)"},
}

// lineWith returns the first line of s containing any of subs (ignoring
// case), "" if none.
func lineWith(s string, subs ...string) string {
	for line := range strings.Lines(s) {
		if normalize.ContainsFold(line, subs...) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

// cut classifies a stream that ended after an assistant message that was
// not a final answer (a tool call), or before its agent_end.
func cut(end normalize.End, stopReason string) *events.Error {
	last := normalize.Shorten(normalize.LastLines(normalize.CleanText(end.Stderr)), 600)
	switch {
	case end.Signal != "":
		return events.NewError(events.BinAgentFailed, events.ReasonCrashed,
			"rerun; if it repeats, run pi by hand to see why it dies",
			"pi was killed by %s before its final answer%s", end.Signal, normalize.Suffix(last))
	case end.ExitCode != nil && *end.ExitCode != 0:
		return events.NewError(events.BinAgentFailed, events.ReasonExitStatus,
			"read the message; run pi by hand with the same arguments for details",
			"pi exited with status %d before its final answer%s", *end.ExitCode, normalize.Suffix(last))
	}
	return events.NewError(events.BinProtocol, events.ReasonNoResult,
		"rerun; if it repeats, report it with the --raw-log transcript",
		"pi's output ended after a message with stopReason %q, without a final answer%s", stopReason, normalize.Suffix(last))
}
