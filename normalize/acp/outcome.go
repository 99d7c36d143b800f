package acp

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// promptUsage reports the prompt response's usage (ACP's unstable
// PromptResponse.usage: inputTokens, outputTokens, cachedReadTokens,
// cachedWriteTokens, thoughtTokens, totalTokens, for the whole turn) as one
// usage event. inputTokens is taken as not counting the cached tokens,
// which have fields of their own. The cost is the last usage_update's, less
// what the session had cost before (the turns before a Next decoder's).
func (d *Decoder) promptUsage(dst []events.Body, u gjson.Result) []events.Body {
	step := events.Tokens{
		Input:      max(u.Get("inputTokens").Int(), 0),
		Output:     max(u.Get("outputTokens").Int(), 0),
		CacheRead:  max(u.Get("cachedReadTokens").Int(), 0),
		CacheWrite: max(u.Get("cachedWriteTokens").Int(), 0),
		Reasoning:  max(u.Get("thoughtTokens").Int(), 0),
	}
	d.total = d.total.Add(step)
	d.total.CostUSD = nil
	d.sawUsage = true
	if d.costOK {
		v, total := d.lastUSD-d.billedUSD, d.lastUSD-d.baseUSD
		step.CostUSD, d.total.CostUSD = &v, &total
		d.billedUSD = d.lastUSD
	}
	return append(dst, d.usage(step))
}

// TurnUsage is the usage of the decoder's turn as its prompt's answer
// reported it (the tokens, and the cost since the turn began when the
// agent reported the session's cost in it), with its cost source; ok is
// false when the answer reported no usage.
func (d *Decoder) TurnUsage() (usage events.Tokens, source events.CostSource, ok bool) {
	if !d.sawUsage {
		return events.Tokens{}, "", false
	}
	return d.total, d.usage(events.Tokens{}).CostSource, true
}

// usage is the usage event of step, with the running total.
func (d *Decoder) usage(step events.Tokens) events.Usage {
	source := events.CostReported
	if d.total.CostUSD == nil {
		source = events.CostUnknown
	}
	return events.Usage{Step: step, Total: d.total, CostSource: source, Model: d.model}
}

// usageUpdate takes a usage_update (ACP's unstable UsageUpdate: the
// context window's used and size tokens, and the session's cumulative cost
// {amount, currency}). Only a cost in USD is kept, for the prompt's usage
// event; the window is no token count of the turn's.
func (d *Decoder) usageUpdate(dst []events.Body, u gjson.Result) []events.Body {
	cost := u.Get("cost")
	if amt := cost.Get("amount"); amt.Type == gjson.Number && strings.EqualFold(cost.Get("currency").String(), "USD") && amt.Float() >= 0 {
		d.costOK, d.lastUSD = true, amt.Float()
	}
	return dst
}

// Status implements normalize.Decoder: terminal once the prompt was
// answered, or a request of hub's failed (the client then ends the
// conversation).
func (d *Decoder) Status() normalize.Status {
	return normalize.Status{Terminal: d.stopReason != "" || d.failed != nil}
}

// Hints for what ACP agents report.
const (
	hintAuth     = "the agent needs a login: run it once by hand to authenticate (ACP's authenticate is not driven by hub), or set its API key variable with --env"
	hintRequest  = "read the agent's message; check --acp-command and the agent's version"
	hintSession  = "pass a session id the agent knows (run.finished.session_id of an earlier run in the same --cwd)"
	hintModel    = "pass a --model the agent offers (its session/new answer lists them), or none for its default"
	hintTokens   = "the agent's own token limit ended the turn: raise it in the agent's settings, or split the task"
	hintTurns    = "the agent's own limit on model requests ended the turn: raise it in the agent's settings, or split the task"
	hintRefusal  = "the model refused the request; rephrase it"
	hintAborted  = "the agent cancelled the turn itself; rerun"
	hintNoResult = "rerun; if it repeats, report it with the --raw-log transcript"
	hintUnknown  = "the agent ended its turn with a stop reason hub does not know; read its output"
)

