package claude

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// ToolKind maps a Claude Code tool name to its SPEC §3 kind (names of
// Claude Code 2.1's built-in tools; MCP tools are named mcp__<server>__<tool>).
func ToolKind(name string) events.ToolKind {
	switch name {
	case "Bash", "BashOutput", "KillShell", "KillBash":
		return events.ToolShell
	case "Read", "LS", "NotebookRead":
		return events.ToolRead
	case "Write":
		return events.ToolWrite
	case "Edit", "MultiEdit", "NotebookEdit":
		return events.ToolEdit
	case "Glob", "Grep":
		return events.ToolSearch
	case "WebFetch", "WebSearch":
		return events.ToolWeb
	case "Task", "Agent":
		return events.ToolTask
	}
	if strings.HasPrefix(name, "mcp__") {
		return events.ToolMCP
	}
	return events.ToolOther
}

// Hints for the failures Claude Code reports.
const (
	hintAuth     = "check ANTHROPIC_API_KEY, or log in with `claude` (/login) or run `claude setup-token`"
	hintLogin    = "log in: run `claude` and /login, or `claude setup-token`, or set ANTHROPIC_API_KEY"
	hintQuota    = "check the Anthropic account's billing and credit"
	hintRate     = "wait and retry, or lower the request rate"
	hintServer   = "the API failed; retry later"
	hintOverload = "the API is overloaded; retry later or pick another model"
	hintOverflow = "shorten the prompt or the files in context, or start a new session"
	hintNetwork  = "check ANTHROPIC_BASE_URL and the network, then retry"
	hintRequest  = "read the API's message and fix the request (model name, options)"
	hintModel    = "pass --model naming a model the API serves (claude --model accepts aliases such as sonnet and full names)"
	hintTurns    = "raise --max-turns, or split the task"
	hintBudget   = "raise the budget, or split the task"
)

// statusRe finds "API Error: 401" style statuses in result text.
var statusRe = regexp.MustCompile(`API Error: (\d{3})`)

// Outcome implements normalize.Decoder. Claude's structured fields decide
// first (result subtype, is_error, api_error_status, the synthetic message's
// error code, terminal_reason), its result text after, the exit status and
// stderr last; the exit status alone never makes a run a success.
func (d *Decoder) Outcome(end normalize.End) normalize.Outcome {
	out := normalize.Outcome{Text: d.lastText, SessionID: d.sessionID}
	r := d.result
	if !r.Exists() {
		out.Error = d.noResult(end)
		return out
	}
	out.Totals = d.totals()
	// With --json-schema the answer is the StructuredOutput tool's input,
	// in structured_output; a success without it gave none (2.1.328 ends
	// a turn where the model never called the tool as a success).
	if so := r.Get("structured_output"); so.Exists() && so.Type != gjson.Null {
		out.Answer = json.RawMessage(so.Raw)
	}
	if t := r.Get("result"); t.Type == gjson.String && t.String() != "" && !r.Get("is_error").Bool() {
		out.Text = t.String()
	}
	switch sub := r.Get("subtype").String(); {
	case sub == "error_max_turns":
		out.Error = events.NewError(events.BinBudgetExceeded, events.ReasonTurns, hintTurns,
			"claude reached its maximum number of turns (%d)", r.Get("num_turns").Int())
	case sub == "error_max_structured_output_retries":
		// The model called StructuredOutput with input that failed the
		// schema MAX_STRUCTURED_OUTPUT_RETRIES times (default 5).
		out.Error = events.NewError(events.BinAgentFailed, events.ReasonInvalidOutput,
			"say more about the shape in the prompt, or loosen the schema",
			"claude gave no answer matching --schema: %s", normalize.Shorten(d.errorsText(), 1000))
	case sub == "error_max_budget_usd":
		out.Error = events.NewError(events.BinBudgetExceeded, events.ReasonCost, hintBudget,
			"claude reached its budget (total cost $%.4f)", r.Get("total_cost_usd").Float())
	case r.Get("is_error").Bool() || strings.HasPrefix(sub, "error"):
		out.Error = d.classify()
		if at := d.resetsAt; at > 0 && out.Error.Bin == events.BinUnavailable &&
			(out.Error.Reason == events.ReasonRateLimit || out.Error.Reason == events.ReasonQuota) {
			out.RetryAt = func(time.Time) time.Time { return time.Unix(at, 0) }
		}
	default:
		out.OK = true
	}
	return out
}

