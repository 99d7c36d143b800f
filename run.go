package hub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/internal/framer"
	"github.com/hubcli/hub/internal/proc"
	"github.com/hubcli/hub/normalize"
	"github.com/hubcli/hub/redact"
	"github.com/hubcli/hub/sandbox"
)

// StderrTailBytes is how much of the agent's stderr hub keeps for
// classification: the last 64 KiB.
const StderrTailBytes = proc.DefaultStderrTail

// StopWait bounds how long Run goes on once the agent has exited or been
// SIGKILLed: the stdin copy (proc.PipeDrain, exec's WaitDelay), the drain of
// stdout and stderr (proc.PipeDrain) and the reaping of the tree
// (proc.ReapWait; what the agent left running when it exited on its own
// first gets the grace period). A run that a limit stops returns within
// Limits.GraceOrDefault() + StopWait of the limit running out, given a
// machine that schedules hub at all; a kill (WithKill) skips the grace.
const StopWait = 2*proc.PipeDrain + proc.ReapWait

// Sink receives a run's events in order, from one goroutine at a time. A
// Sink that returns an error stops the run (bin internal); after that it is
// given only the run.finished event, which Run also returns.
type Sink func(events.Event) error

// Run runs req to the end and returns its run.finished. It blocks until the
// agent's process tree is gone: every goroutine it started has returned and
// every process of the tree has been killed and waited for.
//
// Events go to sink as they happen: run.started first, run.finished last and
// exactly once, whatever happens (agent missing, crash, timeout, caller
// cancel). Cancelling ctx stops the agent (SIGTERM to the group, SIGKILL
// after Limits.Grace) and ends the run as cancelled/caller, or with the
// cancel cause when it is an *events.Error; a ctx deadline ends it as
// timeout/wall.
//
// Run is safe for concurrent use; runs share nothing mutable.
func Run(ctx context.Context, req Request, sink Sink, opts ...Option) events.RunFinished {
	r := newRunner(req, sink, newOptions(opts))
	defer r.closeSandbox(false) // a panic's way out: the sandbox goes too
	rf := r.finish(r.settle(ctx, r.run(ctx)))
	if r.opt.lastDec != nil {
		*r.opt.lastDec = r.s.dec
	}
	return rf
}

// runner is one run: its request, options and event stream. Its methods run
// on the caller's goroutine; the agent's processes are each owned by a
// proc.Supervisor.
type runner struct {
	req    Request
	opt    options
	s      *stream
	start  time.Time        // by the run's clock, for duration_ms
	began  time.Time        // monotonic, for the wall-clock limit
	warned bool             // the cost_unknown notice for --max-cost was sent
	info   adapters.Info    // the agent's, once looked up
	grant  grant.Rule       // how the agent is held to req.Permission
	sb     *sandbox.Sandbox // the run's sandbox (Request.Sandbox), until settle removes it
	live   *liveDecoder     // a live session's (NewSession), once its agent is found
}

func newRunner(req Request, sink Sink, o options) *runner {
	r := &runner{req: req, opt: o, s: newStream(req.Agent, o, sink), began: time.Now()}
	r.s.dec = o.prevDec // a session's turn goes on from the last turn's decoder (see attempt)
	r.start = o.clock()
	return r
}

func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "run_" + hex.EncodeToString(b[:])
}

func (r *runner) cwd() string {
	if r.req.Cwd != "" {
		return r.req.Cwd
	}
	wd, _ := os.Getwd()
	return wd
}

// started emits run.started.
func (r *runner) started(argv []string, pid *int, version string) {
	var ver *string
	if version != "" {
		ver = &version
	}
	r.s.emit(events.RunStarted{Argv: argv, Cwd: r.cwd(), PID: pid, AgentVersion: ver, Limits: r.req.Limits.Event(), Sandbox: r.sandboxEvent()})
}

// notStarted is the record of a run whose agent never ran; run.started
// names what hub would have run.
func (r *runner) notStarted(argv []string, version string, err, cause error) record {
	r.started(argv, nil, version)
	return record{Start: err, Cause: cause}
}

