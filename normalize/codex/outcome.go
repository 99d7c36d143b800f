package codex

import (
	"cmp"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Hints for the failures Codex reports.
const (
	hintAuth     = "check the API key Codex sends (the model provider's env_key, or `codex login`)"
	hintConfig   = "fix what the message names: the environment variable of the provider's key, or $CODEX_HOME/config.toml (default ~/.codex/config.toml)"
	hintRate     = "wait and retry, or lower the request rate"
	hintQuota    = "check the account's plan, billing and usage limits; retry after the reset time"
	hintServer   = "the provider failed; retry later"
	hintOverload = "the model is at capacity; retry later or pick another model with --model"
	hintOverflow = "shorten the prompt or the files in context, or start a new session instead of resuming"
	hintNetwork  = "check the provider's base_url in $CODEX_HOME/config.toml and the network, then retry"
	hintModel    = "pass --model naming a model the provider serves"
	hintSession  = "pass a session id Codex knows (run.finished.session_id of an earlier run, same CODEX_HOME)"
	hintRequest  = "read the provider's message and fix the request or the model provider config"
	hintUpgrade  = "upgrade Codex (npm i -g @openai/codex@latest): the provider serves this model only to a newer version; or pass --model naming a model this one supports"
	hintGeneric  = "read the message; run codex exec by hand with the same arguments for details"
)

// hints are Codex's hints by reason, for a failure its provider's error
// body decides (Classify).
var hints = normalize.Hints{
	events.ReasonAuth: hintAuth, events.ReasonNotConfigured: hintConfig, events.ReasonRateLimit: hintRate,
	events.ReasonQuota: hintQuota, events.ReasonServer: hintServer, events.ReasonOverloaded: hintOverload,
	events.ReasonContextOverflow: hintOverflow, events.ReasonNetwork: hintNetwork, events.ReasonBadModel: hintModel,
	events.ReasonBadSession: hintSession, events.ReasonBadRequest: hintRequest,
}

// rule is one row of the outcome table: a message that contains any of the
// patterns (case-insensitively) is this bin and reason; so is, in a row
// with byStatus, one whose HTTP status (HTTPStatus) normalize.StatusReason
// gives the row's reason, and in a row with network, one without a status
// that normalize.IsNetworkError recognizes. Seen is the version the wording
// was read from; example is a message the row takes (TestRules).
type rule struct {
	patterns []string
	byStatus bool
	network  bool
	bin      events.Bin
	reason   events.Reason
	hint     string
	seen     string
	example  string
}

// matches reports whether the row takes message, whose HTTP status is status
// (0 for none).
func (r rule) matches(message string, status int) bool {
	if r.byStatus {
		if _, reason := normalize.StatusReason(status); reason == r.reason {
			return true
		}
	}
	return r.network && status == 0 && normalize.IsNetworkError(message) || normalize.ContainsFold(message, r.patterns...)
}

// rules map Codex's English failure messages (codex-cli 0.169.0, read from
// the real binary against hub's mock server on 2026-11-30 and 2026-12-01,
// and from the messages in codex-rs/core's error types) to SPEC §4 bins.
// The first row that matches wins, so more specific rows come first. The
// HTTP statuses are hub's one table (normalize.StatusReason), the network
// phrases its one list (normalize.IsNetworkError). These texts change
// between Codex versions: every row has an example, tested.
var rules = []rule{
	{patterns: []string{"ran out of room in the model's context window", "context_length_exceeded",
		"exceeds the context window"}, bin: events.BinInvalidInput, reason: events.ReasonContextOverflow, hint: hintOverflow,
		seen: "codex 0.169.0", example: "Codex ran out of room in the model's context window. Start a new thread or clear earlier history before retrying."},
	{patterns: []string{"input_too_large", "exceeds the maximum length"}, bin: events.BinInvalidInput, reason: events.ReasonPromptTooLarge,
		hint: "put the material in files in the working directory and refer to them in a short prompt",
		seen: "codex 0.169.0", example: "Input exceeds the maximum length of 1048576 characters."},
	// ChatGPT's Codex backend refuses a model to an older Codex: a 400
	// invalid_request_error, as the Responses stream's error event (its
	// body decides first, see Classify) or as this text alone.
	{patterns: []string{"model requires a newer version of codex"}, bin: events.BinInvalidInput, reason: events.ReasonBadModel, hint: hintUpgrade,
		seen:    "codex 0.169.0 (the Responses error event, in response.failed or a 400's body)",
		example: "The 'gpt-5.5' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again."},
	{patterns: []string{"invalid_api_key", "incorrect api key"}, byStatus: true,
		bin: events.BinUnavailable, reason: events.ReasonAuth, hint: hintAuth,
		seen: "codex 0.169.0", example: "unexpected status 401 Unauthorized: Incorrect API key provided, url: http://127.0.0.1:1/v1/responses"},
	{patterns: []string{"missing environment variable", "error loading config", "is no longer supported", "model provider `"},
		bin: events.BinUnavailable, reason: events.ReasonNotConfigured, hint: hintConfig,
		seen: "codex 0.169.0", example: "Error: Model provider `nope` not found"},
	{patterns: []string{"insufficient_quota", "exceeded your current quota", "quota exceeded",
		"out of credits", "usage not included", "insufficient credits"}, byStatus: true, bin: events.BinUnavailable, reason: events.ReasonQuota, hint: hintQuota,
		seen: "codex 0.169.0", example: "Quota exceeded. Check your plan and billing details."},
	// A plan's usage limit lifts on a clock ("You've hit your usage
	// limit. … try again at 10:14 PM"; without a time on some plans).
	{patterns: []string{"rate limit", "usage limit"}, byStatus: true, bin: events.BinUnavailable, reason: events.ReasonRateLimit, hint: hintRate,
		seen: "codex 0.169.0", example: "exceeded retry limit, last status: 429 Too Many Requests, request id: req_1"},
	{patterns: []string{"at capacity", "server_is_overloaded", "overloaded"}, byStatus: true,
		bin: events.BinUnavailable, reason: events.ReasonOverloaded, hint: hintOverload,
		seen: "codex 0.169.0", example: "Selected model is at capacity. Please try a different model."},
	// A stream that opened and then went quiet: the provider's, whatever
	// the word "timeout" says.
	{patterns: []string{"idle timeout waiting for sse"}, bin: events.BinUnavailable, reason: events.ReasonServer, hint: hintServer,
		seen: "codex 0.169.0", example: "stream disconnected before completion: idle timeout waiting for SSE"},
	// A connection that failed before any status, which Codex may call a
	// disconnected stream: "stream disconnected before completion: error
	// sending request", "…: Transport error: network error: error decoding
	// response body", "Connection failed: error sending request".
	{network: true, bin: events.BinUnavailable, reason: events.ReasonNetwork, hint: hintNetwork,
		seen: "codex 0.169.0", example: "stream disconnected before completion: error sending request"},
	{patterns: []string{"high demand", "internal server error", "stream disconnected", "response.failed event received"}, byStatus: true,
		bin: events.BinUnavailable, reason: events.ReasonServer, hint: hintServer,
		seen: "codex 0.169.0", example: "stream disconnected before completion: response.failed event received"},
	{patterns: []string{"model_not_found", "does not exist or you do not have access", "unknown model", "unsupported model"},
		bin: events.BinInvalidInput, reason: events.ReasonBadModel, hint: hintModel,
		seen: "codex 0.169.0", example: "The model `gpt-5.5` does not exist or you do not have access to it."},
	{patterns: []string{"no rollout found for thread id", "thread/resume failed", "session not found"},
		bin: events.BinInvalidInput, reason: events.ReasonBadSession, hint: hintSession,
		seen: "codex 0.169.0", example: "no rollout found for thread id 0199"},
	{byStatus: true, bin: events.BinInvalidInput, reason: events.ReasonBadRequest, hint: hintRequest,
		seen: "codex 0.169.0", example: "unexpected status 400 Bad Request: Unsupported parameter"},
}

// statusRe finds the HTTP status in Codex's messages: "unexpected status 401
// Unauthorized: …" and "exceeded retry limit, last status: 429 …".
var statusRe = regexp.MustCompile(`(?:unexpected status|last status:?)\s+(\d{3})\b`)

// Classify maps a Codex failure message (turn.failed.error.message, a
// top-level error, or stderr) to hub's error. It never returns nil: a
// message no rule knows is agent_failed/error_event. http_status is set when
// the message names one, retry_after_s when it names a wait.
//
// A provider's error body in the message decides first, by its code or
// type, else its status (normalize.ClassifyBody): Codex prints a body a
// 400 sent as it is, and what a response.failed event said after "stream
// disconnected before completion: ", which the rules would call a
// server error whatever the body says (0.169.0, testdata/codex
// streammodel: the Responses error event of a model that needs a newer
// Codex). Then the rules, in order.
func Classify(message string) *events.Error {
	msg := normalize.Shorten(strings.TrimSpace(message), 1000)
	status := HTTPStatus(message)
	if c, ok := normalize.ClassifyBody(message, status); ok {
		e := events.NewError(c.Bin, c.Reason, bodyHint(c, message), "%s", msg).WithHTTPStatus(c.Status)
		if c.RetryAfterS > 0 {
			e.WithRetryAfter(c.RetryAfterS)
		}
		return e
	}
	for _, r := range rules {
		if r.matches(message, status) {
			e := events.NewError(r.bin, r.reason, r.hint, "%s", msg).WithHTTPStatus(status)
			wait := normalize.TryAgainIn(message)
			if pe, ok := normalize.FindProviderError(message); ok && pe.ResetsInS > 0 && pe.ResetsInS <= normalize.MaxWaitS {
				wait = pe.ResetsInS // usage_limit_reached's resets_in_seconds
			}
			if wait > 0 {
				e.WithRetryAfter(wait)
			}
			return e
		}
	}
	return events.NewError(events.BinAgentFailed, events.ReasonErrorEvent, hintGeneric, "%s", msg).WithHTTPStatus(status)
}

// bodyHint is the hint of a failure a provider's body decided: that of the
// first rule whose words the message has and whose reason is the body's
// (Codex's own terms for it), else the provider's wording's, else Codex's
// hint for the reason.
func bodyHint(c normalize.TextClass, message string) string {
	for _, r := range rules {
		if r.reason == c.Reason && len(r.patterns) > 0 && normalize.ContainsFold(message, r.patterns...) {
			return r.hint
		}
	}
	return cmp.Or(c.Hint, hints.For(c.Reason, hintGeneric))
}

// HTTPStatus returns the HTTP status a Codex message names, 0 if none.
func HTTPStatus(message string) int {
	m := statusRe.FindStringSubmatch(message)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// retryAtRe finds the time a usage-limit message names (codex-rs
// core/src/error.rs, UsageLimitReachedError; 0.169.0): "try again at 10:14
// PM" today, or "try again at Dec 2nd, 2026 10:14 PM", in the machine's
// local time.
var retryAtRe = regexp.MustCompile(`(?i)try again at (?:([A-Z][a-z]{2}) (\d{1,2})(?:st|nd|rd|th)?, (\d{4}) )?(\d{1,2}):(\d{2}) ?([AP]M)`)

// RetryAt returns when a Codex message says its limit lifts, as a function
// of the time now (the message names a wall-clock time without a zone:
// Codex's and hub's local time), nil when it names none. A time of day
// alone is today's; a date that does not exist is none.
func RetryAt(message string) func(now time.Time) time.Time {
	m := retryAtRe.FindStringSubmatch(message)
	if m == nil {
		return nil
	}
	hour, _ := strconv.Atoi(m[4])
	minute, _ := strconv.Atoi(m[5])
	if hour < 1 || hour > 12 || minute > 59 {
		return nil
	}
	hour %= 12
	if strings.EqualFold(m[6], "PM") {
		hour += 12
	}
	var month time.Month
	day, year := 0, 0
	if m[1] != "" {
		t, err := time.Parse("Jan", m[1])
		if err != nil {
			return nil
		}
		month = t.Month()
		day, _ = strconv.Atoi(m[2])
		year, _ = strconv.Atoi(m[3])
	}
	if day > 0 {
		if d := time.Date(year, month, day, 0, 0, 0, 0, time.UTC); d.Day() != day {
			return nil // "Dec 32nd"
		}
	}
	return func(now time.Time) time.Time {
		now = now.Local()
		if day > 0 {
			return time.Date(year, month, day, hour, minute, 0, 0, time.Local)
		}
		// Codex names a time of day alone for a reset later the same day
		// (another day gets its date): one already past has lifted (a
		// replay, a clock that moved), it is not tomorrow's.
		return time.Date(now.Year(), now.Month(), now.Day(), hour, minute, 0, 0, time.Local)
	}
}

// reconnectRe matches Codex's retry notices: "Reconnecting... 2/5 (…)".
var reconnectRe = regexp.MustCompile(`^Reconnecting\.{0,3}\s*(\d+)/(\d+)\s*(?:\((.*)\))?`)

// Reconnect parses a top-level error that announces a retry. ok is false for
// any other message.
func Reconnect(message string) (attempt, max int, cause string, ok bool) {
	m := reconnectRe.FindStringSubmatch(message)
	if m == nil {
		return 0, 0, "", false
	}
	attempt, _ = strconv.Atoi(m[1])
	max, _ = strconv.Atoi(m[2])
	return attempt, max, m[3], true
}

// Fallback classifies a run that ended without turn.completed or
// turn.failed, from its exit status and stderr. It never returns nil.
func Fallback(end normalize.End, lastError string) *events.Error {
	tail := normalize.CleanText(end.Stderr)
	last := meaningfulStderr(tail)
	if lastError != "" {
		e := Classify(lastError)
		if e.Bin != events.BinAgentFailed {
			return e
		}
	}
	if last != "" {
		if e := Classify(last); e.Bin != events.BinAgentFailed {
			return e
		}
	}
	detail := last
	if detail == "" {
		detail = lastError
	}
	switch {
	case end.Signal != "":
		return events.NewError(events.BinAgentFailed, events.ReasonCrashed,
			"rerun; if it repeats, run codex exec by hand to see why it dies",
			"codex was killed by %s%s", end.Signal, normalize.Suffix(detail))
	case end.ExitCode != nil && *end.ExitCode != 0:
		return events.NewError(events.BinAgentFailed, events.ReasonExitStatus, hintGeneric,
			"codex exited with status %d%s", *end.ExitCode, normalize.Suffix(detail))
	default:
		return events.NewError(events.BinProtocol, events.ReasonNoResult,
			"rerun; if it repeats, report it to Codex (the turn neither completed nor failed)",
			"codex exited 0 without turn.completed or turn.failed%s", normalize.Suffix(detail))
	}
}

// meaningfulStderr returns the stderr lines worth quoting: from the first
// line that starts with "Error" (Codex's config errors explain themselves
// over several lines: "Error loading config.toml:", the file and position,
// the cause), else the last ones; at most three. Codex's "Reading additional
// input from stdin...", blank lines and anyhow's "<unknown>" backtrace
// frames are dropped.
func meaningfulStderr(s string) string {
	var keep []string
	first := -1
	for _, line := range strings.Split(s, "\n") {
		t := strings.TrimSpace(line)
		switch {
		case t == "", strings.HasPrefix(t, "Reading additional input from stdin"),
			t == "Stack backtrace:", strings.HasSuffix(t, ": <unknown>"), t == "|":
			continue
		}
		if first < 0 && strings.HasPrefix(t, "Error") {
			first = len(keep)
		}
		keep = append(keep, t)
	}
	switch {
	case first >= 0:
		keep = keep[first:min(first+3, len(keep))]
	case len(keep) > 3:
		keep = keep[len(keep)-3:]
	}
	return normalize.JoinLines(keep, 600)
}
