// Package codex decodes `codex exec --json` output (codex-cli 0.169.0, read
// from the real binary against hub's mock server on 2026-11-30 and from
// codex-rs/exec's JSONL event processor; see testdata/codex) into
// hub.event/v1 events, and decides how a Codex run ended.
//
// Codex writes one object per line: thread.started{thread_id},
// turn.started, item.started|updated|completed{item{id, type, …}},
// turn.completed{usage}, turn.failed{error{message}} and top-level
// error{message}. Item types: agent_message, reasoning, command_execution,
// file_change, mcp_tool_call, web_search, todo_list, collab_tool_call and
// error (a warning, not a failure). Codex reports no cost and no text
// deltas: its usage events carry tokens only, a null cost and cost_source
// "unknown", and name the model, by which hub's meter (budget.Meter.Price)
// estimates the cost. Usage comes once per turn, as the thread's running
// total; failures are English sentences only (see outcome.go).
package codex

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Options configure a Decoder.
type Options struct {
	// Model is the model the run uses ("" when hub does not know it): the
	// model of session.started and of the usage events, by which hub prices
	// them. Codex's stream does not name it, except when the server
	// reroutes to another model.
	Model string
	// Resume is the session id the run resumes, "" for a new session. Codex
	// then reports usage that includes the session's earlier turns (see
	// Decoder), and a thread.started naming another session is an error.
	Resume string
	// FailFast stops a Codex that retries a 401 or 403 (SPEC §4).
	FailFast bool
}

// Decoder decodes one Codex run. Create it with New.
//
// Usage: turn.completed carries the thread's running total, not the turn's,
// which in a fresh session is the same thing (one `codex exec` runs one
// turn). A resumed session's total includes the turns of earlier runs,
// which hub cannot tell apart from the stream; hub reports the total as this
// run's usage and says so in a notice, so a --max-cost or --max-tokens
// budget errs on the safe side.
type Decoder struct {
	ix    *normalize.Index // the runner's Index of the line being decoded (UseIndex), or nil
	opts  Options
	model string // the model of the usage events: Options.Model, or the one Codex rerouted to

	threadID  string
	lastText  string
	reported  events.Tokens // the last running total Codex reported
	continued bool          // reported is the session's total as this run's earlier process left it
	total     events.Tokens
	turnDone  bool
	failed    *events.Error // from turn.failed
	lastError string        // the last top-level error that was not a retry notice
	sawError  bool          // a top-level error or error item came before success
	abort     *events.Error
	started   map[string]events.ToolStarted // tool items reported as started and not yet finished, by item id
}

var (
	_ normalize.Decoder   = (*Decoder)(nil)
	_ normalize.Continuer = (*Decoder)(nil)
)

// Continue implements normalize.Continuer: a resume of the session prev
// decoded counts usage from the running total prev saw last, so that the
// resume's usage is its own, exact, and no cost_unknown notice is needed.
func (d *Decoder) Continue(prev normalize.Decoder) {
	p, ok := prev.(*Decoder)
	if !ok || d.opts.Resume == "" || !strings.EqualFold(p.threadID, d.opts.Resume) {
		return
	}
	d.reported, d.continued = p.reported, true
}

// New returns a decoder for one run.
func New(opts Options) *Decoder {
	return &Decoder{opts: opts, model: opts.Model, started: map[string]events.ToolStarted{}}
}

func (d *Decoder) modelPtr() *string {
	if d.model == "" {
		return nil
	}
	m := d.model
	return &m
}

// UseIndex implements normalize.Indexed: the decoder skips and sizes the
// long strings of each line through x, which its caller fills as it checks
// the line.
func (d *Decoder) UseIndex(x *normalize.Index) { d.ix = x }

