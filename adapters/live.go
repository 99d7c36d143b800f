package adapters

import (
	"encoding/json"
	"io"
	"sync"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Sessioner is an Adapter whose CLI can hold a live session: many turns in
// one process, each prompt written on its stdin (Claude Code's stream-json
// input, pi's RPC mode, …). hub.NewSession uses it; an agent that is not a
// Sessioner gets sessions of one process per turn, each resuming the last.
type Sessioner interface {
	// SessionCommand builds the process of a live session for req, whose
	// Prompt is "" (the prompts come as turns). Errors are *events.Error,
	// as Command's.
	SessionCommand(req Request, inst Install) (Command, error)
	// NewLive returns hub's side of one live session's protocol.
	NewLive(req Request) Live
}

// Live is hub's side of one live session: it writes the turns on the
// agent's stdin, recognises the line that ends a turn, and makes a decoder
// for each turn's lines.
//
// Open is called once the agent runs, then, from the run's goroutine, Line
// for each stdout line that is a JSON object; Send, Interrupt and Close
// from the session's caller, at most one at a time, between Open and the
// agent's exit. None may block for long.
type Live interface {
	// Open is given the agent's stdin. The Live writes on it and closes it
	// in Close.
	Open(stdin io.WriteCloser)
	// Check refuses a prompt the CLI cannot take (too large:
	// invalid_input/prompt_too_large, as Command's), before the turn starts.
	Check(prompt string) error
	// Send writes prompt as the next turn. The caller sends a turn only
	// once the last one ended. It may block while the agent does not read
	// its stdin, or for the session the CLI has yet to start (Codex's
	// thread); Interrupt and Close must not wait for it, and Close ends
	// its wait. An *events.Error says why the session cannot take the
	// turn, and ends it with that error.
	Send(prompt string) error
	// Interrupt asks the agent to stop the running turn and keep the
	// session (Claude Code's interrupt control request, pi's abort): the
	// turn then ends as the CLI ends an interrupted turn. It does not wait
	// for the write: an agent that does not read its stdin never gets it.
	Interrupt() error
	// Close closes the agent's stdin (a write under way fails): no turn
	// will come, and the CLI exits once the running turn (if any) is over.
	Close()
	// Line sees each stdout line before any decoder does: own says the
	// line is the protocol's own (a response to a command) and no decoder
	// is given it; the bodies Line appends to dst are emitted (a
	// session.started made from a response); end says the line ends the
	// running turn, after the turn's decoder has been given it.
	Line(dst []events.Body, line []byte) (out []events.Body, own, end bool)
	// NewTurnDecoder returns the decoder of one turn's lines: the session's
	// first, and one after each turn's end.
	NewTurnDecoder() normalize.Decoder
	// EndTurn returns the outcome of a turn as its decoder decided it,
	// corrected where the CLI reports running totals of the session
	// rather than the turn's (Claude Code's total_cost_usd).
	EndTurn(o normalize.Outcome) normalize.Outcome
}

// LineWriter writes JSON lines on an agent's stdin for a Live: one whole
// line a write, one write at a time; Close closes stdin at once, failing a
// write that waits for an agent that does not read (the pipe is pollable).
// The zero value is ready for Open.
type LineWriter struct {
	wmu    sync.Mutex // one write at a time
	mu     sync.Mutex // stdin and closed
	stdin  io.WriteCloser
	closed bool
}

// Open sets the agent's stdin.
func (w *LineWriter) Open(stdin io.WriteCloser) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stdin = stdin
}

// Write marshals v and writes it as one line. After Close it fails with
// io.ErrClosedPipe.
func (w *LineWriter) Write(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	w.wmu.Lock()
	defer w.wmu.Unlock()
	w.mu.Lock()
	stdin, closed := w.stdin, w.closed
	w.mu.Unlock()
	if stdin == nil || closed {
		return io.ErrClosedPipe
	}
	_, err = stdin.Write(append(b, '\n'))
	return err
}

// Close closes stdin, without waiting for a write under way.
func (w *LineWriter) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stdin != nil && !w.closed {
		_ = w.stdin.Close()
	}
	w.closed = true
}

// EarlyInterrupt keeps an interrupt asked before the CLI began the turn
// (before Claude Code's system/init, pi's agent_start), which Claude Code
// 2.1.328 and pi 0.73.1 acknowledge and then drop, running the turn to its
// end: the Live sends it again when the turn begins. The zero value is
// ready; it is safe for concurrent use.
type EarlyInterrupt struct {
	mu    sync.Mutex
	began bool // the running turn has begun
	asked bool // an interrupt came before it began
}

// Sent says a new turn's prompt is being sent.
func (e *EarlyInterrupt) Sent() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.began, e.asked = false, false
}

// Asked says an interrupt is being sent.
func (e *EarlyInterrupt) Asked() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.began {
		e.asked = true
	}
}

// Began says the turn began, and reports whether an interrupt asked before
// is to be sent again now.
func (e *EarlyInterrupt) Began() (again bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.began = true
	again, e.asked = e.asked, false
	return again
}