// run finds the agent, starts it and returns the record of how it ended.
func (r *runner) run(ctx context.Context) record {
	ad, err := adapters.Lookup(r.req.Agent)
	if err != nil {
		return r.notStarted([]string{r.req.Agent}, "", events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			fmt.Sprintf("use one of: %s", strings.Join(adapters.Names(), ", ")), "%v", err), nil)
	}
	r.s.meter = newMeter(r.req, ad)
	if r.req.Schema != nil && ad.Info().AnswerTool != "" {
		r.s.meter.Exempt(ad.Info().AnswerTool) // the answer is no tool step
	}
	bin := r.req.Bin
	if bin == "" {
		bin = ad.Info().Binary
	}
	if ctx.Err() != nil {
		// Cancelled before anything started (the CLI's prompt read was
		// stopped, or too large): start nothing, not even the probe.
		return r.notStarted([]string{bin}, "", events.NewError(events.BinCancelled, events.ReasonCaller,
			"nothing to do if you meant to stop it; run again to retry", "cancelled before %s started", bin), context.Cause(ctx))
	}
	if len(r.req.Args) > 0 && !ad.Info().CallerCommand {
		return r.notStarted([]string{bin}, "", events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"pass the agent's options through its own config, or run it as an ACP agent (--agent acp --acp-command …)",
			"%s takes no arguments from the caller, got %q", r.req.Agent, r.req.Args), nil)
	}
	if r.opt.approver != nil && r.opt.session == nil && r.req.Schema != nil {
		return r.notStarted([]string{bin}, "", events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"run the structured question without an approver, or approve the work first and ask for the answer in a second run",
			"--schema and an approver cannot be combined yet: a run with an approver is one turn of a live session, which hub does not repair to a schema"), nil)
	}
	if err := checkSandboxRequest(r.req); err != nil {
		return r.notStarted([]string{bin}, "", err, nil)
	}
	if e := checkFiles(r.req, r.req.Agent, ad.Info().MaxPromptBytes, r.opt.session != nil); e != nil {
		return r.notStarted([]string{bin}, "", e, nil)
	}
	if rec, refused := r.grantRun(ctx, ad, bin); refused {
		return rec
	}
	if c, ok := ad.(adapters.RequestChecker); ok {
		if err := c.CheckRequest(r.req.adapterRequest()); err != nil {
			return r.notStarted([]string{bin}, "", withFiles(err, r.req), nil)
		}
	}
	inst, err, cause := r.detect(ctx, ad)
	if err != nil {
		return r.notStarted([]string{bin}, inst.Version, err, cause)
	}
	if err, cause := r.openSandbox(ctx); err != nil {
		return r.notStarted([]string{inst.Path}, inst.Version, err, cause)
	}
	var spec adapters.Command
	if s := r.opt.session; s != nil || r.opt.approver != nil {
		// A session, or a run whose approver the CLI must ask: a run with
		// an approver is one turn of a live session, its stream a run's.
		sr, lv, lerr := r.liveFor(ad)
		if lerr == nil && s == nil {
			lv.oneShot = adapters.InlineFiles(r.req.Files, r.req.Prompt)
			if err := lv.live.Check(lv.oneShot); err != nil {
				err = withFiles(err, r.req)
				var e *events.Error
				if !errors.As(err, &e) {
					e = events.NewError(events.BinInvalidInput, events.ReasonBadRequest, "fix the prompt", "%v", err)
				}
				lerr = e
			}
		}
		if lerr != nil {
			return r.notStarted([]string{inst.Path}, inst.Version, lerr, nil)
		}
		r.live = lv
		areq := r.adapterRequest()
		areq.Prompt = ""
		spec, err = sr.SessionCommand(areq, inst)
	} else {
		spec, err = ad.Command(r.req.adapterRequest(), inst)
	}
	if err != nil {
		return r.notStarted([]string{inst.Path}, inst.Version, withFiles(err, r.req), nil)
	}
	if spec.Cleanup != nil {
		defer spec.Cleanup() // the process has ended when run returns
	}
	argv := redact.Argv(append([]string{spec.Path}, spec.Args...))
	rec, err := r.attempt(ctx, ad, spec, r.req, func(pid int) { r.started(argv, &pid, inst.Version) })
	if err != nil {
		return r.notStarted(argv, inst.Version, err, nil)
	}
	if r.live != nil {
		return rec // a session's limits end it: no final-answer resume
	}
	if _, ok := r.s.overBy.(toolStepGuard); ok { // not a caller's guard with the same reason
		rec = r.finalize(ctx, ad, inst, rec)
	}
	return r.structure(ctx, ad, inst, rec)
}

