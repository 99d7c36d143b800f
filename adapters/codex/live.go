package codex

import (
	stdjson "encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/normalize"
	cxnorm "github.com/hubcli/hub/normalize/codex"
)

var _ adapters.Sessioner = (*Adapter)(nil)

// SessionCommand implements adapters.Sessioner. The argv is
//
//	codex app-server -c features.unbounded_connection_retries=false [RETRIES…] SANDBOX…
//
// where SANDBOX… are Command's sandbox flags as config overrides
// (`-c sandbox_mode="…"`; app-server has no --sandbox) and
// `-c approval_policy="never"`, as `codex exec` runs: no command waits for
// an approval. app-server then speaks JSON-RPC on stdin and stdout, one
// object a line, for as long as its stdin is open (0.169.0: `codex
// app-server --help`, its generated protocol, and testdata/live/codex). The
// model goes in thread/start. Errors: a Resume that is not a UUID is
// invalid_input/bad_session, as Command's; a Schema is refused by hub's
// session before this.
func (*Adapter) SessionCommand(req adapters.Request, inst adapters.Install) (adapters.Command, error) {
	if req.Resume != "" && !sessionID.MatchString(req.Resume) {
		return adapters.Command{}, events.NewError(events.BinInvalidInput, events.ReasonBadSession,
			"pass the session_id of an earlier codex run (a UUID such as 01a22aff-1a95-7700-bf1c-36219f65fb8a)",
			"--resume %q is not a codex session id (a UUID); hub does not resume codex sessions by thread name", req.Resume)
	}
	args := append([]string{"app-server"}, retryOverrides...)
	if req.AgentRetries != nil {
		args = append(args, retryArgs(req.Env, *req.AgentRetries)...)
	}
	for _, a := range sandboxArgs(liveLevel(req)) {
		if mode, ok := strings.CutPrefix(a, "--sandbox="); ok {
			a = fmt.Sprintf("sandbox_mode=%q", mode)
			args = append(args, "-c")
		}
		args = append(args, a)
	}
	if !req.Approve {
		// With an approver the policy is thread/start's "on-request".
		args = append(args, "-c", `approval_policy="never"`)
	}
	return adapters.Command{Path: inst.Path, Args: args}, nil
}

// liveLevel is the grant a session's sandbox holds: the request's, and
// read-only for NoTools (as Command).
func liveLevel(req adapters.Request) grant.Level {
	if req.NoTools {
		return grant.ReadOnly
	}
	return req.Permission.OrDefault()
}

// NewLive implements adapters.Sessioner.
func (*Adapter) NewLive(req adapters.Request) adapters.Live {
	model := req.Model
	if model == "" {
		model = ConfigModel(req.Env)
	}
	cwd := req.Cwd
	if cwd == "" {
		cwd = "."
	}
	mode := "read-only"
	for _, a := range sandboxArgs(liveLevel(req)) {
		if m, ok := strings.CutPrefix(a, "--sandbox="); ok {
			mode = m
		}
	}
	return &live{req: req, model: model, cwd: cwd, sandbox: mode, ready: make(chan struct{})}
}

// JSON-RPC ids of hub's requests: initialize, thread/start (or
// thread/resume), then turn/start from turnIDs and turn/interrupt from
// interruptIDs, each counting up.
const (
	idInitialize = 1
	idThread     = 2
	turnIDs      = 1_000
	interruptIDs = 1_000_000_000
)

