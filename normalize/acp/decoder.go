// Package acp decodes what an Agent Client Protocol agent writes on its
// stdout — JSON-RPC 2.0 messages, one per line (ACP protocol version 1, as
// github.com/coder/acp-go-sdk v0.13.0 and the specification at
// agentclientprotocol.com define it) — into hub.event/v1 events, and decides
// how the run ended.
//
// A run is one conversation that hub's client (adapters/acp) leads, one
// request at a time, each answered before the next is sent: initialize,
// session/new (or session/load to resume), session/set_model when a model
// was asked for, then one session/prompt. The decoder sees only the agent's
// side (a raw log holds no more), so it takes the n-th response on stdout
// for the answer to the n-th of those requests; the agent's own requests
// (session/request_permission, fs/*) carry ids of the agent's and are told
// apart by their method.
//
// Events come from the session/update notifications: agent_message_chunk →
// text.delta (and one message per text block), agent_thought_chunk and plan
// → reasoning, tool_call / tool_call_update → tool.started once the call
// runs (in_progress, or a final status; a call outside hub's grant only
// once it shows it ran without asking, as an agent may report a call
// in_progress before it asks for permission) and tool.finished at its final
// status, usage_update's cost and the prompt response's usage → usage. A
// tool call that hub's grant refuses (Options.Allow) when the agent asks
// for permission is a tool.finished with status denied, without a
// tool.started: it never ran. The updates that replay a loaded session's
// history (before the session/load response) are not the run's and are
// skipped.
//
// In a live session (adapters/acp's Live: many prompts on one connection)
// each turn has a decoder of its own: New's for the first, which awaits the
// setup's answers and the first prompt's, then Next's, which awaits only
// its prompt's answer, paired by the id PromptSent gives it.
package acp

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// The requests hub's client sends, in order (see the package doc).
const (
	MethodInitialize = "initialize"
	MethodNew        = "session/new"
	MethodLoad       = "session/load"
	MethodSetModel   = "session/set_model"
	MethodPrompt     = "session/prompt"
)

// Options are what a decoder must know of the run: what the client asks
// and what hub grants.
type Options struct {
	// Resume is the session hub loads (session/load); "" for a new one.
	Resume string
	// Model is the model hub sets (session/set_model); "" for the agent's.
	Model string
	// Allow reports whether hub's grant lets a tool call through; the
	// client answers the agent's permission requests with the same rule.
	// nil allows nothing.
	Allow func(events.ToolStarted) bool
	// Name is the agent's name for messages ("acp" when "").
	Name string
	// Level names the grant, for messages.
	Level string
	// Answered, in a live session with an approver (hub.WithApprover),
	// says what hub's client answered the agent's permission request for
	// a call: answered once the answer was written, allowed when it was
	// an allow. Set, a permission request is not decided by Allow (the
	// approver decides it, Asked), and a call refused through it that the
	// agent reports failed is a tool.finished with status denied, with
	// the agent's words, and no tool.started (it never ran); the turn
	// that ends after it is not hub's refusal (the approver's answer is
	// the user's).
	Answered func(callID string) (answered, allowed bool)
}

// Steps returns the requests hub's client sends for o, in order.
func (o Options) Steps() []string {
	s := []string{MethodInitialize, MethodNew}
	if o.Resume != "" {
		s[1] = MethodLoad
	}
	if o.Model != "" {
		s = append(s, MethodSetModel)
	}
	return append(s, MethodPrompt)
}

