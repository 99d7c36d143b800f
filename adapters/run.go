package adapters

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"

	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/framer"
	"github.com/hubcli/hub/internal/proc"
	"github.com/hubcli/hub/normalize"
)

// StderrTailBytes is how much of the agent's stderr hub keeps for
// classification: the last 64 KiB.
const StderrTailBytes = 64 << 10

// pipeDrain bounds a read of stdout or stderr that was already waiting when
// the agent exited (see pipeReader).
const pipeDrain = time.Second

// The causes with which hub stops a run (context.Cause of the run's context).
var (
	ErrWallTimeout = budget.ErrWallTimeout
	ErrIdleTimeout = budget.ErrIdleTimeout
	ErrLinger      = budget.ErrLinger
	ErrKilled      = errors.New("adapters: killed at the caller's request (WithKill)")
	errExited      = errors.New("adapters: agent exited")
)

// abortCause carries a decoder's request to stop the agent.
type abortCause struct{ err *events.Error }

func (a abortCause) Error() string { return "adapters: abort: " + a.err.Error() }

// sinkCause is a failing Sink.
type sinkCause struct{ err error }

func (s sinkCause) Error() string { return "adapters: event sink: " + s.err.Error() }

// Sink receives a run's events in order, from one goroutine at a time. A
// Sink that returns an error stops the run (bin internal); after that it is
// given only the run.finished event, which Run also returns.
type Sink func(events.Event) error

// Run runs req to the end and returns its run.finished. It blocks until the
// agent's process group is gone: every goroutine it started has returned and
// every process of the group has been killed and waited for.
//
// Events go to sink as they happen: run.started first, run.finished last and
// exactly once, whatever happens (agent missing, crash, timeout, caller
// cancel). Cancelling ctx stops the agent (SIGTERM to the group, SIGKILL
// after Limits.Grace) and ends the run as cancelled/caller; a ctx deadline
// ends it as timeout/wall.
//
// Run is safe for concurrent use; runs share nothing mutable.
func Run(ctx context.Context, req Request, sink Sink, opts ...Option) events.RunFinished {
	return newRun(req, sink, newOptions(opts)).do(ctx)
}

// newRun starts the clocks of one run.
func newRun(req Request, sink Sink, o options) *run {
	r := &run{req: req, sink: sink, opt: o, clock: o.clock, runID: o.runID, began: time.Now()}
	r.start = r.clock()
	return r
}

type run struct {
	req   Request
	opt   options
	sink  Sink
	clock func() time.Time
	runID string
	start time.Time // by r.clock, for duration_ms
	began time.Time // monotonic, for the wall-clock limit

	seq     int64
	sinkErr error
	secrets secrets // credential values to redact from events
	// stopped is set once hub has signalled the agent; terminal once the
	// decoder reported the agent's terminal event.
	stopped  atomic.Pointer[stopRecord]
	terminal atomic.Bool
	sent     atomic.Int32 // the last signal hub sent the agent, 0 if none
	meter    budget.Meter
	bodies   []events.Body
	// over is the limit the agent's events crossed (a budget, or
	// Request.AgentRetries), if any: from
	// the crossing event on, nothing more is forwarded and the run ends
	// with it (hub's own cause).
	over       atomic.Pointer[events.Error]
	costWarned bool // the cost_unknown notice for --max-cost was sent
	retries    int  // retry notices seen (see Request.AgentRetries)
	// partial says the final answer is the partial one of the final-answer
	// resume (see finalize).
	partial bool
	notices notices // counts of the notices that can flood (see flood.go)
}

func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "run_" + hex.EncodeToString(b[:])
}

// emit sends one event. After a sink error only run.finished is still sent.
func (r *run) emit(b events.Body) {
	b = r.meter.Observe(sanitize(b))
	if _, last := b.(events.RunFinished); r.sinkErr != nil && !last {
		return
	}
	switch v := b.(type) {
	case events.Notice:
		if !r.notices.keep(v) {
			return
		}
	case events.RunFinished:
		for _, n := range r.notices.summary() {
			r.send(n)
		}
	}
	// Text deltas are redacted as one text (see secrets.delta): what they
	// hold back goes out before the next event of another type.
	if d, ok := b.(events.TextDelta); ok {
		if d.Text = r.secrets.delta(d.Text); d.Text != "" {
			r.send(d)
		}
		return
	}
	if held := r.secrets.flush(); held != "" {
		r.send(events.TextDelta{Text: held})
	}
	r.send(r.secrets.body(b))
}

