package hub

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
)

// DefaultSessionIdle is how long a session waits for its next prompt before
// it ends itself (WithSessionIdle): 10 minutes.
const DefaultSessionIdle = 10 * time.Minute

// maxQueued bounds the events a session holds for a consumer that has not
// read them: the run waits (as a one-shot run waits for a slow Sink) once
// this many are queued while a turn is being read.
const maxQueued = 4096

var (
	// ErrTurnRunning is Send's error while another turn of the session
	// runs: a session takes one turn at a time.
	ErrTurnRunning = errors.New("hub: a turn of this session is still running; read its events to its turn.finished (or Interrupt it) first")
	// ErrSessionClosed is Send's error once the session ended: Close was
	// called, or the agent's process ended (Close returns its run.finished,
	// which says why).
	ErrSessionClosed = errors.New("hub: the session has ended")
	errSessionIdle   = errors.New("hub: the session waited longer than its idle limit (WithSessionIdle) for a prompt")
	errSentOnce      = errors.New("hub: this Send's turn was already sent: call Send again for another turn")
)

// interruptedByCaller is the error of a turn Interrupt cut short.
func interruptedByCaller() *events.Error {
	return events.NewError(events.BinCancelled, events.ReasonCaller,
		"send the next prompt to go on in the same session", "the turn was interrupted at the caller's request")
}

// turnTimedOut is the error of a turn its time limit (WithTurnTimeout) cut
// short.
func turnTimedOut(d time.Duration) *events.Error {
	return events.NewError(events.BinTimeout, events.ReasonWall, "send the next prompt, or give turns more time (WithTurnTimeout, --turn-timeout)",
		"the turn took longer than its limit (%s); hub interrupted it and the session goes on", d)
}

// WithTurnTimeout bounds each turn of a Session: a turn still running after
// d is interrupted (as Interrupt), ends timeout/wall, and the session goes
// on. 0 or less: no bound but the session's own limits.
func WithTurnTimeout(d time.Duration) Option {
	return func(o *options) { o.turnTimeout = d }
}

// Session is a live session: many turns with one agent, in one agent
// process where the CLI can hold one (adapters.Sessioner: Claude Code's
// stream-json input, pi's RPC mode), its process tree held, limited and
// killed as a run's (SPEC §5). Its events form one hub.event/v1 stream, as
// a run's: run.started once, session.started (with mode "live"), then each
// turn's events between a turn.started and a turn.finished, and one
// run.finished at the end with the session's totals. The limits of the
// Request hold for the whole session (--timeout, --max-cost, tokens,
// turns, tool steps); the idle limit counts only while a turn runs.
//
// A Session is safe for concurrent use, but takes one turn at a time.
type Session struct {
	req         Request
	idle        time.Duration
	turnTimeout time.Duration

	mu      sync.Mutex
	cond    *sync.Cond
	queue   []events.Event
	fin     *events.RunFinished // the run.finished, once queued
	finEv   events.Event        // its event
	lv      *liveDecoder        // the agent process's decoder, once it runs
	turn    int64               // the last turn sent
	busy    bool                // a turn was sent and its turn.finished not read
	skip    int64               // a turn whose remaining events nobody reads
	closing bool
	idleT   *time.Timer
	rs      *resumed      // a session held by resuming (the agent is no adapters.Sessioner); nil when live
	ready   chan struct{} // closed once the agent runs or the run ended
	done    chan struct{} // closed once the run returned
	cancel  context.CancelCauseFunc
}

// WithSessionIdle sets how long a Session waits for its next prompt before
// it ends itself, as Close does (DefaultSessionIdle when not given; 0 or
// less: never).
func WithSessionIdle(d time.Duration) Option {
	return func(o *options) { o.sessionIdle, o.sessionIdleSet = d, true }
}

