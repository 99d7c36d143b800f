package hub

import (
	"errors"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/normalize"
)

// liveDecoder is the decoder of a live session's one agent process (see
// Session): it gives each turn's lines to a decoder of their own
// (adapters.Live.NewTurnDecoder), turns the line that ends a turn into a
// turn.finished with that turn's outcome, usage and cost, and holds the
// session's limits at each turn's end. It is the process's Conversation
// too: the session writes on the agent's stdin through the Live.
//
// Decode, Status and Outcome run on the run's goroutine; the session's
// methods (send, interrupt, close) on the caller's, holding the run's lock
// (lk) while they emit.
type liveDecoder struct {
	live adapters.Live
	r    *runner

	mu      sync.Mutex
	lk      *runLock       // the run's lock, once the agent runs
	timers  *budget.Timers // the run's time limits, once the agent runs
	stop    func(error)    // stops the agent's tree (proc.Supervisor.Stop), once it runs
	opened  bool
	stdinUp bool // stdin is open: more turns may come

	// Of the run's goroutine only:
	inner     normalize.Decoder
	ix        *normalize.Index
	first     bool // no turn has ended yet: the meter counts from zero
	sessionID string
	model     *string
	announced bool // session.started was sent
	lastText  string
	totals    *normalize.Totals // the sum of the turns' own totals, while every turn had them
	allTotals bool
	abort     *events.Error // a session limit crossed at a turn's end

	// Shared, under mu:
	turn        int64         // the turn running or last run; 0 before the first
	running     bool          // a turn has started and not ended
	interrupted *events.Error // why the running turn was interrupted (Interrupt, its turn timeout); nil if not
	began       time.Time     // the running turn's start, by the run's clock
	startUsage  events.Tokens
	startTools  int64
	startSet    bool // startUsage and startTools are the running turn's
	closed      bool // the session's stdin was closed
	ended       bool // the agent exited (Close): nothing more is emitted from outside the run's goroutine

	broker *broker       // the approver's, when the run has one
	inline []events.Body // approval events of the run's goroutine, for Decode to emit

	// oneShot is the prompt of a run (not a session) held as one turn of
	// a live session, for its approver: its stream is a run's (no
	// turn.started, turn.finished or session mode), stdin is closed at
	// the turn's end, and the turn's outcome is the run's (oneShotOut).
	oneShot    string
	oneShotOut *normalize.Outcome
}

// sendOneShot sends a one-shot run's prompt as its one turn, once the
// agent runs (attach).
func (d *liveDecoder) sendOneShot() {
	_ = d.send(1, d.oneShot)
}

// approvals starts asking the run's approver about the agent's tool calls
// (WithApprover), before Open: the Live is adapters.Approving (NewSession
// refused it otherwise).
func (d *liveDecoder) approvals(a Approver, watch *grant.Watch, lk *runLock, stop func(error)) {
	ap, ok := d.live.(adapters.Approving)
	if !ok {
		return
	}
	emit := func(n events.Body, inline bool) {
		if inline { // from Line, on the run's goroutine
			d.inline = append(d.inline, n)
			return
		}
		lk.mu.Lock()
		defer lk.mu.Unlock()
		d.mu.Lock()
		ended := d.ended
		d.mu.Unlock()
		if !ended {
			d.r.s.emit(n)
		}
	}
	d.broker = newBroker(a, d.r.req.Agent, watch, d.r.cwd(), emit, func(e *events.Error) { stop(e) }, d.r.opt.clock)
	watch.Decided = d.broker.decided
	ap.Approvals(d.broker.ask)
}

func newLiveDecoder(r *runner, live adapters.Live) *liveDecoder {
	return &liveDecoder{r: r, live: live, inner: live.NewTurnDecoder(), first: true, allTotals: true}
}

var (
	_ normalize.Decoder     = (*liveDecoder)(nil)
	_ normalize.Indexed     = (*liveDecoder)(nil)
	_ adapters.Conversation = (*liveDecoder)(nil)
)

// UseIndex implements normalize.Indexed, for every turn's decoder.
func (d *liveDecoder) UseIndex(x *normalize.Index) {
	d.ix = x
	if in, ok := d.inner.(normalize.Indexed); ok {
		in.UseIndex(x)
	}
}

// attach is called by the run once the agent runs, before any of its lines
// is read: the run's lock and time limits. The idle limit waits for the
// first turn.
func (d *liveDecoder) attach(lk *runLock, t *budget.Timers, stop func(error)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.lk, d.timers, d.stop = lk, t, stop
	if !d.running && d.oneShot == "" {
		t.Hold(true)
	}
}

