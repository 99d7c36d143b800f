package turns

import (
	"context"
	"errors"
	"sync"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
)

// Config is how a Conversation treats what its inputs cannot do.
type Config struct {
	// Refused is told of a prompt the agent cannot take (Send's
	// *events.Error, such as invalid_input/prompt_too_large): no turn ran
	// for it, and the session goes on with the next. Nil ends the session
	// with that error instead, for a script whose later prompts build on
	// the refused one. It is called on the conversation's own goroutine.
	Refused func(*events.Error)
}

// Conversation is one hub.Session run from inputs: Send queues a prompt,
// whose turn begins once the turns before it have ended; Interrupt stops
// the turn of the last prompt; End says no prompt follows; Fail ends the
// session at once with a bad input. Every event of the session goes to
// the sink given to Start, from one goroutine at a time, in the session's
// order, its run.finished last; Wait returns that run.finished.
//
// Its methods are safe for concurrent use and never block on a turn; after
// the session ended they do nothing.
type Conversation struct {
	s      *hub.Session // nil when the session never started
	sink   hub.Sink
	cfg    Config
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	queue   []*prompt // sent, not yet begun
	last    *prompt   // the last prompt sent (Interrupt's), nil before the first
	ending  bool      // End: no prompt follows
	failed  *events.Error
	over    bool  // the session takes no more turns (ErrSessionClosed)
	sinkErr error // the sink's first error: it gets only the run.finished after it
	wake    chan struct{}

	done chan struct{} // closed once fin is set and handed to the sink
	fin  events.RunFinished
}

// prompt is one prompt sent: its text and what became of it.
type prompt struct {
	text        string
	interrupted bool          // Interrupt came for it (under mu)
	running     bool          // its turn is being sent or runs (under mu)
	done        chan struct{} // closed once its turn ended, or it was dropped
}

// Start starts a session of req (hub.NewSession with opts; ctx governs the
// whole session) and returns the conversation that runs it. It blocks
// until the agent runs (a live session) or its binary was found (a session
// held by resuming). A session that cannot start is reported to sink as a
// run that did not start — a run.started with no pid, then a run.finished
// with the reason (not_installed, permission_denied, invalid_input, …),
// as hub.Run reports a run refused before its agent started — and the
// conversation has then already ended.
func Start(ctx context.Context, req hub.Request, sink hub.Sink, cfg Config, opts ...hub.Option) *Conversation {
	ctx, cancel := context.WithCancelCause(ctx)
	c := &Conversation{sink: sink, cfg: cfg, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), done: make(chan struct{})}
	if ctx.Err() != nil { // stopped before it began: start nothing, not even the version probe
		c.refused(req, context.Cause(ctx), opts)
		return c
	}
	s, err := hub.NewSession(ctx, req, opts...)
	if err != nil {
		c.refused(req, err, opts)
		return c
	}
	c.s = s
	go c.loop()
	return c
}

// refused reports a session that did not start as hub.Run reports a run
// refused before anything started: Run is given a context already done
// with the reason as its cause (the caller's own, when its context was
// done first), and starts nothing.
func (c *Conversation) refused(req hub.Request, err error, opts []hub.Option) {
	defer close(c.done)
	defer c.cancel(nil)
	var e *events.Error
	if !errors.As(err, &e) {
		e = events.NewError(events.BinInternal, "", "report it", "the session did not start: %v", err)
	}
	ctx, cancel := context.WithCancelCause(c.ctx)
	cancel(e)
	c.fin = hub.Run(ctx, req, c.emit, opts...)
}

// Send queues text as the next turn's prompt and returns a channel closed
// once that turn has ended (its turn.finished handed to the sink), or the
// prompt was refused or dropped (the session ended first). After End it
// only drops text.
func (c *Conversation) Send(text string) <-chan struct{} {
	p := &prompt{text: text, done: make(chan struct{})}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ending || c.stopped() {
		close(p.done)
		return p.done
	}
	c.queue = append(c.queue, p)
	c.last = p
	c.poke()
	return p.done
}

// Interrupt stops what the last prompt sent asked for: its turn, when it
// runs; the prompt itself, never sent to the agent, when its turn has not
// begun (it is dropped, and no turn runs for it); nothing when its turn has
// ended (see Input).
func (c *Conversation) Interrupt() {
	c.mu.Lock()
	p := c.last
	if p == nil || p.interrupted || isClosed(p.done) {
		c.mu.Unlock()
		return
	}
	p.interrupted = true
	if !p.running {
		for i, q := range c.queue {
			if q == p {
				c.queue = append(c.queue[:i], c.queue[i+1:]...)
				close(p.done)
				break
			}
		}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	_ = c.s.Interrupt()
}

// End says no prompt follows: once the turns sent have ended, the session
// is closed (hub.Session.Close). Safe to call more than once.
func (c *Conversation) End() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ending = true
	c.poke()
}

