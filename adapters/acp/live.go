package acp

import (
	"encoding/json"
	"errors"
	"io"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
	acpnorm "github.com/hubcli/hub/normalize/acp"
)

var _ adapters.Sessioner = (*Adapter)(nil)

// SessionCommand implements adapters.Sessioner: the caller's command, as
// Command's. An ACP agent is a session by nature: hub's client sets the
// session up once on the connection and sends each turn as a
// session/prompt (NewLive).
func (a *Adapter) SessionCommand(req adapters.Request, inst adapters.Install) (adapters.Command, error) {
	if err := a.CheckRequest(req); err != nil {
		return adapters.Command{}, err
	}
	return adapters.Command{Path: inst.Path, Args: append([]string(nil), req.Args...)}, nil
}

// NewLive implements adapters.Sessioner.
func (a *Adapter) NewLive(req adapters.Request) adapters.Live {
	return NewLive(req, LiveOptions{Info: a.Info()})
}

// LiveOptions are what NewLive must know of the agent behind the ACP
// connection.
type LiveOptions struct {
	// Info is the agent's: its name in messages, and the grants its
	// permission requests are answered from (the acp adapter's when its
	// Name is "").
	Info adapters.Info
	// MaxPromptBytes is the largest prompt the session takes, in bytes
	// (MaxPromptBytes when 0).
	MaxPromptBytes int
}

// NewLive returns hub's side of one live session with an ACP agent (the
// acp adapter's, and OpenCode's through `opencode acp`): one connection,
// on which hub's client, once the agent runs, sends initialize,
// session/new (or session/load of Request.Resume) and the model's setting
// (peer.setup), then each turn's prompt as a session/prompt, one at a time;
// the turn ends when that prompt is answered (its stopReason, with the
// turn's usage, or an error answer). Interrupt sends session/cancel for the
// running prompt, and the session goes on; Close closes the agent's stdin
// (OpenCode 1.18.33 exits at once: testdata/live/opencode). The agent's
// permission and fs/* requests are answered as in a one-shot run (peer),
// but that with an approver (Request.Approve) its permission requests
// are put to the approver (Approvals).
//
//	→ {"id":1,"method":"initialize",…}  ← {"id":1,"result":{…}}
//	→ {"id":2,"method":"session/new",…} ← {"id":2,"result":{"sessionId":"ses_…",…}}
//	→ {"id":3,"method":"session/prompt","params":{"sessionId":…,"prompt":[{"type":"text","text":"…"}]}}
//	← session/update notifications …    ← {"id":3,"result":{"stopReason":"end_turn","usage":{…}}}
//	→ {"method":"session/cancel","params":{"sessionId":…}}   (Interrupt; the answer's stopReason is then cancelled)
//
// Each turn's decoder is normalize/acp's: New's for the first turn, which
// also reads the setup's answers (session.started comes from session/new's),
// then Next's of the turn before.
func NewLive(req adapters.Request, o LiveOptions) adapters.Live {
	if o.Info.Name == "" {
		o.Info = info
	}
	if o.MaxPromptBytes == 0 {
		o.MaxPromptBytes = MaxPromptBytes
	}
	l := &live{peer: &peer{req: req}, o: o, ready: make(chan struct{}), closed: make(chan struct{}),
		asks: map[string]*asking{}, answers: map[string]bool{}}
	l.opts = l.decoderOptions(req)
	return l
}

// live is NewLive's adapters.Live.
type live struct {
	*peer
	o    LiveOptions
	opts acpnorm.Options

	cur *acpnorm.Decoder // the running (or next) turn's decoder: the run's goroutine's

	ready     chan struct{} // closed once the setup ended
	closed    chan struct{} // closed by Close
	closeOnce sync.Once
	wmu       sync.Mutex // one write on stdin at a time: the SDK's messages (liveGate) and hub's session/cancel

	// Under peer.mu, with peer.interrupted (the running turn is being
	// cancelled: the agent's permission requests are answered cancelled):
	sid      sdk.SessionId // the session's, once set up
	setupErr *events.Error // the agent's error answer to a setup request
	gen      int64         // turns sent
	promptID int64         // the JSON-RPC id of the turn's session/prompt, once its write began
	written  bool          // the turn's prompt was written
	answered bool          // and answered
	asked    bool          // Interrupt was called in the turn
	began    bool          // the agent began the turn (a session/update after the prompt)
	sent     chan error    // the prompt's write's error, for Send

	// Under peer.mu, in a session with an approver (Approvals):
	ask     func(adapters.ToolCall, func(adapters.Decision))
	asks    map[string]*asking // the permission requests put to ask and not answered, by JSON-RPC id
	answers map[string]bool    // tool call id → allowed, as hub answered its last permission request
}