// Open implements adapters.Conversation.
func (d *liveDecoder) Open(stdin io.WriteCloser) {
	d.live.Open(stdin)
	d.mu.Lock()
	d.opened, d.stdinUp = true, true
	d.mu.Unlock()
}

// Receive implements adapters.Conversation: Decode sees every line first.
func (d *liveDecoder) Receive([]byte) {}

// Interrupt implements adapters.Conversation. A stop of the run (a limit,
// the caller's cancel) is not a turn's interrupt: the supervisor sends its
// SIGTERM at once.
func (d *liveDecoder) Interrupt() bool { return false }

// Close implements adapters.Conversation: the agent has exited. It takes
// the run's lock (the run's goroutine no longer holds it), so that a send
// under way emits its turn.started before the run's end is decided and none
// starts after.
func (d *liveDecoder) Close() {
	if d.lk != nil && !d.lk.held {
		d.lk.mu.Lock()
		defer d.lk.mu.Unlock()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.ended = true
	if d.broker != nil {
		d.broker.close()
	}
	if d.stdinUp {
		d.stdinUp = false
		d.live.Close()
	}
}

// send starts turn n with prompt: turn.started goes out under the run's
// lock, then the prompt goes to the agent. The error is ErrSessionClosed
// when no turn can start.
func (d *liveDecoder) send(n int64, prompt string) error {
	if err := d.live.Check(prompt); err != nil {
		return err
	}
	d.mu.Lock()
	lk := d.lk
	d.mu.Unlock()
	if lk == nil {
		return ErrSessionClosed
	}
	lk.mu.Lock()
	d.mu.Lock()
	// The run's lock held: the stream's state is this goroutine's to read.
	if !d.opened || !d.stdinUp || d.closed || d.abort != nil || d.r.s.over != nil || d.r.s.sinkErr != nil {
		d.mu.Unlock()
		lk.mu.Unlock()
		return ErrSessionClosed
	}
	d.turn, d.running, d.interrupted, d.startSet = n, true, nil, false
	d.began = d.r.opt.clock()
	t, stop := d.timers, d.stop
	d.mu.Unlock()
	if d.oneShot == "" {
		d.r.s.emit(events.TurnStarted{Turn: n})
	}
	lk.mu.Unlock()
	t.Hold(false)
	// Not under the run's lock: a large prompt fills the pipe, and the
	// agent reads it only while hub reads what it writes. An agent that
	// cannot take it (it closed its stdin, or exited) takes no more turns:
	// the session ends, and the turn with it (finishTurn).
	if err := d.live.Send(prompt); err != nil {
		d.mu.Lock()
		closedByHub := d.closed
		d.mu.Unlock()
		var why *events.Error
		switch {
		case closedByHub:
		case errors.As(err, &why):
			stop(why) // the Live's own reason (Codex's thread never started)
		default:
			stop(events.NewError(events.BinProtocol, events.ReasonUnexpectedExit,
				"start a new session (resume it with its session_id)", "the agent no longer reads its stdin (%v): it takes no more prompts", err))
		}
	}
	return nil
}

// interrupt asks the agent to stop the running turn n (0: whichever
// runs), which then ends with why (cancelled/caller for Interrupt,
// timeout/wall for the turn's time limit).
func (d *liveDecoder) interrupt(n int64, why *events.Error) error {
	d.mu.Lock()
	if !d.running || !d.stdinUp || n != 0 && n != d.turn || d.interrupted != nil {
		d.mu.Unlock()
		return nil
	}
	d.interrupted = why
	d.mu.Unlock()
	return d.live.Interrupt()
}

// close closes the agent's stdin: the CLI exits once the running turn (if
// any) is over.
func (d *liveDecoder) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	if d.stdinUp {
		d.stdinUp = false
		d.live.Close()
	}
}

// turnRunning reports whether a turn runs.
func (d *liveDecoder) turnRunning() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.running
}

// turnOpen reports the running turn, if any.
func (d *liveDecoder) turnOpen() (n int64, open bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.turn, d.running
}