// Decoder decodes one ACP run. Create it with New.
type Decoder struct {
	o        Options
	steps    []string
	ids      []int64 // by step: the JSON-RPC id of its request; 0 until known (PromptSent)
	answered []bool  // by step: its response has come

	sessionID string
	model     *string
	version   string // agentInfo's name and version, "" until initialize answers

	text    strings.Builder // the text block being streamed
	thought strings.Builder // the thought block being streamed
	last    string          // the last whole text block

	calls map[string]*call

	total    events.Tokens
	sawUsage bool    // the prompt's answer reported usage
	costOK   bool    // usage was reported with a cost
	lastUSD  float64 // the session's cost at the last usage_update
	// billedUSD is the session's cost at the last usage event: a loaded
	// session's usage_update counts its earlier turns too.
	billedUSD float64
	// baseUSD is the session's cost before this decoder's turn (Next): the
	// usage events' running total counts from it.
	baseUSD float64

	denied          string        // the title of the last call hub denied, "" if none
	textAfterDenial bool          // the agent wrote text after it
	stopReason      string        // the prompt's, once answered
	failed          *events.Error // the error answer to a step, if any
	failedStep      string
}

// call is what the decoder knows of one tool call.
type call struct {
	title, kind string
	input       json.RawMessage
	locations   []string
	started     bool
	finished    bool
	decided     bool // a permission request was answered: allowed says how
	allowed     bool
	name        string // the name its tool.started gave it
}

var _ normalize.Decoder = (*Decoder)(nil)

// New returns a decoder for one run.
func New(o Options) *Decoder {
	if o.Name == "" {
		o.Name = "acp"
	}
	if o.Allow == nil {
		o.Allow = func(events.ToolStarted) bool { return false }
	}
	d := &Decoder{o: o, steps: o.Steps(), calls: map[string]*call{}}
	d.answered = make([]bool, len(d.steps))
	// Hub's client numbers its requests 1, 2, … in the order of Steps
	// (acp-go-sdk v0.13.0's Connection does; TestRequestIDs in
	// adapters/acp checks it).
	d.ids = make([]int64, len(d.steps))
	for i := range d.ids {
		d.ids[i] = int64(i + 1)
	}
	if o.Model != "" {
		d.model = &o.Model
	}
	return d
}

// Next returns the decoder of the session's next turn on the same
// connection, once d's turn has ended (its prompt answered): a live
// session, where hub's client sends session/prompt again. It awaits only
// that prompt's answer, whose JSON-RPC id PromptSent gives it; until then
// a response is one to no request of hub's (a notice). The session's id
// and model and the agent's version carry over, and so does the session's
// cost as its last usage_update gave it (ACP's cost is the session's
// running total): the new turn's usage counts only its own part, and its
// cost is unknown unless the agent reports it again in the turn.
func (d *Decoder) Next() *Decoder {
	n := &Decoder{o: d.o, steps: []string{MethodPrompt}, ids: []int64{0}, answered: []bool{false},
		calls: map[string]*call{}, sessionID: d.sessionID, model: d.model, version: d.version,
		lastUSD: d.lastUSD, billedUSD: d.lastUSD, baseUSD: d.lastUSD}
	return n
}

// PromptSent says that the session/prompt this decoder awaits was sent
// with JSON-RPC id id (a live session's client notes it as the prompt's
// write begins): its answer is the response with that id; 0 says it has
// not been sent yet (no response is its answer). New's decoder takes the
// id hub's client gives a one-shot run's prompt without it.
func (d *Decoder) PromptSent(id int64) {
	if i := len(d.steps) - 1; !d.answered[i] {
		d.ids[i] = id
	}
}

// Decode implements normalize.Decoder.
func (d *Decoder) Decode(dst []events.Body, line []byte) []events.Body {
	m := gjson.ParseBytes(line)
	if !m.IsObject() {
		return append(dst, events.Notice{Kind: events.NoticeParseError,
			Message: d.o.Name + ": expected a JSON-RPC message, got " + normalize.Shorten(string(line), 200)})
	}
	method := m.Get("method")
	id := m.Get("id")
	switch {
	case method.Type == gjson.String && method.Str == "session/update":
		if d.loading() {
			return dst // a loaded session's history
		}
		return d.update(dst, m.Get("params.update"))
	case method.Type == gjson.String && method.Str == "session/request_permission" && id.Exists():
		if d.o.Answered != nil {
			return dst // the approver decides it (Asked took it)
		}
		return d.permission(dst, m.Get("params.toolCall"))
	case method.Type == gjson.String:
		return dst // the agent's other requests (fs/*) and notifications
	case id.Exists() && (m.Get("result").Exists() || m.Get("error").Exists()):
		return d.answer(dst, m)
	}
	return append(dst, unknown("a message that is neither a request, a notification nor a response", line))
}