func (l *live) Open(stdin io.WriteCloser) {
	l.open(stdin, liveGate{l})
	go l.setUp()
}

// setUp sets the session up (peer.setup). An error answer is classified
// by Line, which sees it first (setupErr).
func (l *live) setUp() {
	defer close(l.ready)
	sid, err := l.setup(l.isClosed)
	if err != nil {
		return
	}
	l.mu.Lock()
	l.sid = sid
	l.mu.Unlock()
}

func (l *live) isClosed() bool {
	select {
	case <-l.closed:
		return true
	default:
		return false
	}
}

func (l *live) Check(prompt string) error {
	return adapters.CheckPrompt(l.o.Info.Name, prompt, l.o.MaxPromptBytes)
}

// errNoSession is Send's error when the setup ended without a session and
// without the agent's error answer (its connection ended).
var errNoSession = errors.New("the agent's ACP session was not set up (its connection ended)")

// Send waits for the setup (the first turn's prompt goes once the session
// is set up: OpenCode 1.18.33 takes 4–6 s to answer initialize and
// session/new on this machine), then sends prompt as a session/prompt,
// and returns once its write ended. The agent's error answer to a setup
// request is returned as the *events.Error it is (auth_required is
// unavailable/auth, …), which ends the session.
func (l *live) Send(prompt string) error {
	l.mu.Lock()
	l.gen++
	l.promptID, l.written, l.answered, l.asked, l.began, l.interrupted = 0, false, false, false, false, false
	sent := make(chan error, 1)
	l.sent = sent
	l.mu.Unlock()
	select {
	case <-l.ready:
	case <-l.closed:
		return io.ErrClosedPipe
	}
	l.mu.Lock()
	sid, failed := l.sid, l.setupErr
	l.mu.Unlock()
	switch {
	case failed != nil:
		return failed
	case sid == "":
		return errNoSession
	}
	go func() {
		// The answer goes to the turn's decoder through Line; the SDK's
		// own result is only an error when the prompt was never written.
		_, err := l.conn.Prompt(l.ctx, sdk.PromptRequest{SessionId: sid, Prompt: []sdk.ContentBlock{sdk.TextBlock(prompt)}})
		select {
		case sent <- err:
		default:
		}
	}()
	select {
	case err := <-sent:
		return err
	case <-l.closed:
		return io.ErrClosedPipe
	}
}

// Interrupt sends session/cancel for the running turn's prompt, without
// waiting for the write; asked before the prompt's write, it is sent right
// after it (never before: it would cancel nothing), and again when the
// agent begins the turn (its first update of the turn's content:
// turnContent), as an agent may drop a cancel that comes before its turn
// began (as Claude Code and pi drop theirs: adapters.EarlyInterrupt).
//
// Permission requests waiting for the approver are answered cancelled,
// after the session/cancel, and their late answers dropped (Approvals).
func (l *live) Interrupt() error {
	l.mu.Lock()
	l.asked, l.interrupted = true, true
	gen, now := l.gen, l.written && !l.answered
	pending := l.cancelAsks()
	l.mu.Unlock()
	if now || len(pending) > 0 {
		go func() {
			if now {
				l.cancelTurn(gen)
			}
			for _, id := range pending {
				l.respond(id, sdk.NewRequestPermissionOutcomeCancelled())
			}
		}()
	}
	return nil
}

// turnContent are the session updates that show the agent working on a
// turn (its begun turn, for Interrupt); the session's settings
// (available_commands_update, which OpenCode 1.18.33 sends after
// session/new, while the first prompt may already be out) and usage do not.
var turnContent = map[string]bool{"agent_message_chunk": true, "agent_thought_chunk": true, "user_message_chunk": true,
	"tool_call": true, "tool_call_update": true, "plan": true}

// cancelTurn writes session/cancel for turn gen, unless that turn's prompt
// was answered (or another turn began) by the time it can be written.
func (l *live) cancelTurn(gen int64) {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	ok, sid := gen == l.gen && l.written && !l.answered, l.sid
	l.mu.Unlock()
	if ok {
		_, _ = l.stdin.Write(cancelLine(sid))
	}
}

