package codex

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// AppServer decodes one turn of a `codex app-server` session (codex-cli
// 0.169.0; the protocol generated from that binary with `codex app-server
// generate-json-schema`, and recorded against hub's mock server in
// testdata/live/codex): the server's JSON-RPC notifications, one object a
// line, between a turn/start and its turn/completed.
//
// App-server items carry what `codex exec --json` items carry, in camelCase
// (commandExecution, aggregatedOutput, exitCode; a fileChange's kind an
// object): each is read as the exec item it corresponds to, so a tool call,
// a message and a failure mean the same in a session as in a run (Decoder).
// On top of exec's events, the app-server streams the answer
// (item/agentMessage/delta → text.delta) and reports usage as it grows
// (thread/tokenUsage/updated, the thread's running total: a usage event at
// each, so budgets hold within a turn). A turn ends at turn/completed, whose
// status is completed, failed (turn.error.message, classified as exec's
// turn.failed) or interrupted (cancelled/caller).
//
// Responses to hub's own requests (an "id" and no "method") are the
// session's (adapters/codex live), not the decoder's.
type AppServer struct{ d *Decoder }

var (
	_ normalize.Decoder   = (*AppServer)(nil)
	_ normalize.Continuer = (*AppServer)(nil)
)

// NewAppServer returns the decoder of one turn. With Options.Resume (the
// session resumed a thread with thread/resume) the first turn's usage
// includes the thread's earlier turns, as a resumed exec's does (Decoder);
// later turns go on from the turn before (Continue).
func NewAppServer(opts Options) *AppServer { return &AppServer{d: New(opts)} }

// Continue implements normalize.Continuer: prev, the decoder of the
// session's previous turn, gives the thread's running total it saw last and
// the session id, so that this turn reports only its own usage.
func (a *AppServer) Continue(prev normalize.Decoder) {
	p, ok := prev.(*AppServer)
	if !ok {
		return
	}
	a.d.reported, a.d.continued = p.d.reported, true
	a.d.threadID = p.d.threadID
	if p.d.model != "" {
		a.d.model = p.d.model
	}
}

// SetSession names the thread and model the server gave in its answer to
// thread/start (or thread/resume); model "" keeps the decoder's.
func (a *AppServer) SetSession(threadID, model string) {
	a.d.threadID = threadID
	if model != "" {
		a.d.model = model
	}
}

// Abort stops the session with err (a request of hub's the server refused),
// reported by Status.
func (a *AppServer) Abort(err *events.Error) {
	if a.d.abort == nil {
		a.d.abort = err
	}
}

// ignored are the server's notifications that carry nothing hub reports
// (codex-cli 0.169.0's ServerNotification, less those Decode reads).
var ignored = map[string]bool{}

func init() {
	for _, m := range strings.Fields(`thread/started thread/status/changed thread/readState/changed
	thread/archived thread/deleted thread/unarchived thread/closed thread/reverted skills/changed
	thread/name/updated thread/section/changed thread/attachment/updated thread/goal/updated
	thread/prediction/updated thread/goal/cleared thread/queue/changed project/changed
	thread/project/updated thread/environment/connected thread/environment/disconnected
	thread/settings/updated turn/started hook/started hook/completed turn/diff/updated
	turn/plan/updated item/autoApprovalReview/started item/autoApprovalReview/completed
	item/plan/delta command/exec/outputDelta process/outputDelta process/exited
	item/commandExecution/outputDelta item/commandExecution/terminalInteraction
	item/fileChange/outputDelta item/fileChange/patchUpdated serverRequest/resolved
	item/mcpToolCall/progress mcpServer/oauthLogin/completed mcpServer/startupStatus/updated
	mcpServer/event/stream/notification account/updated account/gatewayOAuth/changed
	account/rateLimits/updated app/list/updated remoteControl/status/changed
	externalAgentConfig/import/progress externalAgentConfig/import/completed fs/changed
	item/reasoning/summaryTextDelta item/reasoning/summaryPartAdded item/reasoning/textDelta
	model/verification modelProvider/authRecoveryStarted modelProvider/authRecoveryCompleted
	turn/moderationMetadata model/safetyBuffering/updated configWarning
	fuzzyFileSearch/sessionUpdated fuzzyFileSearch/sessionCompleted windows/worldWritableWarning
	windowsSandbox/setupCompleted account/login/completed`) {
		ignored[m] = true
	}
}

