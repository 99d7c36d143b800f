package hub

import (
	"context"
	"errors"
	"time"

	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// interruption is the cause with which Interrupt (or the turn's time
// limit) stops a turn of a session held by resuming (its process): why
// is the turn's error.
type interruption struct{ why *events.Error }

func (i interruption) Error() string { return i.why.Message }

// resumed is the state of a session held by resuming: each turn one run
// (Run) of its own process, resuming the session of the turn before, its
// events re-stamped into the session's one stream. It is for an agent that
// cannot hold a live session (not an adapters.Sessioner): session.started
// says mode "resume", so a caller knows each turn pays the CLI's start.
type resumed struct {
	ctx       context.Context
	opts      []Option
	runID     string
	clock     func() time.Time
	agent     string
	began     time.Time // monotonic, for the session's wall-clock limit
	start     time.Time // by the clock, for duration_ms
	seq       int64
	sessionID string
	announced bool // session.started was sent
	started   bool // run.started was sent

	// The session's totals so far.
	usage      events.Tokens
	costSource events.CostSource
	turns      int64
	toolCalls  int64
	denied     int64
	lastText   string
	lastExit   *int
	lastSignal *string
	failed     *events.Error // a turn's error that ends the session (a limit)

	cancel   context.CancelCauseFunc // the running turn's, under Session.mu
	turn     int64                   // the running turn's number
	turnDone chan struct{}
	lastDec  normalize.Decoder // the last turn's run's decoder (options.prevDec)
}

// newResumed starts a session of req's agent held by resuming; nothing
// runs until the first turn.
func newResumed(ctx context.Context, req Request, o options, opts []Option) (*Session, error) {
	s := newSession(req, o)
	s.rs = &resumed{ctx: ctx, opts: append(opts[:len(opts):len(opts)], WithRunID(o.runID)), runID: o.runID, clock: o.clock,
		agent: req.Agent, began: time.Now(), start: o.clock()}
	s.cancel = func(error) {}
	close(s.ready)
	s.armIdle()
	return s, nil
}

// emit stamps b into the session's stream and queues it (under s.mu).
func (s *Session) emitResumed(b events.Body) {
	rs := s.rs
	s.queue = append(s.queue, events.Event{Seq: rs.seq, TS: rs.clock(), RunID: rs.runID, Agent: rs.agent, Body: b})
	rs.seq++
	s.cond.Broadcast()
}

// remaining is the session's limits left for the next turn's run; ok is
// false when one is spent.
func (rs *resumed) remaining(l budget.Limits) (budget.Limits, *events.Error) {
	if l.Timeout > 0 {
		left := l.Timeout - time.Since(rs.began)
		if left <= 0 {
			return l, events.NewError(events.BinTimeout, events.ReasonWall, "start a new session with a longer --timeout",
				"the session's wall-clock limit (--timeout %s) ran out", l.Timeout)
		}
		l.Timeout = left
	}
	over := budget.ExceededTotals(l, rs.usage, rs.turns, rs.toolCalls)
	if over == nil {
		// A limit exactly reached leaves nothing for another turn.
		full := l.MaxCostUSD > 0 && rs.usage.CostUSD != nil && *rs.usage.CostUSD >= l.MaxCostUSD ||
			l.MaxTokens > 0 && rs.usage.Sum() >= l.MaxTokens || l.MaxTurns > 0 && rs.turns >= l.MaxTurns ||
			l.MaxToolSteps > 0 && rs.toolCalls >= l.MaxToolSteps
		if !full {
			if l.MaxCostUSD > 0 && rs.usage.CostUSD != nil {
				l.MaxCostUSD -= *rs.usage.CostUSD
			}
			if l.MaxTokens > 0 {
				l.MaxTokens -= rs.usage.Sum()
			}
			if l.MaxTurns > 0 {
				l.MaxTurns -= rs.turns
			}
			if l.MaxToolSteps > 0 {
				l.MaxToolSteps -= rs.toolCalls
			}
			return l, nil
		}
		reason, what := events.ReasonCost, "--max-cost"
		switch {
		case l.MaxTokens > 0 && rs.usage.Sum() >= l.MaxTokens:
			reason, what = events.ReasonTokens, "--max-tokens"
		case l.MaxTurns > 0 && rs.turns >= l.MaxTurns:
			reason, what = events.ReasonTurns, "--max-turns"
		case l.MaxToolSteps > 0 && rs.toolCalls >= l.MaxToolSteps:
			reason, what = events.ReasonToolSteps, "--max-tool-steps"
		}
		over = events.NewError(events.BinBudgetExceeded, reason, "start a new session with a larger budget",
			"the session has spent its %s: no turn can start", what)
	}
	return l, over
}

// startResumed runs turn n (the session's lock held): a goroutine runs it
// and queues its events.
func (s *Session) startResumed(n int64, prompt string) {
	rs := s.rs
	req := s.req
	req.Prompt, req.Resume = prompt, rs.sessionID
	if n != 1 {
		req.Files = nil // the context files go with the first turn only
	}
	if rs.sessionID == "" {
		req.Resume = s.req.Resume
	}
	s.emitResumed(events.TurnStarted{Turn: n})
	began := rs.clock()
	lim, over := rs.remaining(s.req.Limits)
	if over != nil {
		rs.failed = over
		s.emitResumed(events.TurnFinished{Turn: n, Error: over, CostSource: events.CostUnknown})
		return
	}
	req.Limits = lim
	ctx, cancel := context.WithCancelCause(rs.ctx)
	rs.cancel, rs.turn = cancel, n
	rs.turnDone = make(chan struct{})
	done := rs.turnDone
	go func() {
		defer close(done)
		defer cancel(nil)
		var interrupted *events.Error
		var dec normalize.Decoder
		opts := append(rs.opts[:len(rs.opts):len(rs.opts)], func(o *options) { o.prevDec, o.lastDec = rs.lastDec, &dec })
		fin := Run(ctx, req, func(ev events.Event) error {
			s.mu.Lock()
			defer s.mu.Unlock()
			for len(s.queue) >= maxQueued && s.busy {
				s.cond.Wait()
			}
			switch b := ev.Body.(type) {
			case events.RunStarted:
				if rs.started {
					return nil
				}
				rs.started = true
			case events.SessionStarted:
				if rs.announced {
					return nil
				}
				rs.announced = true
				b.Mode = events.SessionResume
				ev.Body = b
			case events.RunFinished:
				var i interruption
				if errors.As(context.Cause(ctx), &i) {
					interrupted = i.why
				}
				return nil
			}
			s.emitResumed(ev.Body)
			return nil
		}, opts...)
		s.mu.Lock()
		defer s.mu.Unlock()
		if dec != nil {
			rs.lastDec = dec
		}
		s.endResumedTurn(n, began, fin, interrupted)
	}()
}

// endResumedTurn turns the run.finished of turn n into its turn.finished
// and adds it to the session's totals (under s.mu).
func (s *Session) endResumedTurn(n int64, began time.Time, fin events.RunFinished, interrupted *events.Error) {
	rs := s.rs
	if fin.SessionID != nil && *fin.SessionID != "" {
		rs.sessionID = *fin.SessionID
	}
	if fin.Text != "" {
		rs.lastText = fin.Text
	}
	if rs.costSource == "" { // the first turn's
		rs.usage, rs.costSource = fin.Usage, fin.CostSource
	} else {
		rs.usage = rs.usage.Add(fin.Usage)
		if fin.CostSource != rs.costSource {
			rs.costSource = events.CostUnknown
		}
	}
	rs.turns += fin.Turns
	rs.toolCalls += fin.ToolCalls
	rs.denied += fin.ToolCallsDenied
	rs.lastExit, rs.lastSignal = fin.ExitCode, fin.Signal
	tf := events.TurnFinished{Turn: n, OK: fin.OK, Error: fin.Error, Text: fin.Text, ToolCalls: fin.ToolCalls,
		DurationMS: max(rs.clock().Sub(began).Milliseconds(), 0), Usage: fin.Usage, CostUSD: fin.CostUSD, CostSource: fin.CostSource}
	if interrupted != nil {
		tf.OK, tf.Interrupted, tf.Error = false, true, interrupted
	} else if e := fin.Error; e != nil && (e.Bin == events.BinBudgetExceeded || e.Bin == events.BinTimeout && e.Reason == events.ReasonWall ||
		e.Bin == events.BinCancelled || e.Bin == events.BinNotInstalled || e.Bin == events.BinUnsupportedVersion || e.Bin == events.BinInternal) {
		rs.failed = e // the session's limit, the caller's cancel, or no agent: no turn can follow
	}
	s.emitResumed(tf)
	rs.cancel = nil
}

// interruptResumed stops turn n's process (0: whichever runs) with why
// (under s.mu).
func (s *Session) interruptResumed(n int64, why *events.Error) {
	if c := s.rs.cancel; c != nil && (n == 0 || n == s.rs.turn) {
		c(interruption{why})
	}
}

// finishResumed ends a session held by resuming: the running turn (if any)
// stopped and waited for, then the session's run.finished (without s.mu).
func (s *Session) finishResumed(cause error) {
	s.mu.Lock()
	rs := s.rs
	done := rs.turnDone
	if rs.cancel != nil {
		// A turn closed under way is interrupted, as in a live session.
		rs.cancel(interruption{interruptedByCaller()})
	}
	s.mu.Unlock()
	if done != nil {
		<-done
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case rs.failed != nil:
	case rs.ctx.Err() != nil:
		// The session's ctx ended between turns, as it ends a live one.
		if e := hubCause(context.Cause(rs.ctx), s.req.Limits); e != nil {
			rs.failed = e
		}
	case s.req.Limits.Timeout > 0 && time.Since(rs.began) > s.req.Limits.Timeout:
		rs.failed = events.NewError(events.BinTimeout, events.ReasonWall, "start a new session with a longer --timeout",
			"the session exceeded --timeout %s", s.req.Limits.Timeout)
	}
	rf := events.RunFinished{OK: rs.failed == nil, Error: rs.failed, Text: rs.lastText, ExitCode: rs.lastExit, Signal: rs.lastSignal,
		DurationMS: max(rs.clock().Sub(rs.start).Milliseconds(), 0), Turns: rs.turns, ToolCalls: rs.toolCalls,
		ToolCallsDenied: rs.denied, Usage: rs.usage, CostUSD: rs.usage.CostUSD, CostSource: rs.costSource}
	if rs.sessionID != "" {
		id := rs.sessionID
		rf.SessionID = &id
	}
	if rf.CostUSD == nil {
		rf.CostSource = events.CostUnknown
	}
	if !rs.started {
		// No turn ran a process: the stream still opens with run.started.
		s.emitResumed(events.RunStarted{Argv: []string{s.req.Agent}, Cwd: s.req.Cwd, Limits: s.req.Limits.Event()})
		rs.started = true
	}
	s.emitResumed(rf)
	s.fin, s.finEv = &rf, s.queue[len(s.queue)-1]
	close(s.done)
}