// Answered reports whether the session/prompt this decoder awaits was
// answered: with a stopReason, or with an error.
func (d *Decoder) Answered() bool { return d.answered[len(d.answered)-1] }

// Failed returns the error answer to one of hub's requests, nil if none
// came, and the request's method (as Options.Steps names it).
func (d *Decoder) Failed() (method string, err *events.Error) { return d.failedStep, d.failed }

// loading reports whether a session/load was sent and not yet answered:
// hub sends it once initialize is answered.
func (d *Decoder) loading() bool {
	return len(d.steps) > 1 && d.steps[1] == MethodLoad && d.answered[0] && !d.answered[1]
}

// pending is the first of hub's requests not answered, "" when all are.
func (d *Decoder) pending() string {
	for i, a := range d.answered {
		if !a {
			return d.steps[i]
		}
	}
	return ""
}

func unknown(what string, line []byte) events.Notice {
	n := events.Notice{Kind: events.NoticeUnknownEvent, Message: "acp: " + what}
	if len(line) > 0 && len(line) <= 4096 && json.Valid(line) {
		n.Data = json.RawMessage(`{"line":` + string(line) + `}`)
	}
	return n
}

// answer takes the response to one of the client's requests.
func (d *Decoder) answer(dst []events.Body, m gjson.Result) []events.Body {
	// A response is paired with hub's request by its id (see New and
	// PromptSent), and one to no request of hub's (a stray, a repeat) is
	// a notice that changes nothing.
	id := m.Get("id")
	k := -1
	if id.Type == gjson.Number && id.Raw == strconv.FormatInt(id.Int(), 10) {
		for i, want := range d.ids {
			if want != 0 && want == id.Int() && !d.answered[i] {
				k = i + 1
				break
			}
		}
	}
	if k < 0 {
		return append(dst, unknown("a response to no request of hub's", []byte(m.Raw)))
	}
	step := d.steps[k-1]
	d.answered[k-1] = true
	if e := m.Get("error"); e.Exists() {
		d.failed, d.failedStep = d.stepError(step, e), step
		return d.endBlocks(dst)
	}
	r := m.Get("result")
	switch step {
	case MethodInitialize:
		if info := r.Get("agentInfo"); info.IsObject() {
			d.version = strings.TrimSpace(info.Get("name").String() + " " + info.Get("version").String())
		}
	case MethodNew, MethodLoad:
		d.sessionID = r.Get("sessionId").String()
		if step == MethodLoad {
			d.sessionID = d.o.Resume
		}
		if cur := sessionModel(r); cur != "" && d.o.Model == "" {
			d.model = &cur
		}
		return append(dst, events.SessionStarted{SessionID: d.sessionID, Model: d.model})
	case MethodPrompt:
		dst = d.endBlocks(dst)
		d.stopReason = r.Get("stopReason").String()
		if d.stopReason == "" {
			d.stopReason = "(none)"
		}
		if u := r.Get("usage"); u.IsObject() {
			dst = d.promptUsage(dst, u)
		}
	}
	return dst
}

// sessionModel is the model a session/new or session/load answer r says
// the session uses, "" if it says none: models.currentModelId (the
// unstable session model API: claude-agent-acp), else the current value of
// the config option of category "model" (OpenCode and codex-acp give only
// configOptions).
func sessionModel(r gjson.Result) string {
	if cur := r.Get("models.currentModelId"); cur.Type == gjson.String && cur.Str != "" {
		return cur.Str
	}
	for _, o := range r.Get("configOptions").Array() {
		if cur := o.Get("currentValue"); o.Get("category").Str == "model" && cur.Type == gjson.String && cur.Str != "" {
			return cur.Str
		}
	}
	return ""
}