// NewSession starts a live session of req's agent and returns once the
// agent's process runs. req.Prompt must be "": the prompts are the turns
// (Send). req.Files go with the first turn only, inlined ahead of its
// prompt; the agent's session holds them for the turns after. The ctx governs the whole session: cancelling it stops the
// agent's tree as it stops a run's, and the session ends cancelled/caller.
//
// Errors are *events.Error: the agent cannot hold a live session
// (invalid_input/bad_request, before anything starts: hub does not run a
// weaker session in its place), a request a session cannot carry yet
// (--schema, --sandbox), or whatever kept the agent from starting (the
// bins of a run that never started: not_installed, permission_denied, …).
func NewSession(ctx context.Context, req Request, opts ...Option) (*Session, error) {
	if err := checkSessionRequest(req); err != nil {
		return nil, err
	}
	o := newOptions(opts)
	ad, err := adapters.Lookup(req.Agent)
	if err != nil {
		return nil, events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			fmt.Sprintf("use one of: %s", strings.Join(adapters.Names(), ", ")), "%v", err)
	}
	if e := checkFiles(req, ad.Name(), ad.Info().MaxPromptBytes, true); e != nil {
		return nil, e
	}
	if _, live := ad.(adapters.Sessioner); !live && o.approver != nil {
		return nil, events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"run without an approver, and hold the agent to a --permission level instead",
			"%s cannot hold a live session through hub, so it cannot ask hub before its tool calls; hub does not run it unasked when an approver is set", ad.Name())
	}
	if _, live := ad.(adapters.Sessioner); !live {
		// No process until the first turn: the binary is found now, so
		// that a missing agent is NewSession's error, as for a live one.
		if _, err := ad.Detect(ctx, req.Bin); err != nil {
			var e *events.Error
			if errors.As(err, &e) {
				return nil, e
			}
			return nil, events.NewError(events.BinNotInstalled, events.ReasonNotFound, "install the agent, or pass --bin", "%v", err)
		}
		return newResumed(ctx, req, o, opts)
	}
	s := newSession(req, o)
	o.session = s
	sctx, cancel := context.WithCancelCause(ctx)
	s.cancel = cancel
	go func() {
		defer close(s.done)
		defer cancel(nil)
		r := newRunner(req, s.sink, o)
		defer r.closeSandbox(false)
		r.finish(r.settle(sctx, r.run(sctx)))
	}()
	select {
	case <-s.ready:
	case <-s.done:
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fin != nil && s.lv == nil {
		// It never ran: the run.finished says why.
		if e := s.fin.Error; e != nil {
			return nil, e
		}
		return nil, events.NewError(events.BinInternal, "", "report it", "the session's agent did not start")
	}
	s.armIdle()
	return s, nil
}

// newSession is a Session of req with o's session options (idle limit,
// turn timeout), live or held by resuming.
func newSession(req Request, o options) *Session {
	s := &Session{req: req, idle: DefaultSessionIdle, turnTimeout: o.turnTimeout, ready: make(chan struct{}), done: make(chan struct{})}
	if o.sessionIdleSet {
		s.idle = o.sessionIdle
	}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// checkSessionRequest refuses what a session cannot carry, before anything
// starts.
func checkSessionRequest(req Request) *events.Error {
	why := ""
	switch {
	case req.Prompt != "":
		why = "a session's prompts are its turns: pass them to Session.Send, not in Request.Prompt"
	case req.Schema != nil:
		why = "--schema is checked per run, not yet per turn of a session: run each structured question with hub.Run"
	case req.Sandbox != "":
		why = "a sandbox is made and applied per run, not yet per session: run sandboxed work with hub.Run"
	}
	if why == "" {
		return nil
	}
	return events.NewError(events.BinInvalidInput, events.ReasonBadRequest, "use hub.Run for it", "%s", why)
}

// liveFor makes the run's agent process live for ad (a session's, or a
// run with an approver), or refuses it.
func (r *runner) liveFor(ad adapters.Adapter) (adapters.Sessioner, *liveDecoder, *events.Error) {
	sr, ok := ad.(adapters.Sessioner)
	if !ok && r.opt.session == nil {
		return nil, nil, events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"run without an approver, and hold the agent to a --permission level instead",
			"%s cannot ask hub before its tool calls (through hub, yet), and hub does not run it unasked when an approver is set", ad.Name())
	}
	if !ok {
		return nil, nil, events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"run each prompt with hub.Run, resuming the last run's session_id (--resume)",
			"%s cannot hold a live session through hub yet (one process for many turns), and hub does not pretend it can", ad.Name())
	}
	live := sr.NewLive(r.adapterRequest())
	if _, ok := live.(adapters.Approving); r.opt.approver != nil && !ok {
		return nil, nil, events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"run without an approver, and hold the agent to a --permission level instead",
			"%s cannot ask hub before its tool calls (through hub, yet), and hub does not run it unasked when an approver is set", ad.Name())
	}
	return sr, newLiveDecoder(r, live), nil
}

// running is called by the run once the agent runs, the live decoder
// attached: NewSession returns.
func (s *Session) running(lv *liveDecoder) {
	s.mu.Lock()
	s.lv = lv
	s.mu.Unlock()
	close(s.ready)
}

// sink queues the run's events for the turns' readers. It waits while the
// queue is full and a turn is being read; between turns (nobody reads)
// only hub's own notices, which are capped, come.
func (s *Session) sink(ev events.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) >= maxQueued && s.busy && s.fin == nil {
		s.cond.Wait()
	}
	s.queue = append(s.queue, ev)
	if s.skip != 0 {
		s.drainSkipped() // a turn nobody reads: its end frees the session
	}
	if rf, ok := ev.Body.(events.RunFinished); ok {
		s.fin, s.finEv = &rf, ev
		if s.idleT != nil {
			s.idleT.Stop()
		}
		select {
		case <-s.ready:
		default:
			if s.lv == nil {
				close(s.ready)
			}
		}
	}
	s.cond.Broadcast()
	return nil
}