// send stamps one redacted event and gives it to the sink.
func (r *run) send(b events.Body) {
	ev := events.Event{Seq: r.seq, TS: r.clock(), RunID: r.runID, Agent: r.req.Agent, Body: b}
	r.seq++
	if err := r.sink(ev); err != nil && r.sinkErr == nil {
		r.sinkErr = err
	}
}

func (r *run) cwd() string {
	if r.req.Cwd != "" {
		return r.req.Cwd
	}
	wd, _ := os.Getwd()
	return wd
}

// fail ends a run that never started an agent.
func (r *run) fail(argv []string, version string, err error) events.RunFinished {
	var ver *string
	if version != "" {
		ver = &version
	}
	r.emit(events.RunStarted{Argv: argv, Cwd: r.cwd(), AgentVersion: ver, Limits: r.req.Limits.Event()})
	return r.finish(normalize.Outcome{Error: asError(err)}, nil, "")
}

func asError(err error) *events.Error {
	var he *events.Error
	if errors.As(err, &he) {
		return he
	}
	return events.NewError(events.BinInternal, "", "report this as a hub bug", "%v", err)
}

// finish emits run.finished and returns it. A failed sink overrides the
// outcome: the caller did not get the run's events.
func (r *run) finish(out normalize.Outcome, exitCode *int, signal string) events.RunFinished {
	usage, source, turns, tools := r.meter.Totals()
	if t := out.Totals; t != nil {
		usage, source = t.Usage.Sane(), t.CostSource
		if usage.CostUSD == nil {
			source = events.CostUnknown
		}
		if t.Turns > 0 {
			turns = t.Turns
		}
		// The agent's own final totals (Claude Code reports its cost only
		// here) are checked against the budget too.
		if out.OK && out.Error == nil {
			if over := budget.ExceededTotals(r.req.Limits, usage, turns, tools); over != nil {
				out.OK, out.Error = false, over
			}
		}
	}
	rf := events.RunFinished{
		OK:         out.OK && out.Error == nil,
		Error:      out.Error,
		Text:       out.Text,
		ExitCode:   exitCode,
		DurationMS: r.clock().Sub(r.start).Milliseconds(),
		Turns:      turns,
		ToolCalls:  tools,
		Usage:      usage,
		CostUSD:    usage.CostUSD,
		CostSource: source,
		Partial:    r.partial,
	}
	if r.sinkErr != nil {
		rf.Partial = false
		rf.OK = false
		rf.Error = events.NewError(events.BinInternal, "", "check the consumer of hub's output", "event sink: %v", r.sinkErr)
	}
	if !rf.OK && rf.Error == nil {
		rf.Error = events.NewError(events.BinInternal, "", "report this as a hub bug", "run failed without an error")
	}
	if out.SessionID != "" {
		rf.SessionID = &out.SessionID
	}
	if signal != "" {
		rf.Signal = &signal
	}
	if rf.DurationMS < 0 {
		rf.DurationMS = 0
	}
	rf = r.secrets.body(rf).(events.RunFinished)
	r.emit(rf)
	return rf
}

func (r *run) do(ctx context.Context) events.RunFinished {
	ad, err := Lookup(r.req.Agent)
	if err != nil {
		return r.fail([]string{r.req.Agent}, "", events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			fmt.Sprintf("use one of: %s", strings.Join(Names(), ", ")), "%v", err))
	}
	r.meter = newMeter(r.req, ad)
	bin := r.req.Bin
	if bin == "" {
		bin = ad.Info().Binary
	}
	// The wall-clock limit covers the whole run, version probe included.
	detectCtx := ctx
	if t := r.req.Limits.Timeout; t > 0 {
		var cancel context.CancelFunc
		detectCtx, cancel = context.WithTimeoutCause(ctx, t, ErrWallTimeout)
		defer cancel()
	}
	inst, err := ad.Detect(detectCtx, r.req.Bin)
	if err != nil {
		switch {
		case errors.Is(context.Cause(detectCtx), ErrWallTimeout) && ctx.Err() == nil:
			err = r.hubCause(ctx, ErrWallTimeout, r.req.Limits)
		case ctx.Err() != nil:
			// The caller's cancel or deadline, as for a running agent.
			if e := r.hubCause(ctx, context.Cause(ctx), r.req.Limits); e != nil {
				err = e
			}
		}
		return r.fail([]string{bin}, inst.Version, err)
	}
	spec, err := ad.Command(r.req, inst)
	if err != nil {
		return r.fail([]string{inst.Path}, inst.Version, err)
	}
	argv := Redact(append([]string{spec.Path}, spec.Args...))
	res, err := r.agent(ctx, ad, spec, func(pid int) {
		r.emit(events.RunStarted{Argv: argv, Cwd: r.cwd(), PID: &pid, AgentVersion: &inst.Version, Limits: r.req.Limits.Event()})
	})
	if err != nil {
		return r.fail(argv, inst.Version, err)
	}
	if over := r.over.Load(); over != nil && over.Reason == events.ReasonToolSteps {
		res.outcome = r.finalize(ctx, ad, inst, res.outcome, over)
	}
	return r.finish(res.outcome, res.code, res.sig)
}