// stepError classifies the agent's error answer e to the client's request
// step. JSON-RPC codes: -32000 auth_required; -32002 resource not found
// (a session to load); -32601 a method the agent lacks; -32602 invalid
// params; else the message (and data) is read as a provider's failure
// (normalize.ClassifyText), else agent_failed/error_event.
func (d *Decoder) stepError(step string, e gjson.Result) *events.Error {
	code := e.Get("code").Int()
	msg := e.Get("message").String()
	if data := e.Get("data"); data.Exists() {
		if data.Type == gjson.String {
			msg += ": " + data.Str
		} else {
			msg += ": " + data.Raw
		}
	}
	msg = normalize.Shorten(strings.TrimSpace(msg), 1000)
	text := fmt.Sprintf("%s: %s failed (JSON-RPC error %d): %s", d.o.Name, step, code, msg)
	status := 0 // an HTTP status the data names (codex-acp's codex_error_info)
	for _, k := range []string{"data.codex_error_info.*.http_status_code", "data.statusCode", "data.status"} {
		if v := e.Get(k); v.Type == gjson.Number && v.Int() >= 400 && v.Int() < 600 {
			status = int(v.Int())
			break
		}
	}
	switch {
	case code == -32000:
		return events.NewError(events.BinUnavailable, events.ReasonAuth, hintAuth, "%s", text)
	case step == MethodLoad && (code == -32002 || code == -32602 || code == -32603):
		return events.NewError(events.BinInvalidInput, events.ReasonBadSession, hintSession, "%s", text)
	case step == MethodLoad && code == -32601:
		return events.NewError(events.BinInvalidInput, events.ReasonBadSession, hintSession,
			"%s (the agent cannot load sessions, so it cannot resume one)", text)
	case step == MethodSetModel:
		return events.NewError(events.BinInvalidInput, events.ReasonBadModel, hintModel, "%s", text)
	}
	if c, ok := normalize.ClassifyText(msg, status, textRules); ok {
		err := events.NewError(c.Bin, c.Reason, hintFor(c.Reason), "%s", text).WithHTTPStatus(c.Status)
		if c.RetryAfterS > 0 {
			err.RetryAfterS = &c.RetryAfterS
		}
		return err
	}
	if code == -32601 || code == -32602 || code == -32600 {
		return events.NewError(events.BinInvalidInput, events.ReasonBadRequest, hintRequest, "%s", text)
	}
	return events.NewError(events.BinAgentFailed, events.ReasonErrorEvent, hintRequest, "%s", text)
}

// textRules are ACP agents' own wordings of failures in an error answer's
// message and data, where no provider's error body or status is found;
// each row's example is tested (TestTextRules), Seen is where it was read.
var textRules = []normalize.TextRule{
	{Any: []string{"ContextOverflowError", "context exceeds model limit"},
		Bin: events.BinInvalidInput, Reason: events.ReasonContextOverflow, Seen: "opencode acp 1.18.33",
		Example: `Internal error: Session too large to compact - context exceeds model limit even after stripping media: {"service":"session","errorName":"ContextOverflowError"}`},
	{Any: []string{`"context_window_exceeded"`},
		Bin: events.BinInvalidInput, Reason: events.ReasonContextOverflow, Seen: "codex-acp 0.16.0",
		Example: `Internal error: {"message":"Codex ran out of room in the model's context window.","codex_error_info":"context_window_exceeded"}`},
}

// hintFor is the next step after a failure of reason read from text.
func hintFor(r events.Reason) string {
	switch r {
	case events.ReasonAuth:
		return hintAuth
	case events.ReasonRateLimit:
		return "wait and retry, or lower the request rate"
	case events.ReasonQuota:
		return "check the provider account's billing and quota"
	case events.ReasonOverloaded, events.ReasonServer:
		return "the provider failed; retry later"
	case events.ReasonNetwork:
		return "check the agent's provider URL and the network, then retry"
	case events.ReasonContextOverflow:
		return "shorten the prompt or the files in context, or start a new session"
	case events.ReasonBadModel:
		return hintModel
	}
	return hintRequest
}