// Decode implements normalize.Decoder.
func (d *liveDecoder) Decode(dst []events.Body, line []byte) []events.Body {
	d.mu.Lock()
	if d.running && !d.startSet {
		// The turn's first line: the meter goes on from the turns before
		// (each turn's decoder counts from zero).
		if !d.first {
			d.r.s.meter.Continue()
		}
		d.startUsage, _, _, d.startTools = d.r.s.meter.Totals()
		d.startSet = true
	}
	d.mu.Unlock()
	start := len(dst)
	dst, own, end := d.live.Line(dst, line)
	if len(d.inline) > 0 {
		dst = append(dst, d.inline...)
		d.inline = d.inline[:0]
	}
	if !own {
		dst = d.inner.Decode(dst, line)
		// The turn's decoder knows its terminal event as it knows a run's
		// (pi's last agent_end, after any auto-retry).
		end = end || d.turnRunning() && d.inner.Status().Terminal
	}
	// session.started once, marked live: Claude Code sends its init again
	// at every turn.
	out := dst[:start]
	for _, b := range dst[start:] {
		if ss, ok := b.(events.SessionStarted); ok {
			if d.announced {
				continue
			}
			d.announced = true
			if d.oneShot == "" {
				ss.Mode = events.SessionLive
			}
			if d.sessionID == "" {
				d.sessionID = ss.SessionID
			}
			d.model = ss.Model
			b = ss
		}
		out = append(out, b)
	}
	dst = out
	if end {
		dst = d.endTurn(dst)
	}
	return dst
}

// endTurn ends the running turn: its outcome as its decoder decides it,
// the turn.finished, and a fresh decoder for the next.
func (d *liveDecoder) endTurn(dst []events.Body) []events.Body {
	zero := 0
	o := d.live.EndTurn(d.inner.Outcome(normalize.End{ExitCode: &zero}))
	d.mu.Lock()
	n, interrupted, began, startUsage, startTools := d.turn, d.interrupted, d.began, d.startUsage, d.startTools
	d.running, d.first = false, false
	t := d.timers
	d.mu.Unlock()
	if t != nil {
		t.Hold(true)
	}
	if o.SessionID != "" && d.sessionID == "" {
		d.sessionID = o.SessionID
	}
	if o.Text != "" {
		d.lastText = o.Text
	}
	tf := events.TurnFinished{Turn: n, OK: o.OK, Error: o.Error, Text: o.Text,
		DurationMS: max(d.r.opt.clock().Sub(began).Milliseconds(), 0)}
	tf.Usage, tf.CostSource, tf.ToolCalls = d.metered(startUsage, startTools)
	if ts := o.Totals; ts != nil {
		tf.Usage, tf.CostSource = ts.Usage, ts.CostSource
		d.totals = addTotals(d.totals, ts)
	} else {
		d.allTotals = false
	}
	tf.CostUSD = tf.Usage.CostUSD
	if tf.CostUSD == nil {
		tf.CostSource = events.CostUnknown
	}
	if interrupted != nil && !o.OK {
		// An interrupt that came too late (the turn answered first) is no
		// interruption.
		tf.OK, tf.Interrupted, tf.Error = false, true, interrupted
	}
	// The session's limits on what the agent reported at the turn's end
	// (Claude Code's cost comes only with its result): the turn that
	// crosses one fails with it, and the session ends.
	if d.allTotals && d.totals != nil && d.abort == nil {
		if over := budget.ExceededTotals(d.r.req.Limits, d.totals.Usage, 0, d.r.s.meter.Steps()); over != nil {
			d.abort = over
			tf.OK, tf.Error = false, over
		}
	}
	if tf.OK {
		tf.Error = nil
	} else if tf.Error == nil {
		tf.Error = events.NewError(events.BinAgentFailed, events.ReasonErrorEvent, "see the turn's events", "the turn ended without an answer")
	}
	if d.oneShot != "" {
		// The run's one turn: its outcome is the run's, and the CLI is
		// told there is no more.
		if tf.OK {
			o.Error = nil
		} else {
			o.OK, o.Error = false, tf.Error
		}
		d.oneShotOut = &o
		d.close()
	} else {
		dst = append(dst, tf)
	}
	d.inner = d.live.NewTurnDecoder()
	if in, ok := d.inner.(normalize.Indexed); ok && d.ix != nil {
		in.UseIndex(d.ix)
	}
	return dst
}

// metered is what the meter saw of the running turn, which began at the
// meter's startUsage and startTools: its usage (the cost known when the
// meter's is), the meter's cost source, and its tool calls.
func (d *liveDecoder) metered(startUsage events.Tokens, startTools int64) (events.Tokens, events.CostSource, int64) {
	usage, source, _, tools := d.r.s.meter.Totals()
	turn := usage.Add(negate(startUsage))
	turn.CostUSD = subCost(usage.CostUSD, startUsage.CostUSD)
	return turn, source, max(tools-startTools, 0)
}