// cancelLine is session/cancel for session sid, a line.
func cancelLine(sid sdk.SessionId) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": sdk.AgentMethodSessionCancel,
		"params": sdk.CancelNotification{SessionId: sid}})
	return append(b, '\n')
}

// Close closes the agent's stdin (a write under way fails) and ends the
// SDK's connection.
func (l *live) Close() {
	l.closeOnce.Do(func() {
		close(l.closed)
		if l.stdin != nil {
			_ = l.stdin.Close()
			l.q.close()
			l.cancel()
		}
	})
}

// Line gives the SDK the agent's requests (a permission request decided
// with the turn's decoder's Permit, or, with an approver, put to it:
// request) and the answers to hub's requests;
// session/update is the decoder's alone. An answer is decoded here, by the
// turn's decoder, before the SDK gets it (own): so that a setup request's
// error answer is classified before the setup sees it fail, and the turn
// ends at its prompt's answer.
func (l *live) Line(dst []events.Body, line []byte) ([]events.Body, bool, bool) {
	method := gjson.GetBytes(line, "method")
	switch {
	case method.Str == "session/update":
		if !turnContent[gjson.GetBytes(line, "params.update.sessionUpdate").Str] {
			return dst, false, false
		}
		l.mu.Lock()
		again := l.written && !l.answered && !l.began && l.asked
		l.began = l.began || l.written && !l.answered
		gen := l.gen
		l.mu.Unlock()
		if again {
			go l.cancelTurn(gen)
		}
		return dst, false, false
	case method.Str == "session/request_permission" && l.req.Approve:
		l.request(line) // the approver's (Approvals)
		return dst, false, false
	case method.Exists():
		l.receive(line, l.cur.Permit)
		return dst, false, false
	case !gjson.GetBytes(line, "id").Exists():
		return dst, false, false // the decoder says what it is
	}
	l.mu.Lock()
	id := l.promptID
	l.mu.Unlock()
	if id != 0 {
		l.cur.PromptSent(id)
	}
	dst = l.cur.Decode(dst, line)
	end := l.cur.Answered()
	step, failed := l.cur.Failed()
	l.mu.Lock()
	if failed != nil && step != acpnorm.MethodPrompt && l.setupErr == nil {
		l.setupErr = failed
	}
	if end {
		l.answered, l.promptID = true, 0
	}
	l.mu.Unlock()
	l.receive(line, l.cur.Permit)
	return dst, true, end
}

func (l *live) NewTurnDecoder() normalize.Decoder {
	if l.cur == nil {
		l.cur = acpnorm.New(l.opts)
		l.cur.PromptSent(0) // not yet: the id is the one its write gives it
	} else {
		l.cur = l.cur.Next()
	}
	return l.cur
}

// EndTurn gives the turn's outcome the usage its prompt's answer reported
// (Totals): it comes in the line that ends the turn, which the meter has
// not seen when the turn ends.
func (l *live) EndTurn(o normalize.Outcome) normalize.Outcome {
	if u, source, ok := l.cur.TurnUsage(); ok && o.Totals == nil {
		o.Totals = &normalize.Totals{Usage: u, CostSource: source}
	}
	return o
}

// liveGate is the agent's stdin as the SDK writes it (one Write a message,
// under the SDK's write lock), taking turns with hub's session/cancel: it
// notes the id of the turn's session/prompt as its write begins, and sends
// a session/cancel asked before then right after it.
type liveGate struct{ l *live }

func (g liveGate) Write(b []byte) (int, error) {
	l := g.l
	l.wmu.Lock()
	defer l.wmu.Unlock()
	// The SDK's messages start {"jsonrpc":"2.0","id":…,"method":…: the
	// method is in the head, whatever the size of the params.
	head := b[:min(len(b), 256)]
	if gjson.GetBytes(head, "method").Str != acpnorm.MethodPrompt {
		return l.stdin.Write(b)
	}
	l.mu.Lock()
	l.promptID = gjson.GetBytes(head, "id").Int()
	sent := l.sent
	l.mu.Unlock()
	n, err := l.stdin.Write(b)
	l.mu.Lock()
	l.written = err == nil
	cancel, sid := err == nil && l.asked, l.sid
	l.mu.Unlock()
	if cancel {
		_, _ = l.stdin.Write(cancelLine(sid))
	}
	select {
	case sent <- err:
	default:
	}
	return n, err
}