// attempt is how one agent process of a run ended.
type attempt struct {
	outcome normalize.Outcome
	code    *int   // exit status; nil if killed by a signal
	sig     string // the signal that ended it, "" if none
}

// agent runs one agent process for r.req with spec and judges its end. It
// calls started (if not nil) with the process group id once the process
// runs, before any of its events is emitted; it returns an error, and emits
// nothing, only when the process could not be started.
func (r *run) agent(ctx context.Context, ad Adapter, spec Command, started func(pid int)) (attempt, error) {
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = r.req.Cwd
	cmd.Env = append(append(append(os.Environ(), spec.Env...), r.req.Env...), spec.EnvLast...)
	r.secrets = newSecrets(cmd.Env)
	// Every process of the run inherits this entry, so that hub finds the
	// ones that left the agent's tree (see proc.Group.SnapshotMarked).
	marker := runMarker + "=" + newRunID()
	cmd.Env = append(cmd.Env, marker)
	if spec.Stdin != nil {
		cmd.Stdin = bytes.NewReader(spec.Stdin)
	}
	// Real pipes, read here rather than by os/exec's copy goroutines: Wait
	// then never waits on (or, after WaitDelay, cuts off) output that a slow
	// consumer has not read yet.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return attempt{}, fmt.Errorf("stdout pipe: %w", err)
	}
	defer stdout.Close()
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutW.Close()
		return attempt{}, fmt.Errorf("stderr pipe: %w", err)
	}
	defer stderrR.Close()
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	cmd.WaitDelay = pipeDrain // bounds only the stdin copy when a prompt is piped
	g, err := proc.Start(cmd)
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		return attempt{}, events.NewError(events.BinNotInstalled, events.ReasonNotExecutable,
			"check the binary with `"+spec.Path+" --version`, or pass another --bin", "cannot start %s: %v", spec.Path, err)
	}
	g.Orphans, g.Sole = r.opt.orphans, r.opt.sole
	g.Marker = marker
	if started != nil {
		started(g.PGID)
	}

	lim := r.req.Limits
	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if r.sinkErr != nil { // the consumer is gone already
		stop(sinkCause{r.sinkErr})
	}
	// The wall-clock, idle and linger limits. They outlive the agent's
	// stdout: an agent that closes stdout and keeps running is idle, and
	// lingering.
	timers := budget.StartTimers(lim, r.began, stop)
	defer timers.Stop()

	exited := make(chan struct{})
	var (
		eg      errgroup.Group
		waitErr error
	)
	// Stopper: until the agent exits, record its descendants every second
	// (tools run in process groups of their own); on the first stop cause,
	// SIGTERM the group and every descendant, SIGKILL them after the grace
	// period unless the agent exited.
	eg.Go(func() error {
		tick := time.NewTicker(snapshotEvery)
		defer tick.Stop()
		kill := r.opt.kill
		for {
			select {
			case <-exited:
				return nil
			case <-tick.C:
				g.Snapshot()
				continue
			case <-kill:
				stop(ErrKilled)
			case <-runCtx.Done():
			}
			break
		}
		select {
		case <-exited: // exited on its own at the same moment
			return nil
		default:
		}
		r.stopped.Store(&stopRecord{cause: context.Cause(runCtx)})
		sig := syscall.SIGTERM
		if errors.Is(context.Cause(runCtx), ErrKilled) {
			sig = syscall.SIGKILL
		}
		// The group and the descendants already recorded at once, and the
		// grace period starts; then those a fresh walk of /proc (and of
		// the run's mark) finds. The walks take milliseconds: they delay
		// neither the agent's signal nor its SIGKILL.
		_ = g.Signal(sig)
		r.sent.Store(int32(sig))
		t := time.NewTimer(lim.GraceOrDefault())
		defer t.Stop()
		g.Snapshot()
		g.SnapshotMarked()
		g.SignalNew(sig)
		select {
		case <-exited:
		case <-t.C:
		case <-kill:
		}
		_ = g.Signal(syscall.SIGKILL)
		g.Snapshot()
		g.SignalNew(syscall.SIGKILL)
		if !isExited(exited) {
			r.sent.Store(int32(syscall.SIGKILL))
		}
		return nil
	})
	out := newPipeReader(stdout)
	errOut := newPipeReader(stderrR)
	// Waiter: reap the agent; what is left of its group and the descendants
	// seen are orphans of a finished run, so kill them; then let the readers
	// drain what the pipes still hold.
	eg.Go(func() error {
		waitErr = cmd.Wait()
		close(exited)
		if g.Orphans {
			g.Snapshot() // the agent's orphans are children of this process now
		}
		g.SnapshotMarked() // and those re-parented to init
		_ = g.Signal(syscall.SIGKILL)
		out.agentExited()
		errOut.agentExited()
		return nil
	})
	stderr := &proc.Tail{Max: StderrTailBytes}
	eg.Go(func() error {
		_, _ = io.Copy(stderr, errOut)
		return nil
	})
	// Reader: frame, decode and emit, until stdout ends.
	dec := ad.NewDecoder(r.req)
	eg.Go(func() error {
		r.read(stop, out, dec, timers)
		return nil
	})
	_ = eg.Wait()
	stop(errExited)
	g.Reap(2 * time.Second)
	_ = waitErr // the exit status comes from ProcessState

	var stopCause error
	if rec := r.stopped.Load(); rec != nil {
		stopCause = rec.cause
	}
	code, sig := proc.ExitStatus(cmd.ProcessState)
	if sent := syscall.Signal(r.sent.Load()); sig == "" && sent != 0 && code != nil && *code == 128+int(sent) {
		// The agent caught hub's signal and exited with 128+n (Claude
		// Code exits 143 on SIGTERM): report that hub killed it.
		sig = unix.SignalName(sent)
	}
	end := normalize.End{ExitCode: code, Signal: sig, Stderr: stderr.String(), Stopped: stopCause != nil}
	outcome := dec.Outcome(end)
	var ab abortCause
	switch over := r.over.Load(); {
	case over != nil:
		// Hub's own cause, whether or not the agent also finished.
		outcome.OK, outcome.Error = false, over
	case stopCause == nil:
	case r.terminal.Load() && !errors.As(stopCause, &ab):
		// The agent had finished: whatever stopped it afterwards (linger,
		// a timeout, the caller) only ended its lingering.
		r.emit(events.Notice{Kind: events.NoticeLingerKill,
			Message: fmt.Sprintf("agent had not exited after its terminal event; hub stopped it (%s)", lingerReason(stopCause, lim))})
	default:
		if e := r.hubCause(ctx, stopCause, lim); e != nil {
			outcome.OK, outcome.Error = false, e
		}
	}
	return attempt{outcome: outcome, code: code, sig: sig}, nil
}