// grantRun decides the run's grant before anything starts (SPEC §6.1): a
// level the agent cannot be held to, a billed key in Request.Env under
// AuthLogin, and a grant the caller's Confirm does not approve each refuse
// the run, which then starts nothing.
func (r *runner) grantRun(ctx context.Context, ad adapters.Adapter, bin string) (rec record, refused bool) {
	r.info = ad.Info()
	g, gerr := grant.For(r.info.Name, r.info.Grants, r.req.Permission.OrDefault())
	if gerr != nil {
		return r.notStarted([]string{bin}, "", gerr, nil), true
	}
	r.grant = g
	if e := authConflict(r.req); e != nil {
		return r.notStarted([]string{bin}, "", e, nil), true
	}
	if r.opt.confirm == nil {
		return record{}, false
	}
	err := r.opt.confirm(ctx, r.req, g)
	switch {
	case err == nil:
		return record{}, false
	case ctx.Err() != nil:
		return r.notStarted([]string{bin}, "", events.NewError(events.BinCancelled, events.ReasonCaller,
			"nothing to do if you meant to stop it; run again to retry", "cancelled while hub asked to confirm the run"), context.Cause(ctx)), true
	}
	var e *events.Error
	if !errors.As(err, &e) {
		e = events.NewError(events.BinPermissionDenied, events.ReasonConfirmationRequired,
			"run it again and confirm, or approve it ahead with --yes", "%v", err)
	}
	return r.notStarted([]string{bin}, "", e, nil), true
}

// detect probes the agent's binary within the run's wall-clock limit, which
// covers the whole run, version probe included. When the probe fails, cause
// is what stopped it, if anything did: ErrWallTimeout, or the caller's
// cancel or deadline (as for a running agent).
func (r *runner) detect(ctx context.Context, ad adapters.Adapter) (inst adapters.Install, err, cause error) {
	dctx := ctx
	if t := r.req.Limits.Timeout; t > 0 {
		var cancel context.CancelFunc
		dctx, cancel = context.WithTimeoutCause(ctx, t, ErrWallTimeout)
		defer cancel()
	}
	inst, err = ad.Detect(dctx, r.req.Bin)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		cause = context.Cause(ctx)
	case errors.Is(context.Cause(dctx), ErrWallTimeout):
		cause = ErrWallTimeout
	}
	return inst, err, cause
}

// finish decides the run's verdict, emits run.finished and returns it.
func (r *runner) finish(rec record) events.RunFinished {
	rec = r.totals(rec)
	rec.SinkErr, rec.ToolCallsDenied = r.s.sinkErr, r.s.denied
	rec.Schema = r.req.Schema != nil
	rec.Now = r.opt.clock()
	rf, notice := decide(rec)
	if notice != nil {
		r.s.emit(*notice)
	}
	if e := rf.Error; e != nil && e.Bin == events.BinUnavailable && e.Reason == events.ReasonAuth && r.req.Auth == grant.AuthLogin {
		e.Hint = loginHint(r.info)
	}
	rf.DurationMS = max(r.opt.clock().Sub(r.start).Milliseconds(), 0)
	if r.opt.approver != nil {
		a := r.s.approvals
		rf.Approvals = &a
	}
	rf = r.s.secrets.Body(rf).(events.RunFinished)
	if r.live != nil {
		r.live.finishTurn(rf) // a turn the session's end cut short
	}
	r.s.emit(rf)
	return rf
}

// errPanic is the stop cause of an agent whose run panicked.
var errPanic = errors.New("hub: the run panicked")