// errorsText is the result's errors, "; "-joined.
func (d *Decoder) errorsText() string {
	var errs []string
	for _, e := range d.result.Get("errors").Array() {
		errs = append(errs, e.String())
	}
	return strings.Join(errs, "; ")
}

// totals reads the result's authoritative usage and cost.
func (d *Decoder) totals() *normalize.Totals {
	r := d.result
	t := &normalize.Totals{Usage: tokens(r.Get("usage")), CostSource: events.CostUnknown, Turns: r.Get("num_turns").Int()}
	if c := r.Get("total_cost_usd"); c.Type == gjson.Number {
		v := c.Float()
		t.Usage.CostUSD = &v
		t.CostSource = events.CostReported
	}
	return t
}

// classify maps a failed result to hub's error.
func (d *Decoder) classify() *events.Error {
	r := d.result
	text := r.Get("result").String()
	if text == "" { // error_during_execution puts its reasons in "errors"
		text = d.errorsText()
	}
	status := d.apiStatus
	if s := r.Get("api_error_status"); s.Type == gjson.Number {
		status = int(s.Int())
	}
	if status == 0 {
		if m := statusRe.FindStringSubmatch(text); m != nil {
			status, _ = strconv.Atoi(m[1])
		}
	}
	code := d.synthetic
	_, byStatus := normalize.StatusReason(status)
	reason := r.Get("terminal_reason").String()
	msg := normalize.Shorten(strings.TrimSpace(text), 1000)
	if msg == "" {
		msg = "claude reported an error (" + r.Get("subtype").String() + ")"
	}
	mk := func(bin events.Bin, rs events.Reason, hint string) *events.Error {
		e := events.NewError(bin, rs, hint, "%s", msg).WithHTTPStatus(status)
		if ra := d.retryAfter(); ra > 0 {
			e.WithRetryAfter(ra)
		}
		return e
	}
	switch {
	case normalize.ContainsFold(text, "no conversation found", "is not a uuid", "session not found"):
		return mk(events.BinInvalidInput, events.ReasonBadSession,
			"pass a session id Claude Code knows (run.finished.session_id of an earlier run in the same directory)")
	case reason == "prompt_too_long" || normalize.ContainsFold(text, "prompt is too long", "context window", "context_length_exceeded"):
		return mk(events.BinInvalidInput, events.ReasonContextOverflow, hintOverflow)
	case normalize.ContainsFold(text, "not logged in"):
		return mk(events.BinUnavailable, events.ReasonAuth, hintLogin)
	case code == "authentication_failed" || byStatus == events.ReasonAuth || normalize.ContainsFold(text, "invalid api key"):
		return mk(events.BinUnavailable, events.ReasonAuth, hintAuth)
	case code == "billing_error" || byStatus == events.ReasonQuota || normalize.ContainsFold(text, "credit balance"):
		return mk(events.BinUnavailable, events.ReasonQuota, hintQuota)
	case code == "rate_limit" || byStatus == events.ReasonRateLimit:
		return mk(events.BinUnavailable, events.ReasonRateLimit, hintRate)
	case byStatus == events.ReasonOverloaded || code == "overloaded_error" || normalize.ContainsFold(text, "overloaded"):
		return mk(events.BinUnavailable, events.ReasonOverloaded, hintOverload)
	case code == "model_not_found" || status == 404 && normalize.ContainsFold(text, "model"):
		// 2.1.328: "There's an issue with the selected model (x). It may
		// not exist or you may not have access to it."
		return mk(events.BinInvalidInput, events.ReasonBadModel, hintModel)
	case status == 0 && normalize.IsNetworkError(text):
		// Claude Code calls a connection that failed before any response
		// a server_error (2.1.328: "API Error: Connection refused — …
		// (ECONNREFUSED)", "Connection dropped (ECONNRESET)", "Connection
		// to the API was lost (ECONNRESET)"), with no status.
		return mk(events.BinUnavailable, events.ReasonNetwork, hintNetwork)
	case code == "server_error" || byStatus == events.ReasonServer:
		return mk(events.BinUnavailable, events.ReasonServer, hintServer)
	case code == "invalid_request" || byStatus == events.ReasonBadRequest:
		if r := normalize.Match(normalize.ProviderRules, text); r != nil && r.Reason == events.ReasonBadModel {
			// A 400 that says the model is unknown, unsupported or
			// needs a newer client (testdata/claude/streammodel).
			return mk(events.BinInvalidInput, events.ReasonBadModel, r.HintOr(hints, hintModel))
		}
		return mk(events.BinInvalidInput, events.ReasonBadRequest, hintRequest)
	}
	return mk(events.BinAgentFailed, events.ReasonErrorEvent, "read the message; run claude by hand for details")
}