// Decode implements normalize.Decoder.
func (d *Decoder) Decode(dst []events.Body, line []byte) []events.Body {
	// Command outputs are most of the bytes: their items are read in place
	// (item and tool copy what they keep).
	var root gjson.Result
	view := normalize.View(line)
	if strings.HasPrefix(gjson.Get(view, "type").Str, "item.") && gjson.Get(view, "item.type").Str == "command_execution" {
		root = gjson.Parse(normalize.View(line))
	} else {
		root = gjson.ParseBytes(line)
	}
	if !root.IsObject() {
		return append(dst, events.Notice{Kind: events.NoticeParseError,
			Message: "codex: expected a JSON object, got " + normalize.Shorten(root.Raw, 200)})
	}
	switch typ := root.Get("type").String(); typ {
	case "thread.started":
		if id := root.Get("thread_id").String(); id != "" && d.threadID == "" {
			d.threadID = id
			dst = append(dst, events.SessionStarted{SessionID: id, Model: d.modelPtr()})
			if r := d.opts.Resume; r != "" && !strings.EqualFold(id, r) && d.abort == nil {
				d.abort = events.NewError(events.BinInvalidInput, events.ReasonBadSession, hintSession,
					"asked to resume codex session %s, but codex started session %s: the earlier conversation is not in this run", r, id)
			}
		}
	case "turn.started":
		d.turnDone = false
	case "item.started", "item.updated", "item.completed":
		// Fields, not root.Get: gjson would scan the item (and its
		// output) to its end byte by byte.
		dst = d.item(dst, typ, gjson.Parse(d.ix.Fields(root.Raw, "item")[0]))
	case "turn.completed":
		dst = d.unfinished(dst)
		dst = d.usage(dst, root.Get("usage"))
		d.turnDone = true
		if d.sawError && d.failed == nil {
			msg := "codex recovered from an earlier error"
			if d.lastError != "" {
				msg += ": " + normalize.Shorten(d.lastError, 500)
			}
			dst = append(dst, events.Notice{Kind: events.NoticeRecoveredError, Message: msg})
		}
	case "turn.failed":
		msg := root.Get("error.message").String()
		if msg == "" {
			msg = d.lastError
		}
		if msg == "" {
			msg = "turn failed"
		}
		d.failed = Classify(msg)
		d.turnDone = true
		dst = d.unfinished(dst)
	case "error":
		dst = d.topError(dst, root.Get("message").String())
	default:
		dst = append(dst, unknown("event type", typ, line))
	}
	return dst
}

func unknown(what, typ string, line []byte) events.Notice {
	n := events.Notice{Kind: events.NoticeUnknownEvent,
		Message: fmt.Sprintf("codex: unknown %s %q", what, typ)}
	if len(line) > 0 && len(line) <= 4096 {
		n.Data = json.RawMessage(`{"line":` + string(line) + `}`)
	}
	return n
}

// topError handles a top-level error: a retry notice ("Reconnecting... n/m
// (cause)"), or the error that is about to fail the turn.
func (d *Decoder) topError(dst []events.Body, msg string) []events.Body {
	d.sawError = true
	attempt, max, cause, ok := Reconnect(msg)
	if !ok {
		d.lastError = msg
		return dst
	}
	status := HTTPStatus(cause)
	var httpStatus any
	if status > 0 {
		httpStatus = status
	}
	data, _ := json.Marshal(map[string]any{
		"attempt": attempt, "max_attempts": max, "delay_ms": nil, "http_status": httpStatus, "error": cause,
	})
	dst = append(dst, events.Notice{Kind: events.NoticeRetry, Data: data,
		Message: fmt.Sprintf("codex is retrying the model call (attempt %d of %d): %s", attempt, max, normalize.Shorten(cause, 500))})
	if d.opts.FailFast && d.abort == nil && normalize.IsAuthStatus(status) {
		d.abort = events.NewError(events.BinUnavailable, events.ReasonAuth, hintAuth,
			"the API rejected the credentials (HTTP %d: %s); hub stopped Codex instead of letting it retry",
			status, normalize.Shorten(cause, 500)).WithHTTPStatus(status)
	}
	return dst
}

// item maps one item event.
func (d *Decoder) item(dst []events.Body, typ string, it gjson.Result) []events.Body {
	id := it.Get("id").String()
	completed := typ == "item.completed"
	switch kind := it.Get("type").String(); kind {
	case "agent_message":
		if completed {
			text := it.Get("text").String()
			d.lastText = text
			dst = append(dst, events.Message{Text: text})
		}
	case "reasoning":
		if text := it.Get("text").String(); completed && text != "" {
			dst = append(dst, events.Reasoning{Text: text})
		}
	case "command_execution", "file_change", "mcp_tool_call", "web_search", "collab_tool_call":
		dst = d.tool(dst, typ, id, kind, it)
	case "todo_list":
		if completed || typ == "item.started" {
			dst = append(dst, todoNotice(it))
		}
	case "error":
		msg := it.Get("message").String()
		if strings.HasPrefix(msg, "model rerouted:") {
			if _, to, ok := strings.Cut(msg, "->"); ok {
				to = strings.TrimSpace(to)
				if i := strings.IndexByte(to, ' '); i > 0 {
					to = to[:i]
				}
				d.model = to
			}
		}
		dst = append(dst, events.Notice{Kind: events.NoticeRecoveredError,
			Message: "codex warning: " + normalize.Shorten(msg, 1000)})
	default:
		if completed {
			dst = append(dst, unknown("item type", kind, nil)) // the line is kept by the raw log, not here
		}
	}
	return dst
}