// addTotals returns a + b (a nil: b): counts added, the cost known only
// when both are, reported only when both were.
func addTotals(a, b *normalize.Totals) *normalize.Totals {
	if a == nil {
		c := *b
		return &c
	}
	t := normalize.Totals{Usage: a.Usage.Add(b.Usage), CostSource: a.CostSource, Turns: a.Turns + b.Turns}
	if b.CostSource != a.CostSource || t.Usage.CostUSD == nil {
		t.CostSource = events.CostUnknown
	}
	return &t
}

// negate returns -t's counts (the cost is left out).
func negate(t events.Tokens) events.Tokens {
	return events.Tokens{Input: -t.Input, Output: -t.Output, CacheRead: -t.CacheRead, CacheWrite: -t.CacheWrite, Reasoning: -t.Reasoning}
}

// subCost is a - b, nil when a is unknown; b unknown counts as 0.
func subCost(a, b *float64) *float64 {
	if a == nil {
		return nil
	}
	c := *a
	if b != nil {
		c -= *b
	}
	return &c
}

// Status implements normalize.Decoder: a live session's process has no
// terminal event until its stdin is closed and no turn runs; a session
// limit crossed at a turn's end, or the turn decoder's own abort, stops it.
func (d *liveDecoder) Status() normalize.Status {
	st := d.inner.Status()
	d.mu.Lock()
	st.Terminal = d.closed && !d.running
	d.mu.Unlock()
	if d.abort != nil {
		st.Abort = d.abort
	}
	return st
}

// Outcome implements normalize.Decoder: how the session's process ended.
// A turn still running decides it (the agent died or was stopped in it);
// else a process that exited on its own after hub closed its stdin ended
// the session well, and any other end is the agent's failure.
func (d *liveDecoder) Outcome(end normalize.End) normalize.Outcome {
	d.mu.Lock()
	running, closed := d.running, d.closed
	d.mu.Unlock()
	var o normalize.Outcome
	switch {
	case d.oneShotOut != nil && !running:
		o = *d.oneShotOut
	case running:
		o = d.inner.Outcome(end)
		if o.OK {
			o.OK, o.Error = false, events.NewError(events.BinProtocol, events.ReasonUnexpectedExit,
				"run the session again; report it if it recurs", "the agent exited in the middle of a turn")
		}
	case closed && (end.Signal == "" || end.Stopped):
		// hub closed its stdin with no turn running: the session is over,
		// whatever the exit status (Claude Code 2.1.328 exits 1 when its
		// stdin ends after an interrupted turn); each turn's verdict is
		// in its turn.finished, and a stop's cause is hub's to decide.
		o = normalize.Outcome{OK: true, Text: d.lastText}
	default:
		o = normalize.Outcome{Error: events.NewError(events.BinAgentFailed, events.ReasonCrashed,
			"start a new session (resume it with its session_id)", "the agent's process ended between turns (%s)", exitWords(end))}
	}
	if o.SessionID == "" {
		o.SessionID = d.sessionID
	}
	if o.Text == "" {
		o.Text = d.lastText
	}
	if d.allTotals && d.totals != nil && !running {
		o.Totals = d.totals
	}
	return o
}

// exitWords says how a process ended, for a message.
func exitWords(end normalize.End) string {
	switch {
	case end.Signal != "":
		return "killed by " + end.Signal
	case end.ExitCode != nil:
		return "exit status " + strconv.Itoa(*end.ExitCode)
	}
	return "no exit status"
}

// finishTurn ends a turn still running when the session's run ends (the
// agent died or was stopped in it) with the session's verdict: the
// turn's reader gets its turn.finished before the run.finished.
func (d *liveDecoder) finishTurn(rf events.RunFinished) {
	d.mu.Lock()
	n, running, began, startUsage, startTools, startSet := d.turn, d.running, d.began, d.startUsage, d.startTools, d.startSet
	d.running = false
	d.mu.Unlock()
	if !running {
		return
	}
	tf := events.TurnFinished{Turn: n, OK: false, Error: rf.Error, Text: rf.Text, CostSource: events.CostUnknown,
		DurationMS: max(d.r.opt.clock().Sub(began).Milliseconds(), 0)}
	if startSet {
		// What the meter saw of the turn until it was cut short.
		var source events.CostSource
		tf.Usage, source, tf.ToolCalls = d.metered(startUsage, startTools)
		if tf.CostUSD = tf.Usage.CostUSD; tf.CostUSD != nil {
			tf.CostSource = source
		}
	}
	if tf.Error == nil {
		tf.Error = events.NewError(events.BinProtocol, events.ReasonUnexpectedExit,
			"run the session again; report it if it recurs", "the session ended in the middle of the turn")
	}
	if d.oneShot != "" {
		return // a run's stream: its run.finished says it
	}
	d.r.s.emit(tf)
}