// Decode implements normalize.Decoder.
func (a *AppServer) Decode(dst []events.Body, line []byte) []events.Body {
	root := gjson.ParseBytes(line)
	if !root.IsObject() {
		return append(dst, events.Notice{Kind: events.NoticeParseError,
			Message: "codex: expected a JSON object, got " + normalize.Shorten(root.Raw, 200)})
	}
	method := root.Get("method").Str
	p := root.Get("params")
	switch method {
	case "item/started", "item/completed":
		typ := "item.started"
		if method == "item/completed" {
			typ = "item.completed"
		}
		it, ok := execItem(p.Get("item"))
		if !ok {
			return dst // the user's own message, and items hub has no event for
		}
		return a.d.item(dst, typ, gjson.ParseBytes(it))
	case "item/agentMessage/delta":
		if t := p.Get("delta").Str; t != "" {
			dst = append(dst, events.TextDelta{Text: t})
		}
	case "thread/tokenUsage/updated":
		return a.d.usage(dst, execUsage(p.Get("tokenUsage.total")))
	case "turn/completed":
		dst = a.d.unfinished(dst)
		a.d.turnDone = true
		switch p.Get("turn.status").Str {
		case "failed":
			msg := p.Get("turn.error.message").Str
			if msg == "" {
				msg = a.d.lastError
			}
			if msg == "" {
				msg = "turn failed"
			}
			a.d.failed = Classify(msg)
		case "interrupted":
			a.d.failed = events.NewError(events.BinCancelled, events.ReasonCaller,
				"send the next prompt to go on in the same session", "codex interrupted the turn")
		default: // completed
			if a.d.sawError {
				msg := "codex recovered from an earlier error"
				if a.d.lastError != "" {
					msg += ": " + normalize.Shorten(a.d.lastError, 500)
				}
				dst = append(dst, events.Notice{Kind: events.NoticeRecoveredError, Message: msg})
			}
		}
	case "error":
		// ErrorNotification{error: TurnError{message, codexErrorInfo}, willRetry}:
		// the messages of exec's top-level error events.
		return a.d.topError(dst, p.Get("error.message").Str)
	case "model/rerouted":
		if to := p.Get("toModel").Str; to != "" {
			a.d.model = to
		}
	case "warning", "guardianWarning", "deprecationNotice":
		msg := p.Get("message").Str
		if msg == "" {
			msg = p.Get("summary").Str
		}
		dst = append(dst, events.Notice{Kind: events.NoticeRecoveredError,
			Message: "codex warning: " + normalize.Shorten(msg, 1000)})
	default:
		if !ignored[method] {
			dst = append(dst, unknown("app-server notification", method, line))
		}
	}
	return dst
}

// execItem rewrites an app-server ThreadItem as the `codex exec --json`
// item it corresponds to (exec's ThreadItem, snake_case); ok is false for an
// item hub has no event for (the user's message, a plan, a context
// compaction, …), which Decoder would report as unknown.
func execItem(it gjson.Result) (b []byte, ok bool) {
	m := map[string]any{"id": it.Get("id").Str}
	status := func() {
		s := it.Get("status").Str
		if s == "inProgress" {
			s = "in_progress"
		}
		m["status"] = s
	}
	switch it.Get("type").Str {
	case "agentMessage":
		m["type"], m["text"] = "agent_message", it.Get("text").Str
	case "reasoning":
		var parts []string
		for _, s := range it.Get("summary").Array() {
			parts = append(parts, s.String())
		}
		for _, s := range it.Get("content").Array() {
			parts = append(parts, s.String())
		}
		m["type"], m["text"] = "reasoning", strings.Join(parts, "\n")
	case "commandExecution":
		m["type"], m["command"] = "command_execution", it.Get("command").Str
		m["aggregated_output"] = it.Get("aggregatedOutput").Str
		if c := it.Get("exitCode"); c.Type == gjson.Number {
			m["exit_code"] = c.Int()
		}
		status()
	case "fileChange":
		var changes []map[string]string
		for _, c := range it.Get("changes").Array() {
			changes = append(changes, map[string]string{"path": c.Get("path").Str, "kind": c.Get("kind.type").Str})
		}
		m["type"], m["changes"] = "file_change", changes
		status()
	case "mcpToolCall":
		m["type"], m["server"], m["tool"] = "mcp_tool_call", it.Get("server").Str, it.Get("tool").Str
		for _, k := range []string{"arguments", "result", "error"} {
			if v := it.Get(k); v.Exists() && v.Type != gjson.Null {
				m[k] = json.RawMessage(v.Raw)
			}
		}
		status()
	case "webSearch":
		m["type"], m["query"] = "web_search", it.Get("query").Str
	case "collabAgentToolCall":
		m["type"], m["tool"], m["prompt"] = "collab_tool_call", it.Get("tool").Str, it.Get("prompt").Str
		status()
	default:
		return nil, false
	}
	b, _ = json.Marshal(m)
	return b, true
}

// execUsage rewrites an app-server TokenUsageBreakdown (camelCase) as exec's
// usage object.
func execUsage(u gjson.Result) gjson.Result {
	b, _ := json.Marshal(map[string]int64{
		"input_tokens":             u.Get("inputTokens").Int(),
		"cached_input_tokens":      u.Get("cachedInputTokens").Int(),
		"cache_write_input_tokens": u.Get("cacheWriteInputTokens").Int(),
		"output_tokens":            u.Get("outputTokens").Int(),
		"reasoning_output_tokens":  u.Get("reasoningOutputTokens").Int(),
	})
	return gjson.ParseBytes(b)
}

// Status implements normalize.Decoder: turn/completed ends the turn.
func (a *AppServer) Status() normalize.Status { return a.d.Status() }

// Outcome implements normalize.Decoder, as Decoder's: an interrupted turn
// is cancelled/caller.
func (a *AppServer) Outcome(end normalize.End) normalize.Outcome { return a.d.Outcome(end) }