// retryAfter is the last api_retry's delay in seconds, when it was for a
// rate limit.
func (d *Decoder) retryAfter() float64 {
	if _, r := normalize.StatusReason(int(d.lastRetry.Get("error_status").Int())); d.lastRetry.Exists() && r == events.ReasonRateLimit {
		return d.lastRetry.Get("retry_delay_ms").Float() / 1000
	}
	return 0
}

// noResult classifies a run that ended without a result event.
func (d *Decoder) noResult(end normalize.End) *events.Error {
	tail := normalize.CleanText(end.Stderr)
	last := normalize.Shorten(normalize.LastLine(tail), 600)
	if r := normalize.Match(textRules, tail); r != nil {
		return events.NewError(r.Bin, r.Reason, r.HintOr(hints, hintRequest), "%s", last)
	}
	if c, ok := normalize.ClassifyText(tail, 0, nil); ok && c.Bin == events.BinUnavailable {
		return events.NewError(c.Bin, c.Reason, hintFor(c.Reason), "%s", last).WithHTTPStatus(c.Status)
	}
	switch {
	case end.Signal != "":
		return events.NewError(events.BinAgentFailed, events.ReasonCrashed,
			"rerun; if it repeats, run claude by hand to see why it dies",
			"claude was killed by %s before its result%s", end.Signal, normalize.Suffix(last))
	case end.ExitCode != nil && *end.ExitCode != 0:
		return events.NewError(events.BinAgentFailed, events.ReasonExitStatus,
			"read the message; run claude by hand with the same arguments for details",
			"claude exited with status %d without a result%s", *end.ExitCode, normalize.Suffix(last))
	}
	return events.NewError(events.BinProtocol, events.ReasonNoResult,
		"rerun; if it repeats, report it with the --raw-log transcript",
		"claude exited 0 without a result event%s", normalize.Suffix(last))
}

// textRules are Claude Code's own wordings of the failures it reports only
// on stderr, exiting before any result; each row's example is tested
// (TestTextRules), Seen is the version it was read from. After them, the
// providers' wordings and the network phrases (normalize.ClassifyText).
var textRules = []normalize.TextRule{
	// It checks a --json-schema with Ajv (draft-07, strict: an unknown
	// keyword is an error) before any request.
	{Any: []string{"--json-schema is not valid JSON", "--json-schema must be", "--json-schema is not a valid JSON Schema"},
		Bin: events.BinInvalidInput, Reason: events.ReasonBadRequest, Seen: "claude 2.1.328",
		Example: "Error: --json-schema is not a valid JSON Schema: unknown keyword \"frob\"",
		Hint:    "give claude a schema its validator takes (draft-07 keywords, no $schema of another draft), or use another agent"},
	{Any: []string{"not logged in", "please run /login"},
		Bin: events.BinUnavailable, Reason: events.ReasonAuth, Seen: "claude 2.1.328",
		Example: "Not logged in · Please run /login", Hint: hintLogin},
	{Any: []string{"invalid api key"},
		Bin: events.BinUnavailable, Reason: events.ReasonAuth, Seen: "claude 2.1.328",
		Example: "Invalid API key · Fix external API key"},
}

// hints are Claude Code's hints by reason (hintFor).
var hints = normalize.Hints{
	events.ReasonAuth: hintAuth, events.ReasonQuota: hintQuota, events.ReasonRateLimit: hintRate,
	events.ReasonOverloaded: hintOverload, events.ReasonServer: hintServer, events.ReasonNetwork: hintNetwork,
}

// hintFor is the hint of a reason of Claude Code's failures.
func hintFor(r events.Reason) string {
	return hints.For(r, "read the message; run claude by hand for details")
}