// live is hub's side of a `codex app-server` session (codex-cli 0.169.0,
// recorded against mockllm in testdata/live/codex):
//
//	{"id":1,"method":"initialize","params":{"clientInfo":{…},"capabilities":null}} → {"id":1,"result":{…}}
//	{"method":"initialized"}
//	{"id":2,"method":"thread/start","params":{"cwd","approvalPolicy":"never","sandbox",["model"],["baseInstructions"],["developerInstructions"]}} → {"id":2,"result":{"thread":{"id",…},"model",…}}
//	{"id":1000+n,"method":"turn/start","params":{"threadId","input":[{"type":"text","text":"…","text_elements":[]}]}} → {"result":{"turn":{"id",…}}}, then the turn's notifications to turn/completed
//	{"id":…,"method":"turn/interrupt","params":{"threadId","turnId"}} → turn/completed with status interrupted
//
// A resumed session sends thread/resume {threadId, …} in place of
// thread/start. hub waits for each answer before the next request of the
// handshake (as recorded); a turn's prompt waits for the thread. Codex
// exits at once when its stdin closes, even in a turn (edge-closemid). A
// request the server makes of hub (an approval, a question for the user)
// is answered at once: approvals declined (approval_policy "never" asks
// for none), anything else a JSON-RPC error, so nothing waits on hub.
type live struct {
	req     adapters.Request
	model   string
	cwd     string
	sandbox string

	w     adapters.LineWriter
	early adapters.EarlyInterrupt

	ready    chan struct{} // closed once the thread is known, or the session failed before
	once     sync.Once
	readyErr *events.Error // why no turn can start (set before ready closes)

	mu       sync.Mutex
	threadID string
	turnID   string // the running turn's, once known
	started  bool   // the running turn's turn/started came
	turns    int    // turn/start requests sent
	ints     int    // turn/interrupt requests sent

	// Of the run's goroutine only:
	cur     *cxnorm.AppServer                                // the running turn's decoder
	refused *events.Error                                    // the running turn's turn/start was refused
	ask     func(adapters.ToolCall, func(adapters.Decision)) // the approver's (Approvals), nil without one
	changes map[string]gjson.Result                          // file changes announced (item/started), by item id, until asked about
}

var _ adapters.Approving = (*live)(nil)

// Approvals implements adapters.Approving: the thread runs with
// approvalPolicy "on-request", in which Codex runs commands and patches
// inside its sandbox without asking and asks only to leave it (a command
// the model asks to run escalated, a write outside the writable roots).
// Each request (item/commandExecution/requestApproval,
// item/fileChange/requestApproval) is put to ask as a call outside the
// grant (ToolCall.Unconfined); its Decision is answered accept or decline
// (Stop: decline, as hub stops the run itself).
func (l *live) Approvals(ask func(adapters.ToolCall, func(adapters.Decision))) {
	l.ask = ask
	l.changes = map[string]gjson.Result{}
}

func (l *live) Open(stdin io.WriteCloser) {
	l.w.Open(stdin)
	go func() {
		_ = l.w.Write(map[string]any{"id": idInitialize, "method": "initialize",
			"params": map[string]any{"clientInfo": map[string]any{"name": "hub", "title": "hub", "version": "1"}, "capabilities": nil}})
	}()
}

// Check refuses what Codex would refuse, as Command does.
func (l *live) Check(prompt string) error { return checkPrompt(prompt) }

// Send waits for the thread, then starts the turn.
func (l *live) Send(prompt string) error {
	<-l.ready
	if l.readyErr != nil {
		return l.readyErr
	}
	l.early.Sent()
	l.mu.Lock()
	l.turns++
	id, thread := turnIDs+l.turns, l.threadID
	l.turnID, l.started = "", false
	l.mu.Unlock()
	return l.w.Write(map[string]any{"id": id, "method": "turn/start", "params": map[string]any{
		"threadId": thread, "input": []any{map[string]any{"type": "text", "text": prompt, "text_elements": []any{}}}}})
}

// Interrupt sends turn/interrupt for the running turn. Codex 0.169.0
// acknowledges an interrupt that comes before the turn's turn/started, even
// one naming the turn its turn/start answer gave, and runs the turn to its
// end (recorded: testdata/live/codex/README.md): such an interrupt is sent
// again at turn/started.
func (l *live) Interrupt() error {
	l.early.Asked()
	l.mu.Lock()
	started := l.started
	l.mu.Unlock()
	if started {
		l.interrupt()
	}
	return nil
}

// interrupt writes turn/interrupt for the running turn, without waiting.
func (l *live) interrupt() {
	l.mu.Lock()
	l.ints++
	id, thread, turn := interruptIDs+l.ints, l.threadID, l.turnID
	l.mu.Unlock()
	go func() {
		_ = l.w.Write(map[string]any{"id": id, "method": "turn/interrupt", "params": map[string]any{"threadId": thread, "turnId": turn}})
	}()
}

func (l *live) Close() {
	l.w.Close()
	l.fail(events.NewError(events.BinProtocol, events.ReasonUnexpectedExit,
		"start a new session", "the session ended before codex started its thread"))
}