// Version is the agent's name and version as its initialize answer gave
// them (agentInfo), "" before it or when it gave none.
func (d *Decoder) Version() string { return d.version }

// update decodes one session/update.
func (d *Decoder) update(dst []events.Body, u gjson.Result) []events.Body {
	kind := u.Get("sessionUpdate").String()
	switch kind {
	case "agent_message_chunk":
		if d.thought.Len() > 0 {
			dst = d.endThought(dst)
		}
		t := chunkText(u.Get("content"))
		if t == "" {
			return dst
		}
		d.textAfterDenial = d.textAfterDenial || d.denied != ""
		d.text.WriteString(t)
		return append(dst, events.TextDelta{Text: t})
	case "agent_thought_chunk":
		if d.text.Len() > 0 {
			dst = d.endText(dst)
		}
		d.thought.WriteString(chunkText(u.Get("content")))
		return dst
	case "tool_call", "tool_call_update":
		dst = d.endBlocks(dst)
		return d.tool(dst, u, kind == "tool_call")
	case "plan":
		dst = d.endBlocks(dst)
		return d.plan(dst, u.Get("entries"))
	case "usage_update":
		return d.usageUpdate(dst, u)
	case "user_message_chunk", "available_commands_update", "current_mode_update",
		"config_option_update", "session_info_update":
		return dst // the prompt's echo, and the session's settings
	}
	return append(dst, unknown("unknown session update "+normalize.Shorten(kind, 100), []byte(u.Raw)))
}

// chunkText is the text of a content block; "" for other content (an
// image, a resource link).
func chunkText(c gjson.Result) string {
	if c.Get("type").String() == "text" {
		return c.Get("text").String()
	}
	return ""
}

// endBlocks ends the text or thought block being streamed.
func (d *Decoder) endBlocks(dst []events.Body) []events.Body {
	return d.endThought(d.endText(dst))
}

func (d *Decoder) endText(dst []events.Body) []events.Body {
	if d.text.Len() == 0 {
		return dst
	}
	d.last = d.text.String()
	d.text.Reset()
	return append(dst, events.Message{Text: d.last})
}

func (d *Decoder) endThought(dst []events.Body) []events.Body {
	if d.thought.Len() == 0 {
		return dst
	}
	t := d.thought.String()
	d.thought.Reset()
	return append(dst, events.Reasoning{Text: t})
}

// plan reports the agent's plan as reasoning: one line per entry, its
// status first.
func (d *Decoder) plan(dst []events.Body, entries gjson.Result) []events.Body {
	var b strings.Builder
	b.WriteString("plan:")
	for _, e := range entries.Array() {
		fmt.Fprintf(&b, "\n[%s] %s", e.Get("status").String(), e.Get("content").String())
	}
	return append(dst, events.Reasoning{Text: b.String()})
}

// ToolKind maps an ACP tool kind to hub's (SPEC §3): read, edit, search,
// fetch (web) and execute (shell) are hub's own; delete and move change
// files (write); think, switch_mode, other and a kind not given are other.
func ToolKind(kind string) events.ToolKind {
	switch kind {
	case "read":
		return events.ToolRead
	case "edit":
		return events.ToolEdit
	case "delete", "move":
		return events.ToolWrite
	case "search":
		return events.ToolSearch
	case "execute":
		return events.ToolShell
	case "fetch":
		return events.ToolWeb
	}
	return events.ToolOther
}

// merge takes what a tool_call or tool_call_update (or a permission
// request's toolCall) says of a call into c.
func (c *call) merge(u gjson.Result) {
	if t := u.Get("title"); t.Type == gjson.String {
		c.title = t.Str
	}
	if k := u.Get("kind"); k.Type == gjson.String {
		c.kind = k.Str
	}
	if in := u.Get("rawInput"); in.IsObject() {
		c.input = json.RawMessage(in.Raw)
	}
	if locs := u.Get("locations"); locs.IsArray() {
		c.locations = c.locations[:0]
		for _, l := range locs.Array() {
			if p := l.Get("path").String(); p != "" {
				c.locations = append(c.locations, p)
			}
		}
	}
}