// attempt runs one agent process of the run for req (the run's request, or
// the final-answer resume's) with spec, feeding its output to the run's
// stream, and returns the record of how it ended (without the meter's
// totals, which finish adds). It calls started (if not nil) with the
// process group id once the process runs, before any of its events is
// emitted; it returns an error, and emits nothing, only when the process
// could not be started.
func (r *runner) attempt(ctx context.Context, ad adapters.Adapter, spec adapters.Command, req Request, started func(pid int)) (record, error) {
	inherited, added := os.Environ(), spec.Env
	if req.Auth == grant.AuthLogin {
		inherited, added = grant.WithoutBilledKeys(inherited), grant.WithoutBilledKeys(added)
	}
	env := append(append(append(inherited, added...), req.Env...), spec.EnvLast...)
	// PWD names the directory the agent runs in, as a shell sets it: a
	// PWD inherited from hub names hub's own, and OpenCode (1.18.33) takes
	// its project directory from PWD, not from its working directory,
	// resolving relative paths and its external_directory check against it.
	// It is the directory's real path, links resolved, as the kernel's
	// getcwd gives it (Node's process.cwd()): a CLI that joins a relative
	// path to one and hub's watch, which joins it to PWD, then agree.
	if cwd, err := filepath.Abs(r.cwd()); err == nil {
		if real, err := filepath.EvalSymlinks(cwd); err == nil {
			cwd = real
		}
		env = append(env, "PWD="+cwd)
	}
	var dec normalize.Decoder = r.live
	if r.live == nil {
		dec = ad.NewDecoder(req.adapterRequest())
	}
	if c, ok := dec.(normalize.Continuer); ok && r.s.dec != nil {
		c.Continue(r.s.dec) // a resume of this run's session
	}
	watch := grant.NewWatch(req.Agent, r.grant, r.cwd())
	if req.Schema != nil {
		watch.AnswerTool = r.info.AnswerTool
	}
	if r.sb != nil {
		watch.Original = r.sb.Root
	}
	r.s.attempt(dec, req.MaxLine, env, r.s.guardsFor(req, req.Limits, dec, &r.warned, append([]Guard{watch}, r.opt.guards...)))
	// The agent's stderr becomes notices, sent from the stderr goroutine
	// whenever this one does not hold the lock: from here until the agent
	// runs (run.started comes first), and while it handles stdout lines.
	lk := &runLock{}
	errLines := &stderrLines{lock: lk, s: r.s}
	lk.lock()
	defer lk.unlock()
	ps := proc.Spec{
		Path: spec.Path, Args: spec.Args, Dir: req.Cwd, Env: env, Stdin: spec.Stdin,
		Grace: req.Limits.GraceOrDefault(), Orphans: r.opt.orphans, Stderr: errLines, TTY: req.TTY,
	}
	if r.opt.flush != nil {
		ps.Stderr = flushAfter{w: errLines, flush: func() { r.flush(errLines.stop) }}
	}
	conv, _ := dec.(adapters.Conversation)
	if conv != nil {
		ps.StdinPipe, ps.Stdin, ps.Interrupt = true, nil, conv.Interrupt
	}
	if r.live != nil {
		ps.Interrupt = nil // a stop of a session stops its process: SIGTERM at once
	}
	sup, err := proc.Launch(ps)
	if errors.Is(err, proc.ErrGuard) {
		return record{}, adapters.GuardError(spec.Path, err)
	}
	if errors.Is(err, proc.ErrTTY) {
		return record{}, events.NewError(events.BinInternal, "",
			"--tty needs pseudo-terminals (/dev/ptmx, devpts mounted) with some to spare; run without --tty", "cannot start %s: %v", spec.Path, err)
	}
	if err == nil {
		errLines.stop = sup.Stop // before the lock goes: no stderr line is read until then
	}
	if err != nil {
		return record{}, events.NewError(events.BinNotInstalled, events.ReasonNotExecutable,
			"check the binary with `"+spec.Path+" --version`, or pass another --bin", "cannot start %s: %v", spec.Path, err)
	}
	// A panic below (in the caller's sink or guard) must not leave the
	// agent's tree running: kill it, wait for it, and let the panic go on.
	waited := false
	defer func() {
		if p := recover(); p != nil {
			lk.unlock() // Wait waits for the stderr goroutine
			if !waited {
				sup.Kill(errPanic)
				sup.Wait()
			}
			panic(p)
		}
	}()
	if started != nil {
		started(sup.PID())
	}
	if r.live != nil && r.opt.approver != nil {
		r.live.approvals(r.opt.approver, watch, lk, sup.Stop)
	}
	if conv != nil {
		conv.Open(sup.Stdin())
		defer conv.Close() // after Wait: the agent is gone, its stdout ended
	}
	// The wall-clock, idle and linger limits. They outlive the agent's
	// stdout: an agent that closes stdout and keeps running is idle, and
	// lingering.
	timers := budget.StartTimers(req.Limits, r.began, sup.Stop)
	defer timers.Stop()
	if r.live != nil {
		r.live.attach(lk, timers, sup.Stop)
		if r.opt.session != nil {
			r.opt.session.running(r.live)
		} else {
			go r.live.sendOneShot()
		}
	}
	watchDone := r.watch(ctx, sup)
	if r.s.sinkErr != nil { // the consumer is gone already
		sup.Stop(sinkCause{r.s.sinkErr})
	}
	terminal := r.read(sup, timers, req.Limits.IdleTimeout > 0, lk, conv)
	r.flush(sup.Stop) // before the wait for the agent's exit: it may go on after it closed stdout
	lk.unlock()
	exit := sup.Wait()
	waited = true
	if p := errLines.panicked; p != nil {
		watchDone()
		panic(p) // the sink's or a guard's, on the stderr goroutine
	}
	errLines.flush()
	watchDone()
	out := dec.Outcome(normalize.End{ExitCode: exit.Code, Signal: exit.Signal, Stderr: exit.Stderr, Stopped: exit.Cause != nil})
	return record{Guard: r.s.over, Cause: exit.Cause, Terminal: terminal, Outcome: out, ExitCode: exit.Code, Signal: exit.Signal}, nil
}