// runMarker names the environment entry that marks every process of a run:
// HUB_RUN_MARK=<random>. Processes that clear their environment escape it.
const runMarker = "HUB_RUN_MARK"

// snapshotEvery is how often hub records the agent's descendants while it
// runs, so that tool processes in other process groups are still found and
// killed after the agent itself is gone.
const snapshotEvery = time.Second

// stopRecord is why hub signalled the agent.
type stopRecord struct{ cause error }

func lingerReason(cause error, lim budget.Limits) string {
	switch {
	case errors.Is(cause, ErrLinger):
		return fmt.Sprintf("--linger %s", lim.LingerOrDefault())
	case errors.Is(cause, ErrWallTimeout):
		return "--timeout"
	case errors.Is(cause, ErrIdleTimeout):
		return "--idle-timeout"
	}
	return cause.Error()
}

// hubCause maps the reason hub stopped the agent to its error, or nil when
// hub did not stop it or stopped it for a reason the decoder judges (linger).
// Hub's own cause comes first in classification (SPEC §4).
func (r *run) hubCause(ctx context.Context, cause error, lim budget.Limits) *events.Error {
	var ab abortCause
	var bc budgetCause
	var sc sinkCause
	switch {
	case cause == nil, errors.Is(cause, ErrLinger):
		return nil
	case errors.As(cause, &ab):
		return ab.err
	case errors.As(cause, &bc):
		return bc.err
	case errors.As(cause, &sc):
		return nil // reported by do
	case errors.Is(cause, ErrWallTimeout):
		return events.NewError(events.BinTimeout, events.ReasonWall,
			"raise --timeout, or split the task", "run exceeded --timeout %s", lim.Timeout)
	case errors.Is(cause, ErrIdleTimeout):
		return events.NewError(events.BinTimeout, events.ReasonIdle,
			"the agent or its provider hung; retry, or raise --idle-timeout",
			"no output from the agent for %s (--idle-timeout)", lim.IdleTimeout)
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded):
		return events.NewError(events.BinTimeout, events.ReasonWall,
			"give the run a later deadline", "the caller's deadline passed")
	default:
		var he *events.Error
		if errors.As(cause, &he) { // the caller chose the error
			return he
		}
		return events.NewError(events.BinCancelled, events.ReasonCaller,
			"nothing to do if you meant to stop it; run again to retry", "run cancelled by the caller: %v", cause)
	}
}