// armIdle (under mu) starts the wait for the next prompt.
func (s *Session) armIdle() {
	if s.idle <= 0 || s.fin != nil {
		return
	}
	if s.idleT != nil {
		s.idleT.Stop()
	}
	s.idleT = time.AfterFunc(s.idle, func() {
		s.mu.Lock()
		busy := s.busy // a Send came as the timer fired: it wins
		s.mu.Unlock()
		if !busy {
			s.end(errSessionIdle)
		}
	})
}

// Send sends prompt as the session's next turn and returns its events: the
// turn.started, the events of the turn, and its turn.finished, which ends
// the sequence. Events of the session that came before (run.started,
// session.started, notices between turns) come first. Should the agent's
// process end in the turn, the turn.finished says why, and the session's
// run.finished is left for Close.
//
// Cancelling ctx interrupts the turn (as Interrupt); leaving the loop
// before the turn.finished interrupts it too, and its remaining events are
// dropped. The error of the sequence is ErrTurnRunning while another turn
// runs, ErrSessionClosed once the session ended, an *events.Error for a
// prompt the agent cannot take (the session goes on), or an error when the
// sequence is ranged over a second time (it sends its turn once); it is the
// only element then. Nothing is sent until the sequence is ranged over.
func (s *Session) Send(ctx context.Context, prompt string) iter.Seq2[events.Event, error] {
	var ranged atomic.Bool
	return func(yield func(events.Event, error) bool) {
		if ranged.Swap(true) {
			yield(events.Event{}, errSentOnce)
			return
		}
		n, err := s.start(prompt)
		if err != nil {
			yield(events.Event{}, err)
			return
		}
		stop := context.AfterFunc(ctx, func() { s.interrupt(n, interruptedByCaller()) })
		defer stop()
		if d := s.turnTimeout; d > 0 {
			t := time.AfterFunc(d, func() { s.interrupt(n, turnTimedOut(d)) })
			defer t.Stop()
		}
		for {
			ev, ok := s.next()
			if !ok {
				return // the run ended without the turn's end: cannot happen (finish sends it)
			}
			tf, last := ev.Body.(events.TurnFinished)
			last = last && tf.Turn == n
			if last {
				s.turnRead()
			}
			if !yield(ev, nil) {
				if !last {
					s.abandon(n)
				}
				return
			}
			if last {
				return
			}
		}
	}
}

// start sends turn prompt: it waits for the end of a turn left unread, then
// writes the prompt.
func (s *Session) start(prompt string) (int64, error) {
	if prompt == "" {
		return 0, events.NewError(events.BinInvalidInput, events.ReasonBadRequest, "pass a prompt", "empty prompt")
	}
	s.mu.Lock()
	for s.skip != 0 && s.fin == nil {
		s.drainSkipped()
		if s.skip != 0 {
			s.cond.Wait()
		}
	}
	switch {
	case s.fin != nil || s.closing:
		s.mu.Unlock()
		return 0, ErrSessionClosed
	case s.busy:
		s.mu.Unlock()
		return 0, ErrTurnRunning
	}
	if s.rs != nil && s.rs.failed != nil {
		s.mu.Unlock()
		return 0, ErrSessionClosed
	}
	s.busy = true
	s.turn++
	n, lv := s.turn, s.lv
	if s.idleT != nil {
		s.idleT.Stop()
	}
	if s.rs != nil {
		s.startResumed(n, prompt)
		s.mu.Unlock()
		return n, nil
	}
	s.mu.Unlock()
	req := s.req
	if n != 1 {
		req.Files = nil // the context files go with the first turn only
	}
	if err := lv.send(n, adapters.InlineFiles(req.Files, prompt)); err != nil {
		err = withFiles(err, req)
		s.mu.Lock()
		s.busy = false
		s.turn--
		s.armIdle()
		s.mu.Unlock()
		var e *events.Error
		if errors.As(err, &e) {
			return 0, e // a prompt the agent cannot take; the session goes on
		}
		return 0, ErrSessionClosed
	}
	return n, nil
}

// next returns the next queued event, waiting for one; false once the
// queue holds only the run.finished (left for Close).
func (s *Session) next() (events.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if len(s.queue) > 0 {
			if _, last := s.queue[0].Body.(events.RunFinished); !last {
				ev := s.queue[0]
				s.queue = s.queue[1:]
				s.cond.Broadcast()
				return ev, true
			}
			return events.Event{}, false
		}
		if s.fin != nil {
			return events.Event{}, false
		}
		s.cond.Wait()
	}
}