// Outcome implements normalize.Decoder. The prompt's stop reason decides
// (ACP StopReason): end_turn is success; max_tokens and
// max_turn_requests are the agent's own limits (budget_exceeded/tokens,
// turns); refusal is agent_failed/error_event; cancelled, when hub did not
// cancel it (hub's own cause is decided first), is cancelled/agent_aborted.
// An error answer to any request decides as stepError classified it; an
// agent that ended before answering the prompt is classified from its exit.
func (d *Decoder) Outcome(end normalize.End) normalize.Outcome {
	out := normalize.Outcome{Text: d.last, SessionID: d.sessionID}
	switch {
	case d.denied != "" && (d.stopReason == "cancelled" || d.stopReason == "end_turn" && !d.textAfterDenial):
		// The agent gave up after hub rejected its request (codex-acp
		// cancels the turn; OpenCode ends it without another word).
		out.Error = events.NewError(events.BinPermissionDenied, events.ReasonToolDenied,
			"grant what the task needs with --permission (hub answers the agent's permission requests from it), or ask for a task within the grant",
			"%s: hub rejected the agent's request to run %s (not within --permission %s), and the agent ended its turn without an answer (stopReason %s)",
			d.o.Name, d.denied, d.o.Level, d.stopReason)
		return out
	}
	switch d.stopReason {
	case "end_turn":
		out.OK = true
	case "max_tokens":
		out.Error = events.NewError(events.BinBudgetExceeded, events.ReasonTokens, hintTokens, "%s: the turn ended at the agent's token limit (stopReason max_tokens)", d.o.Name)
	case "max_turn_requests":
		out.Error = events.NewError(events.BinBudgetExceeded, events.ReasonTurns, hintTurns, "%s: the turn ended at the agent's limit on model requests (stopReason max_turn_requests)", d.o.Name)
	case "refusal":
		out.Error = events.NewError(events.BinAgentFailed, events.ReasonErrorEvent, hintRefusal, "%s: the model refused (stopReason refusal)", d.o.Name)
	case "cancelled":
		out.Error = events.NewError(events.BinCancelled, events.ReasonAgentAborted, hintAborted, "%s: the turn was cancelled (stopReason cancelled) though hub did not cancel it", d.o.Name)
	case "":
		switch {
		case d.failed != nil:
			out.Error = d.failed
		default:
			out.Error = d.noResult(end)
		}
	default:
		out.Error = events.NewError(events.BinProtocol, events.ReasonMalformed, hintUnknown, "%s: unknown stopReason %q", d.o.Name, normalize.Shorten(d.stopReason, 100))
	}
	return out
}

// noResult classifies an agent that ended before it answered the prompt,
// from how it ended and the last lines of its stderr.
func (d *Decoder) noResult(end normalize.End) *events.Error {
	last := normalize.LastLines(normalize.CleanText(end.Stderr))
	where := "before it answered the prompt"
	if p := d.pending(); p != "" {
		where = "before it answered " + p
	}

	if c, ok := normalize.ClassifyText(last, 0, textRules); ok && last != "" {
		return events.NewError(c.Bin, c.Reason, hintFor(c.Reason), "%s ended %s: %s", d.o.Name, where, last).WithHTTPStatus(c.Status)
	}
	switch {
	case end.Signal != "":
		return events.NewError(events.BinAgentFailed, events.ReasonCrashed,
			"rerun; if it repeats, run the agent by hand to see why it dies",
			"%s was killed by %s %s%s", d.o.Name, end.Signal, where, normalize.Suffix(last))
	case end.ExitCode != nil && *end.ExitCode != 0:
		return events.NewError(events.BinAgentFailed, events.ReasonExitStatus,
			"read the message; run the agent's command by hand for details",
			"%s exited with status %d %s%s", d.o.Name, *end.ExitCode, where, normalize.Suffix(last))
	}
	return events.NewError(events.BinProtocol, events.ReasonNoResult, hintNoResult,
		"%s ended %s%s", d.o.Name, where, normalize.Suffix(last))
}