// watch stops sup when ctx is done (SIGTERM, grace, SIGKILL) or the WithKill
// channel closes (SIGKILL at once), until the returned func is called; a
// kill also cuts short the stop of what the agent left after it exited.
func (r *runner) watch(ctx context.Context, sup *proc.Supervisor) func() {
	done := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		kill := r.opt.kill
		for {
			select {
			case <-done:
				return
			case <-kill:
				sup.Kill(ErrKilled)
				return
			case <-ctx.Done():
				sup.Stop(context.Cause(ctx))
				ctx = context.Background() // then only the kill channel is left
			}
		}
	}()
	return func() { close(done); <-ended }
}

// read frames the agent's stdout and hands each line to the stream, until
// stdout ends, holding lk but while it waits for stdout; it reports whether the agent's last event left it at its
// terminal event. It always drains stdout so the agent never blocks on a
// full pipe. Once a guard stopped the run, or hub signalled the agent
// (unless the agent had already reached its terminal event), later output is
// read but not forwarded.
func (r *runner) read(sup *proc.Supervisor, timers *budget.Timers, idle bool, lk *runLock, conv adapters.Conversation) (terminal bool) {
	var src io.Reader = sup.Stdout()
	if r.opt.rawLog != nil {
		src = io.TeeReader(src, &rawLog{w: r.opt.rawLog})
	}
	// The idle limit counts only while hub waits for the agent: time spent
	// in the sink (a slow consumer) is not the agent's silence.
	if idle {
		src = &idleReader{r: src, t: timers}
	}
	src = lockedReader{r: src, l: lk} // stderr notices go in while hub waits
	if r.opt.flush != nil {
		// The events of what was read so far go out before hub waits for
		// more; like the sink's, the time that takes is not the agent's
		// silence.
		src = flushFirst{r: src, flush: func() {
			if idle {
				timers.Pause()
				defer timers.Resume()
			}
			r.flush(sup.Stop)
		}}
	}
	fr := framer.New(src, r.s.maxLine)
	halted := func() bool { return r.s.halted() || sup.Stopped() && !terminal }
	for {
		l, err := fr.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !halted() {
				r.s.emit(events.Notice{Kind: events.NoticeParseError, Message: "reading agent stdout: " + err.Error()})
			}
			_, _ = io.Copy(io.Discard, src)
			return terminal
		}
		if conv != nil && !l.TooLong && len(l.Bytes) > 0 && l.Bytes[0] == '{' {
			conv.Receive(l.Bytes)
		}
		if r.s.sinkErr == nil && !halted() {
			if idle {
				timers.Pause()
			}
			r.s.line(l)
			if idle {
				timers.Resume()
			}
		}
		switch {
		case r.s.sinkErr != nil:
			sup.Stop(sinkCause{r.s.sinkErr})
		case r.s.over != nil:
			sup.Stop(r.s.over)
		case halted():
		default:
			st := r.s.dec.Status()
			if st.Terminal != terminal && (st.Terminal || !sup.Stopped()) {
				// The linger limit starts at the terminal event; an agent
				// that goes on after it (a new step) is not finished.
				terminal = st.Terminal
				timers.Terminal(terminal)
			}
		}
	}
}

// flush calls the WithFlush function (see WithFlush), holding the run's
// turn. Its error is the sink's: it stops the agent with stop (when not
// nil), and nothing but run.finished is sent after it.
func (r *runner) flush(stop func(error)) {
	if r.opt.flush == nil || r.s.sinkErr != nil {
		return
	}
	if err := r.opt.flush(); err != nil {
		r.s.sinkErr = err
		if stop != nil {
			stop(sinkCause{err})
		}
	}
}

// flushFirst calls flush before each read from r.
type flushFirst struct {
	r     io.Reader
	flush func()
}

func (f flushFirst) Read(p []byte) (int, error) {
	f.flush()
	return f.r.Read(p)
}

// flushAfter is the agent's stderr with WithFlush: each write goes to w
// (stderrLines, which sends its lines' notices) and then flush is called,
// holding the run's turn, before the stderr goroutine waits for more. A
// panic of flush is handled as one of the sink's there (stderrLines.panicked).
type flushAfter struct {
	w     *stderrLines
	flush func()
}

func (f flushAfter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	f.w.lock.mu.Lock()
	defer f.w.lock.mu.Unlock()
	if f.w.panicked == nil {
		defer f.w.recover()
		f.flush()
	}
	return n, err
}

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

// rawLog copies stdout to the WithRawLog writer until the first write
// error; the run goes on without it (the caller's writer can record the
// error).
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