// fail ends the wait for the thread with err, unless it ended.
func (l *live) fail(err *events.Error) {
	l.once.Do(func() {
		l.readyErr = err
		close(l.ready)
	})
}

// named records the running turn's id (turn/start's answer, or
// turn/started), and at turn/started (began) sends an interrupt asked
// before.
func (l *live) named(turn string, began bool) {
	if turn == "" {
		return
	}
	l.mu.Lock()
	l.turnID = turn
	again := began && !l.started
	if began {
		l.started = true
	}
	l.mu.Unlock()
	if again && l.early.Began() {
		l.interrupt()
	}
}

func (l *live) Line(dst []events.Body, line []byte) ([]events.Body, bool, bool) {
	r := gjson.ParseBytes(line)
	method, id := r.Get("method"), r.Get("id")
	switch {
	case method.Exists() && id.Exists():
		return l.request(dst, method.Str, id, r.Get("params")), true, false
	case method.Exists():
		switch method.Str {
		case "turn/started":
			l.named(r.Get("params.turn.id").Str, true)
		case "item/started":
			if it := r.Get("params.item"); l.changes != nil && it.Get("type").Str == "fileChange" {
				l.changes[it.Get("id").Str] = it
			}
		}
		return dst, false, false
	case !id.Exists():
		return dst, false, false // neither: the decoder says what it is
	}
	n := id.Int()
	rpcErr := r.Get("error")
	switch {
	case n == idInitialize:
		if rpcErr.Exists() {
			l.abort(events.NewError(events.BinProtocol, events.ReasonMalformed, "report it, with the codex version",
				"codex app-server refused hub's initialize: %s", normalize.Shorten(rpcErr.Get("message").Str, 500)))
			return dst, true, false
		}
		go l.thread()
	case n == idThread:
		if rpcErr.Exists() {
			msg := normalize.Shorten(rpcErr.Get("message").Str, 500)
			if l.req.Resume != "" {
				l.abort(events.NewError(events.BinInvalidInput, events.ReasonBadSession, hintSession,
					"codex could not resume session %s: %s", l.req.Resume, msg))
			} else {
				l.abort(events.NewError(events.BinProtocol, events.ReasonMalformed, "report it, with the codex version",
					"codex app-server refused to start a thread: %s", msg))
			}
			return dst, true, false
		}
		thread, model := r.Get("result.thread.id").Str, r.Get("result.model").Str
		if l.req.Model != "" {
			model = l.req.Model
		}
		if model != "" {
			l.model = model
		}
		l.mu.Lock()
		l.threadID = thread
		l.mu.Unlock()
		if l.cur != nil {
			l.cur.SetSession(thread, l.model)
		}
		ss := events.SessionStarted{SessionID: thread}
		if l.model != "" {
			m := l.model
			ss.Model = &m
		}
		dst = append(dst, ss)
		l.once.Do(func() { close(l.ready) })
	case n > turnIDs && n < interruptIDs:
		if rpcErr.Exists() {
			l.refused = events.NewError(events.BinProtocol, events.ReasonMalformed, "send the next prompt once the last turn ended",
				"codex refused the turn: %s", normalize.Shorten(rpcErr.Get("message").Str, 500))
			return dst, true, true
		}
		l.named(r.Get("result.turn.id").Str, false)
	}
	return dst, true, false
}

// hintSession is the hint of a resume Codex cannot do.
const hintSession = "pass a session id Codex knows (run.finished.session_id of an earlier run, same CODEX_HOME)"

// thread sends initialized and then thread/start, or thread/resume.
func (l *live) thread() {
	if l.w.Write(map[string]any{"method": "initialized"}) != nil {
		return
	}
	policy := "never"
	if l.req.Approve {
		policy = "on-request"
	}
	params := map[string]any{"cwd": l.cwd, "approvalPolicy": policy, "sandbox": l.sandbox}
	if l.req.Model != "" {
		params["model"] = l.req.Model
	}
	// The system prompt goes in the JSON line, on stdin: no argv limit.
	if l.req.SystemPrompt != "" {
		params["baseInstructions"] = l.req.SystemPrompt
	}
	if l.req.AppendSystemPrompt != "" {
		params["developerInstructions"] = l.req.AppendSystemPrompt
	}
	method := "thread/start"
	if l.req.Resume != "" {
		method, params["threadId"] = "thread/resume", l.req.Resume
	}
	_ = l.w.Write(map[string]any{"id": idThread, "method": method, "params": params})
}