// call returns the call id's record, made on first sight.
func (d *Decoder) call(id string) *call {
	c := d.calls[id]
	if c == nil {
		c = &call{}
		d.calls[id] = c
	}
	return c
}

// event is the call's tool.started: its name is its title (ACP gives a
// call no other name; its kind when it has no title), its input the raw
// input. When a write or an edit's raw input names no path (file_path,
// filePath, path) and the call has locations, their paths are added to it
// as "locations", where hub's watch reads the paths of writes and edits.
func (c *call) event(id string) events.ToolStarted {
	input := c.input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	if k := ToolKind(c.kind); len(c.locations) > 0 && (k == events.ToolWrite || k == events.ToolEdit) {
		r := gjson.ParseBytes(input)
		if !r.Get("file_path").Exists() && !r.Get("filePath").Exists() && !r.Get("path").Exists() && !r.Get("locations").Exists() {
			var m map[string]json.RawMessage
			if json.Unmarshal(input, &m) == nil {
				m["locations"], _ = json.Marshal(c.locations)
				input, _ = json.Marshal(m)
			}
		}
	}
	name := c.title
	if name == "" {
		name = c.kind
	}
	return events.ToolStarted{CallID: id, Name: name, Kind: ToolKind(c.kind), Input: input}
}

// tool decodes a tool_call or tool_call_update.
func (d *Decoder) tool(dst []events.Body, u gjson.Result, first bool) []events.Body {
	id := u.Get("toolCallId").String()
	c := d.call(id)
	c.merge(u)
	status := u.Get("status").String()
	if first && status == "" {
		status = "pending"
	}
	ran := status == "completed" || status == "failed" || len(u.Get("content").Array()) > 0 || u.Get("rawOutput").Exists()
	if d.o.Answered != nil && !c.finished {
		if answered, allowed := d.o.Answered(id); answered {
			c.decided, c.allowed = true, allowed
		}
		if c.decided && !c.allowed && !c.started {
			switch {
			case status == "failed":
				// Refused (or cancelled) through hub: it never ran.
				c.finished = true
				st := c.event(id)
				fin := events.ToolFinished{CallID: id, Name: st.Name, Kind: st.Kind, Status: events.ToolDenied}
				fin.Output, fin.OutputBytes, fin.Truncated = normalize.CutOutput(toolOutput(u), normalize.DefaultOutputCap)
				return append(dst, fin)
			case !ran:
				return dst // it may yet report the refusal
			}
		}
	}
	if c.finished && !(c.decided && !c.allowed && !c.started && (status == "in_progress" || status == "completed")) {
		return dst // reported already
	}
	// A call hub denied that runs all the same gets its tool.started, at
	// which hub's watch stops the run.
	switch status {
	case "in_progress", "completed", "failed":
		if c.started {
			break
		}
		// An agent may report a call in_progress before it asks for
		// permission (OpenCode 1.18.33 asks from inside the running
		// tool): a call outside the grant is held until it asks, or
		// shows that it runs without asking (output, or a final status).
		st := c.event(id)
		if !d.o.Allow(st) && !ran && !c.decided {
			return dst
		}
		c.started, c.name = true, st.Name
		dst = append(dst, st)
	}
	if status != "completed" && status != "failed" {
		return dst
	}
	c.finished = true
	fin := events.ToolFinished{CallID: id, Name: c.name, Kind: ToolKind(c.kind), Status: events.ToolOK}
	if status == "failed" {
		fin.Status = events.ToolError
	}
	out := toolOutput(u)
	fin.Output, fin.OutputBytes, fin.Truncated = normalize.CutOutput(out, normalize.DefaultOutputCap)
	fin.ExitCode = exitCode(u.Get("rawOutput"))
	return append(dst, fin)
}