// tool maps a tool item to tool.started (on item.started, or on
// item.completed when no start was seen) and tool.finished (on
// item.completed).
//
// A command_execution item is read in place (see Decode): tool copies what
// it keeps of it.
func (d *Decoder) tool(dst []events.Body, typ, id, kind string, it gjson.Result) []events.Body {
	if kind == "command_execution" {
		id = strings.Clone(id)
	}
	name, toolKind, input := toolShape(kind, it)
	if _, ok := d.started[id]; !ok && typ != "item.updated" {
		st := events.ToolStarted{CallID: id, Name: name, Kind: toolKind, Input: input}
		d.started[id] = st
		dst = append(dst, st)
	}
	if typ != "item.completed" {
		return dst
	}
	delete(d.started, id)
	fin := events.ToolFinished{CallID: id, Name: name, Kind: toolKind, Status: events.ToolOK}
	// One pass over the item, whose output can be megabytes.
	f := d.ix.Fields(it.Raw, "status", "aggregated_output", "exit_code")
	var output string
	switch status := gjson.Parse(f[0]).String(); kind {
	case "command_execution":
		fin.Output, fin.OutputBytes, fin.Truncated = d.ix.CutString(f[1], normalize.DefaultOutputCap)
		fin.Output = strings.Clone(fin.Output) // read in place (see Decode)
		if c := gjson.Parse(f[2]); c.Type == gjson.Number {
			code := int(c.Int())
			fin.ExitCode = &code
		}
		switch {
		case status == "declined":
			fin.Status = events.ToolDenied
		case status == "failed" || fin.ExitCode != nil && *fin.ExitCode != 0:
			fin.Status = events.ToolError
		}
		if fin.Status == events.ToolError && d.abort == nil {
			d.abort = sandboxFailed(fin.Output)
		}
		return append(dst, fin)
	case "file_change":
		var paths []string
		for _, c := range it.Get("changes").Array() {
			paths = append(paths, c.Get("kind").String()+" "+c.Get("path").String())
		}
		output = strings.Join(paths, "\n")
		switch status {
		case "failed":
			fin.Status = events.ToolError
		case "declined": // refused at an approval (app-server)
			fin.Status = events.ToolDenied
		}
	case "mcp_tool_call":
		if e := it.Get("error.message"); e.Exists() {
			fin.Status, output = events.ToolError, e.String()
		} else {
			var parts []string
			for _, c := range it.Get("result.content").Array() {
				if t := c.Get("text"); t.Exists() {
					parts = append(parts, t.String())
				}
			}
			output = strings.Join(parts, "\n")
		}
		if status == "failed" {
			fin.Status = events.ToolError
		}
	case "collab_tool_call":
		if status == "failed" {
			fin.Status = events.ToolError
		}
	}
	fin.Output, fin.OutputBytes, fin.Truncated = normalize.CutOutput(output, normalize.DefaultOutputCap)
	return append(dst, fin)
}

// unfinished closes the tool calls still open when the turn ends, so that
// every tool.started has its tool.finished. Codex ends a turn while a
// command still runs when its unified exec returns after the yield time (10 s
// in 0.169.0) with the process kept in the background; hub stops such a
// process with the run.
func (d *Decoder) unfinished(dst []events.Body) []events.Body {
	if len(d.started) == 0 {
		return dst
	}
	ids := slices.Sorted(maps.Keys(d.started))
	for _, id := range ids {
		st := d.started[id]
		msg := "codex ended the turn before this tool call finished (a command left running in the background is stopped with the run)"
		fin := events.ToolFinished{CallID: id, Name: st.Name, Kind: st.Kind, Status: events.ToolError}
		fin.Output, fin.OutputBytes, fin.Truncated = normalize.CutOutput(msg, normalize.DefaultOutputCap)
		dst = append(dst, fin)
		delete(d.started, id)
	}
	return dst
}

// sandboxFailed is the run's error when a command's output says Codex's
// sandbox could not start, else nil. Codex (0.169.0) then fails every
// command with bubblewrap's own message, such as "bwrap: Creating new
// namespace failed: nesting depth or /proc/sys/user/max_*_namespaces
// exceeded (ENOSPC)", and still ends the turn as a success: no command of the
// run can do what the grant allows, so hub stops it rather than report an
// answer built on failed commands.
func sandboxFailed(output string) *events.Error {
	if !strings.HasPrefix(output, "bwrap: ") {
		return nil
	}
	line, _, _ := strings.Cut(output, "\n")
	return events.NewError(events.BinPermissionDenied, events.ReasonEffectNotGranted,
		"Codex's sandbox needs unprivileged user namespaces (sysctl user.max_user_namespaces > 0; in a container, a seccomp profile that allows them); or run with --permission full where the machine itself isolates the run",
		"codex's sandbox could not start, so its commands cannot run: %s", normalize.Shorten(line, 300))
}