// Fail ends the session at once because of a bad input (err, such as a
// *LineError): the running turn is stopped, the prompts not yet begun are
// dropped, and the session's run.finished is invalid_input/bad_request
// with err's message.
func (c *Conversation) Fail(err error) {
	c.fail(events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
		`fix the session's input: one JSON object a line, {"prompt":"…"} or {"interrupt":true}`, "the session's input: %v", err))
}

// fail ends the session at once with e (the first failure wins).
func (c *Conversation) fail(e *events.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failed == nil && !c.stopped() {
		c.failed = e
		c.poke()
	}
}

// Done returns a channel closed once the session's run.finished has been
// handed to the sink.
func (c *Conversation) Done() <-chan struct{} { return c.done }

// Wait blocks until the session has ended and returns its run.finished.
func (c *Conversation) Wait() events.RunFinished {
	<-c.done
	return c.fin
}

// stopped (under mu) reports that the conversation has ended or is ending.
func (c *Conversation) stopped() bool {
	return c.s == nil || c.failed != nil || c.over || isClosed(c.done)
}

// poke (under mu) wakes the loop.
func (c *Conversation) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// loop runs the turns one after another until the input ends, a bad input
// or the sink fails, or the session ends on its own; then it closes the
// session and hands over the rest of its events.
func (c *Conversation) loop() {
	defer close(c.done)
	defer c.cancel(nil)
	var cur *prompt
	var turnDone chan struct{} // the running turn's goroutine; nil when none runs
	for {
		c.mu.Lock()
		if turnDone == nil && c.failed == nil && !c.over && len(c.queue) > 0 && !isClosed(c.s.Done()) {
			cur, c.queue = c.queue[0], c.queue[1:]
			cur.running = true
			turnDone = make(chan struct{})
			go c.turn(cur, turnDone)
		}
		failed := c.failed
		end := failed != nil || turnDone == nil && (c.over || c.ending && len(c.queue) == 0)
		c.mu.Unlock()
		if end {
			break
		}
		sessionDone := c.s.Done()
		if turnDone != nil {
			sessionDone = nil // the turn's reader gets its turn.finished first
		}
		select {
		case <-c.wake:
		case <-turnDone:
			turnDone = nil
			close(cur.done)
		case <-sessionDone:
			c.mu.Lock()
			c.over = true
			c.mu.Unlock()
		}
	}
	c.mu.Lock()
	failed := c.failed
	dropped := c.queue
	c.queue = nil
	c.mu.Unlock()
	if failed != nil {
		c.cancel(failed) // the session's tree is stopped; its run.finished carries failed
	}
	if turnDone != nil {
		<-turnDone // its Send ends with the turn.finished the stop gives it
		close(cur.done)
	}
	c.fin = c.s.Close()
	for _, ev := range c.s.Unread() {
		_ = c.emit(ev)
	}
	for _, p := range dropped {
		close(p.done)
	}
}

// turn sends p as the session's next turn and hands its events to the
// sink, up to its turn.finished; it closes done when the turn is over.
func (c *Conversation) turn(p *prompt, done chan<- struct{}) {
	defer close(done)
	for ev, err := range c.s.Send(c.ctx, p.text) {
		if err != nil {
			var e *events.Error
			switch {
			case errors.As(err, &e) && c.cfg.Refused != nil:
				c.cfg.Refused(e) // the session goes on
			case errors.As(err, &e):
				c.fail(e)
			default: // hub.ErrSessionClosed: the session has ended
				c.mu.Lock()
				c.over = true
				c.poke()
				c.mu.Unlock()
			}
			return
		}
		if _, ok := ev.Body.(events.TurnStarted); ok {
			c.mu.Lock()
			interrupted := p.interrupted
			c.mu.Unlock()
			if interrupted { // an Interrupt came as its turn began: the session had not the turn yet
				_ = c.s.Interrupt()
			}
		}
		if err := c.emit(ev); err != nil {
			// Leaving the loop interrupts the turn; the session is
			// stopped with the sink's failure, as hub.Run stops a run.
			c.fail(events.NewError(events.BinInternal, "", "check the consumer of hub's output", "writing the events: %v", err))
			return
		}
	}
}

// emit hands ev to the sink; after the sink's first error only the
// run.finished is handed over.
func (c *Conversation) emit(ev events.Event) error {
	c.mu.Lock()
	failedBefore := c.sinkErr != nil
	c.mu.Unlock()
	if failedBefore && ev.Type() != events.TypeRunFinished {
		return nil
	}
	err := c.sink(ev)
	if err != nil {
		c.mu.Lock()
		if c.sinkErr == nil {
			c.sinkErr = err
		}
		c.mu.Unlock()
	}
	return err
}