// turnRead marks the running turn's end read: the next Send may go.
func (s *Session) turnRead() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.busy = false
	s.armIdle()
	s.cond.Broadcast()
}

// abandon drops what is left of turn n, which nobody reads, and interrupts
// it.
func (s *Session) abandon(n int64) {
	s.mu.Lock()
	s.skip = n
	s.drainSkipped()
	s.mu.Unlock()
	_ = s.Interrupt()
}

// drainSkipped (under mu) drops the queued events of the skipped turn, up
// to its turn.finished.
func (s *Session) drainSkipped() {
	for len(s.queue) > 0 && s.skip != 0 {
		ev := s.queue[0]
		if _, last := ev.Body.(events.RunFinished); last {
			return
		}
		s.queue = s.queue[1:]
		if tf, ok := ev.Body.(events.TurnFinished); ok && tf.Turn == s.skip {
			s.skip, s.busy = 0, false
			s.armIdle()
		}
	}
	s.cond.Broadcast()
}

// Interrupt asks the agent to stop the running turn and keep the session
// (Claude Code's interrupt, pi's abort): the turn ends with a turn.finished
// marked interrupted, and the next Send goes on in the same process. With
// no turn running it does nothing.
func (s *Session) Interrupt() error {
	return s.interrupt(0, interruptedByCaller())
}

// interrupt stops turn n (0: whichever runs) with why.
func (s *Session) interrupt(n int64, why *events.Error) error {
	s.mu.Lock()
	if s.rs != nil {
		s.interruptResumed(n, why)
		s.mu.Unlock()
		return nil
	}
	lv := s.lv
	s.mu.Unlock()
	if lv == nil {
		return nil
	}
	return lv.interrupt(n, why)
}

// Close ends the session: it closes the agent's stdin (a running turn is
// interrupted first), waits for the agent to exit, at most the grace
// period (Limits.GraceOrDefault) before its tree is stopped as a run's,
// and returns the session's run.finished with the session's totals. A Send
// still reading its turn gets the rest of it, turn.finished last. Close may
// be called more than once; each call returns the same run.finished.
func (s *Session) Close() events.RunFinished {
	s.end(nil)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return *s.fin
}

// end closes the session's stdin and, should the agent not exit within the
// grace period, stops the run with cause (nil: the caller closed it).
func (s *Session) end(cause error) {
	s.mu.Lock()
	if s.closing || s.fin != nil {
		s.mu.Unlock()
		return
	}
	s.closing = true
	lv, busy := s.lv, s.busy
	s.busy = false // nobody reads the rest: the run must not wait for a reader (sink)
	if s.idleT != nil {
		s.idleT.Stop()
	}
	s.cond.Broadcast()
	s.mu.Unlock()
	if s.rs != nil {
		if cause == nil {
			cause = ErrSessionClosed
		}
		go s.finishResumed(cause)
		return
	}
	if lv != nil {
		if busy {
			_ = lv.interrupt(0, interruptedByCaller())
		}
		lv.close()
	}
	go func() {
		t := time.NewTimer(s.req.Limits.GraceOrDefault())
		defer t.Stop()
		select {
		case <-s.done:
		case <-t.C:
			switch {
			case cause != nil:
			case lv != nil && !lv.turnRunning():
				// No turn runs and the agent's stdin is closed: an
				// agent that outlives it (claude-agent-acp, codex-acp:
				// testdata/acp/README.md) lingers after the session's
				// end, as a run's agent after its terminal event; its
				// outcome stands.
				cause = ErrLinger
			default:
				cause = ErrSessionClosed
			}
			s.cancel(cause)
		}
	}()
}

// Finished returns the session's run.finished as the last event of its
// stream (seq, ts, run id), once the session has ended (false before).
// Close returns the same body.
func (s *Session) Finished() (events.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finEv, s.fin != nil
}

// Done returns a channel that is closed once the session has ended: Close
// ended it, or it ended on its own (the agent's process exited, a limit
// stopped it, its idle limit ran out). Close, Finished and Unread then
// return at once. A session held by resuming ends only when Close or its
// idle limit ends it: a turn that spends its limits makes the next Send
// ErrSessionClosed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Unread returns, once the session has ended (Done), the events of its
// stream that no Send returned, in order, its run.finished last: the
// run.started and session.started of a session that never took a turn,
// the notices that came after the last turn. Each is returned once: a
// second call, or a call before the end, returns nil. Call it when no Send
// is still reading its turn (whose remaining events it would take). With
// the events the Sends returned, they make the whole stream, seq without
// gaps.
func (s *Session) Unread() []events.Event {
	select {
	case <-s.done:
	default:
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queue
	s.queue = nil
	return q
}