// toolOutput is what a finished call's update says it gave: the text of
// its content blocks (a diff's path and new text), else its raw output.
func toolOutput(u gjson.Result) string {
	var parts []string
	for _, c := range u.Get("content").Array() {
		switch c.Get("type").String() {
		case "content":
			if t := chunkText(c.Get("content")); t != "" {
				parts = append(parts, t)
			}
		case "diff":
			parts = append(parts, "diff "+c.Get("path").String()+"\n"+c.Get("newText").String())
		}
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\n")
	}
	raw := u.Get("rawOutput")
	switch {
	case raw.Type == gjson.String:
		return raw.Str
	case raw.Get("output").Type == gjson.String:
		return raw.Get("output").Str
	case raw.Exists():
		return raw.Raw
	}
	return ""
}

// exitCode is a shell call's exit status where its raw output names one
// (exitCode, exit_code, or metadata.exit); nil otherwise.
func exitCode(raw gjson.Result) *int {
	for _, k := range []string{"exitCode", "exit_code", "metadata.exit"} {
		if v := raw.Get(k); v.Type == gjson.Number {
			n := int(v.Int())
			return &n
		}
	}
	return nil
}

// Permit decides the agent's request for permission to run the call that
// toolCall (the request's params.toolCall) describes, with what earlier
// updates said of it: Options.Allow of its tool.started. The client calls
// it for each request before the line is decoded, and the decoding of the
// line calls it again, with the same answer (the merge is idempotent).
func (d *Decoder) Permit(toolCall gjson.Result) bool {
	id := toolCall.Get("toolCallId").String()
	c := d.call(id)
	c.merge(toolCall)
	// Each request is decided on what it asks, with what the call's
	// earlier updates said: a second request for the same call (another
	// kind, another command) is decided again.
	c.decided, c.allowed = true, d.o.Allow(c.event(id))
	return c.allowed
}

// Asked returns the call a permission request's toolCall (its
// params.toolCall) asks about, for an approver (Options.Answered): what
// the request says of it over what the call's earlier updates said (an
// agent may name the call's path only there: OpenCode 1.18.33's read),
// as the call's tool.started would give it, but for the input, which is
// the raw input as the agent gave it; and the paths of its locations, the
// request's, else the earlier updates'. ok is false when the request
// names no call (no toolCallId).
func (d *Decoder) Asked(toolCall gjson.Result) (st events.ToolStarted, paths []string, ok bool) {
	id := toolCall.Get("toolCallId")
	if !toolCall.IsObject() || id.Type != gjson.String || id.Str == "" {
		return events.ToolStarted{}, nil, false
	}
	c := d.call(id.Str)
	earlier := append([]string(nil), c.locations...)
	c.merge(toolCall)
	if len(c.locations) == 0 {
		c.locations = earlier
	}
	st = c.event(id.Str)
	st.Input = c.input
	if len(st.Input) == 0 {
		st.Input = json.RawMessage(`{}`)
	}
	return st, append([]string(nil), c.locations...), true
}

// permission takes the agent's request for permission to run a call: a
// call hub's grant refuses is denied (the client rejects it with the same
// rule, Permit) and never runs.
func (d *Decoder) permission(dst []events.Body, tc gjson.Result) []events.Body {
	id := tc.Get("toolCallId").String()
	if d.Permit(tc) {
		return dst
	}
	c := d.call(id)
	if c.finished || c.started {
		return dst
	}
	c.finished = true
	st := c.event(id)
	d.denied, d.textAfterDenial = st.Name, false
	dst = d.endBlocks(dst)
	return append(dst, events.ToolFinished{CallID: id, Name: st.Name, Kind: st.Kind, Status: events.ToolDenied,
		Output: "hub rejected the agent's request for permission: not within --permission"})
}