// read frames stdout, decodes each line and emits the events, until EOF. It
// always drains stdout so the agent never blocks on a full pipe. Once hub
// has signalled the agent (unless the agent had already reached its terminal
// event), later output is read but not forwarded.
func (r *run) read(stop context.CancelCauseFunc, stdout io.Reader, dec normalize.Decoder, timers *budget.Timers) {
	var src io.Reader = stdout
	if r.opt.rawLog != nil {
		src = io.TeeReader(src, &rawLog{w: r.opt.rawLog})
	}
	// The idle limit counts only while hub waits for the agent: time spent
	// in the sink (a slow consumer) is not the agent's silence.
	idle := r.req.Limits.IdleTimeout > 0
	if idle {
		src = &idleReader{r: src, t: timers}
	}
	maxLine := r.req.MaxLine
	if maxLine <= 0 {
		maxLine = framer.DefaultMaxLine
	}
	fr := framer.New(src, maxLine)
	halted := func() bool { return r.over.Load() != nil || r.stopped.Load() != nil && !r.terminal.Load() }
	for {
		l, err := fr.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !halted() {
				r.emit(events.Notice{Kind: events.NoticeParseError, Message: "reading agent stdout: " + err.Error()})
			}
			_, _ = io.Copy(io.Discard, src)
			return
		}
		if r.sinkErr != nil {
			stop(sinkCause{r.sinkErr})
			continue
		}
		if halted() {
			continue
		}
		if idle {
			timers.Pause()
		}
		if over := r.line(dec, l, maxLine); over != nil {
			stop(budgetCause{over})
			continue
		}
		if idle {
			timers.Resume()
		}
		if r.sinkErr != nil {
			stop(sinkCause{r.sinkErr})
			continue
		}
		st := dec.Status()
		if st.Abort != nil {
			stop(abortCause{st.Abort})
		}
		switch {
		case st.Terminal && !r.terminal.Load():
			r.terminal.Store(true)
			timers.Terminal(true) // the linger limit starts
		case !st.Terminal && r.terminal.Load() && r.stopped.Load() == nil:
			// The agent went on after its terminal event (a new step):
			// it is not finished after all.
			timers.Terminal(false)
			r.terminal.Store(false)
		}
	}
}

// line handles one framed line: notices for over-long and non-JSON lines
// (see damage.go); the decoder for the rest, for the head of an over-long
// line that the decoder can read (normalize.HeadDecoder) and for an event
// recovered from a damaged line. It returns the limit an event of the line
// crossed (see budget.Meter.Exceeded and retriesExceeded): that event is the
// last one forwarded.
func (r *run) line(dec normalize.Decoder, l framer.Line, maxLine int) *events.Error {
	if l.TooLong {
		// A terminal event can be the giant line: the decoder may still
		// read it from the line's head.
		decoded := false
		if hd, ok := dec.(normalize.HeadDecoder); ok {
			r.bodies, decoded = hd.DecodeHead(r.bodies[:0], l.Bytes, l.Size)
		}
		r.emit(tooLongNotice(l, maxLine, decoded))
		if !decoded {
			return nil
		}
		return r.forward()
	}
	b := l.Bytes
	if len(b) == 0 {
		return nil
	}
	if b[0] != '{' || !normalize.Valid(b) {
		c := normalize.Clean(b)
		if len(c) == 0 {
			return nil
		}
		if !normalize.Valid(c) {
			n, event := damagedLine(c)
			r.emit(n)
			if event == nil {
				return nil
			}
			c = event
		}
		b = c
	}
	r.bodies = dec.Decode(r.bodies[:0], b)
	return r.forward()
}