// abort fails the session: no turn can start, and the run stops with err
// (the turn decoder's Status).
func (l *live) abort(err *events.Error) {
	l.fail(err)
	if l.cur != nil {
		l.cur.Abort(err)
	}
}

// request answers a request of the server's, without waiting for the
// write. Approvals are declined (hub's grant decides, and approval_policy
// "never" asks for none: one means the policy did not hold, which hub
// reports); anything else gets a JSON-RPC error.
func (l *live) request(dst []events.Body, method string, id gjson.Result, params gjson.Result) []events.Body {
	if call, ok := l.approval(method, params); ok && l.ask != nil {
		rid := rpcID(id)
		l.ask(call, func(d adapters.Decision) {
			decision := "decline"
			if d.Verdict == adapters.AllowOnce || d.Verdict == adapters.AllowSession {
				decision = "accept"
			}
			go func() { _ = l.w.Write(map[string]any{"id": rid, "result": map[string]any{"decision": decision}}) }()
		})
		return dst
	}
	reply := map[string]any{"id": rpcID(id)}
	switch method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		reply["result"] = map[string]any{"decision": "decline"}
	case "execCommandApproval", "applyPatchApproval":
		reply["result"] = map[string]any{"decision": "denied"}
	default:
		reply["error"] = map[string]any{"code": -32601, "message": "hub does not answer " + method + " in a session"}
	}
	go func() { _ = l.w.Write(reply) }()
	return append(dst, events.Notice{Kind: events.NoticeUnknownEvent,
		Message: fmt.Sprintf("codex asked hub %q; hub declined it (a session runs with approval_policy \"never\")", method)})
}

// approval reads an approval request of Codex's as the tool call it asks
// about, named as the decoder names the call's tool.started
// (normalize/codex: command_execution, file_change): a command, or a file
// change with the paths and diffs its item/started announced.
func (l *live) approval(method string, p gjson.Result) (adapters.ToolCall, bool) {
	call := adapters.ToolCall{CallID: p.Get("itemId").Str, Reason: p.Get("reason").Str, Unconfined: true}
	switch method {
	case "item/commandExecution/requestApproval":
		call.Name, call.Kind = "command_execution", events.ToolShell
		in, _ := stdjson.Marshal(map[string]string{"command": p.Get("command").Str, "cwd": p.Get("cwd").Str})
		call.Input = in
	case "item/fileChange/requestApproval":
		call.Name, call.Kind = "file_change", events.ToolWrite
		it := l.changes[call.CallID]
		delete(l.changes, call.CallID)
		var changes []map[string]string
		var diffs []string
		for _, c := range it.Get("changes").Array() {
			kind := c.Get("kind.type").Str
			if kind != "add" {
				call.Kind = events.ToolEdit
			}
			path := c.Get("path").Str
			call.Paths = append(call.Paths, path)
			changes = append(changes, map[string]string{"path": path, "kind": kind})
			if d := c.Get("diff").Str; d != "" {
				diffs = append(diffs, d)
			}
		}
		in, _ := stdjson.Marshal(map[string]any{"changes": changes})
		call.Input = in
		call.Diff = strings.Join(diffs, "\n")
	default:
		return call, false
	}
	return call, true
}

// rpcID is a JSON-RPC id as it came: a number or a string.
func rpcID(id gjson.Result) any {
	if id.Type == gjson.Number {
		return id.Int()
	}
	return id.Str
}

func (l *live) NewTurnDecoder() normalize.Decoder {
	prev := l.cur
	opts := cxnorm.Options{Model: l.model, FailFast: !l.req.NoFailFast}
	if prev == nil {
		opts.Resume = l.req.Resume
	}
	l.cur = cxnorm.NewAppServer(opts)
	if prev != nil {
		l.cur.Continue(prev)
	}
	l.mu.Lock()
	thread := l.threadID
	l.mu.Unlock()
	if thread != "" {
		l.cur.SetSession(thread, l.model)
	}
	return l.cur
}

func (l *live) EndTurn(o normalize.Outcome) normalize.Outcome {
	if l.refused != nil {
		o = normalize.Outcome{Error: l.refused}
		l.refused = nil
	}
	return o
}