// toolShape names a tool item and gives its kind and input. Codex items carry
// no tool name of the model's own: the item type is the name, except for MCP
// calls ("server.tool").
func toolShape(kind string, it gjson.Result) (string, events.ToolKind, json.RawMessage) {
	obj := func(kv ...string) json.RawMessage {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		b, _ := json.Marshal(m)
		return b
	}
	switch kind {
	case "command_execution":
		return "command_execution", events.ToolShell, obj("command", it.Get("command").String())
	case "file_change":
		k := events.ToolEdit
		changes := it.Get("changes").Array()
		if len(changes) > 0 {
			k = events.ToolWrite
			for _, c := range changes {
				if c.Get("kind").String() != "add" {
					k = events.ToolEdit
				}
			}
		}
		in := json.RawMessage(`{}`)
		if c := it.Get("changes"); c.IsArray() {
			in = json.RawMessage(`{"changes":` + c.Raw + `}`)
		}
		return kind, k, in
	case "mcp_tool_call":
		name := it.Get("server").String() + "." + it.Get("tool").String()
		in := json.RawMessage(`{}`)
		if a := it.Get("arguments"); a.IsObject() {
			in = json.RawMessage(a.Raw)
		}
		return name, events.ToolMCP, in
	case "web_search":
		return kind, events.ToolWeb, obj("query", it.Get("query").String())
	default: // collab_tool_call: a sub-agent
		return kind, events.ToolTask, obj("tool", it.Get("tool").String(), "prompt", it.Get("prompt").String())
	}
}

// todoNotice reports a todo_list item, which has no hub event type of its own.
func todoNotice(it gjson.Result) events.Notice {
	items := it.Get("items").Array()
	done := 0
	for _, x := range items {
		if x.Get("completed").Bool() {
			done++
		}
	}
	n := events.Notice{Kind: events.NoticeUnknownEvent,
		Message: fmt.Sprintf("codex todo list: %d of %d done", done, len(items))}
	if a := it.Get("items"); a.IsArray() && len(a.Raw) <= 4096 {
		n.Data = json.RawMessage(`{"todo_list":` + a.Raw + `}`)
	}
	return n
}

// usage turns turn.completed's running total into a usage event. Codex's
// input_tokens includes cached (and cache-write) tokens: hub subtracts them
// (SPEC §3). The step is the growth of the total since the last report. The
// cost is unknown here: hub's meter estimates it (budget.Meter.Price).
func (d *Decoder) usage(dst []events.Body, u gjson.Result) []events.Body {
	cached := max(u.Get("cached_input_tokens").Int(), 0)
	written := max(u.Get("cache_write_input_tokens").Int(), 0)
	reported := events.Tokens{
		Input:      max(u.Get("input_tokens").Int()-cached-written, 0),
		CacheRead:  cached,
		CacheWrite: written,
		Output:     max(u.Get("output_tokens").Int(), 0),
		Reasoning:  max(u.Get("reasoning_output_tokens").Int(), 0),
	}
	step := reported
	if d.reported.Sum() > 0 && reported.Sum() >= d.reported.Sum() {
		step = events.Tokens{
			Input: max(reported.Input-d.reported.Input, 0), CacheRead: max(reported.CacheRead-d.reported.CacheRead, 0),
			CacheWrite: max(reported.CacheWrite-d.reported.CacheWrite, 0), Output: max(reported.Output-d.reported.Output, 0),
			Reasoning: max(reported.Reasoning-d.reported.Reasoning, 0),
		}
	}
	d.reported = reported
	first := d.total.Sum() == 0
	d.total = d.total.Add(step)
	if first && d.opts.Resume != "" && !d.continued {
		dst = append(dst, events.Notice{Kind: events.NoticeCostUnknown,
			Message: "codex reports a resumed session's usage as the session's running total: this run's own tokens and cost cannot be told apart from the earlier turns', which the figures include (an upper bound)"})
	}
	return append(dst, events.Usage{Step: step, Total: d.total, CostSource: events.CostUnknown, Model: d.modelPtr()})
}

// Status implements normalize.Decoder. turn.completed and turn.failed are
// terminal: `codex exec` runs one turn and then shuts down.
func (d *Decoder) Status() normalize.Status {
	return normalize.Status{Terminal: d.turnDone, Abort: d.abort}
}

// Outcome implements normalize.Decoder. In order: turn.failed decides (from
// its message, see Classify); turn.completed is success whatever the exit
// status; then the last top-level error, stderr and the exit status decide
// (Fallback).
func (d *Decoder) Outcome(end normalize.End) normalize.Outcome {
	out := normalize.Outcome{Text: d.lastText, SessionID: d.threadID}
	switch {
	case d.abort != nil:
		out.Error = d.abort
	case d.failed != nil:
		out.Error = d.failed
		out.Text = ""
	case d.turnDone:
		out.OK = true
	default:
		out.Error = Fallback(end, d.lastError)
	}
	if out.Error != nil {
		out.RetryAt = RetryAt(out.Error.Message)
	}
	return out
}