// forward emits the events decoded from one line (r.bodies) and returns the
// budget limit one of them crossed, if any: that event is the last one
// forwarded.
func (r *run) forward() *events.Error {
	r.bodies = r.meter.Price(r.bodies) // the costs the agent does not report
	lim := r.req.Limits
	for _, body := range r.bodies {
		r.emit(body)
		switch b := body.(type) {
		case events.Usage, events.ToolStarted:
		case events.Notice:
			if b.Kind != events.NoticeRetry {
				continue
			}
			r.retries++
			if over := retriesExceeded(r.req.AgentRetries, r.retries, b); over != nil {
				r.over.Store(over)
				return over
			}
			continue
		default:
			continue
		}
		if over := r.meter.Exceeded(lim); over != nil {
			r.over.Store(over)
			return over
		}
		if !r.costWarned && r.meter.CostUnenforceable(lim) {
			r.costWarned = true
			r.emit(events.Notice{Kind: events.NoticeCostUnknown, Message: fmt.Sprintf(
				"--max-cost $%.4f cannot be checked yet: %s has reported no cost for its model calls (cost unknown); hub checks it once a cost is known, and --max-tokens still applies",
				lim.MaxCostUSD, r.req.Agent)})
		}
	}
	return nil
}

// budgetCause carries the budget limit an event crossed.
type budgetCause struct{ err *events.Error }

func (b budgetCause) Error() string { return "adapters: budget: " + b.err.Error() }

// idleReader re-arms the idle limit on every byte read.
type idleReader struct {
	r io.Reader
	t *budget.Timers
}

func (i *idleReader) Read(p []byte) (int, error) {
	n, err := i.r.Read(p)
	if n > 0 {
		i.t.Output()
	}
	return n, err
}

// rawLog copies stdout to the WithRawLog writer until the first write error; the
// run goes on without it (the caller's writer can record the error).
type rawLog struct {
	w      io.Writer
	failed bool
}

func (l *rawLog) Write(p []byte) (int, error) {
	if !l.failed {
		if _, err := l.w.Write(p); err != nil {
			l.failed = true
		}
	}
	return len(p), nil
}

// pipeReader reads one of the agent's output pipes. Until the agent exits it
// blocks like any pipe. After agentExited it returns only what is still
// queued in the pipe (FIONREAD): everything the agent wrote before it exited
// is there, however slowly the caller reads, and the stream ends (io.EOF) as
// soon as the pipe is empty, whatever still holds it open or keeps writing to
// it (a detached grandchild). A read already waiting when the agent exits
// gives up after pipeDrain.
type pipeReader struct {
	f      *os.File
	rc     syscall.RawConn
	exited atomic.Bool
}

func newPipeReader(f *os.File) *pipeReader {
	// SyscallConn, not Fd: Fd would switch the pipe to blocking mode and
	// disable read deadlines.
	rc, _ := f.SyscallConn()
	return &pipeReader{f: f, rc: rc}
}

func (p *pipeReader) agentExited() {
	p.exited.Store(true)
	_ = p.f.SetReadDeadline(time.Now().Add(pipeDrain)) // a read waiting now
}

// queued returns how many bytes the pipe holds, -1 if unknown.
func (p *pipeReader) queued() int {
	n := -1
	if p.rc != nil {
		_ = p.rc.Control(func(fd uintptr) {
			// TIOCINQ is FIONREAD on Linux: bytes queued for reading.
			if v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil {
				n = v
			}
		})
	}
	return n
}

func (p *pipeReader) Read(b []byte) (int, error) {
	if p.exited.Load() {
		q := p.queued()
		if q == 0 {
			return 0, io.EOF
		}
		if q > 0 {
			// Data is queued: this read cannot block, and the deadline
			// agentExited set for a waiting read must not cut it off.
			b = b[:min(len(b), q)]
			_ = p.f.SetReadDeadline(time.Time{})
		}
	}
	n, err := p.f.Read(b)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, io.EOF
	}
	return n, err
}

func isExited(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
