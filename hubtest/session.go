package hubtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/mockllm"
)

// SessionRun is a live session of a real CLI against the mock server,
// recorded: every event the session's turns and Close gave, in order.
type SessionRun struct {
	t      *testing.T
	env    *Env
	S      *hub.Session
	Events []events.Event
	stream bytes.Buffer
	enc    *events.Encoder
	Fin    events.RunFinished
	closed bool
}

// StartSession starts a live session of e's CLI (Bin) in e.Work with e.Env
// and limits (the unset ones filled in by [Unbounded]). It fails t fatally
// if the session does not start. Close it with [SessionRun.Close].
func (e *Env) StartSession(t *testing.T, limits budget.Limits, opts ...hub.Option) *SessionRun {
	t.Helper()
	return e.startSession(t, limits, "", nil, opts...)
}

// ResumeSession is StartSession going on with the agent's session id (an
// earlier run's session_id).
func (e *Env) ResumeSession(t *testing.T, limits budget.Limits, id string, opts ...hub.Option) *SessionRun {
	t.Helper()
	return e.startSession(t, limits, id, nil, opts...)
}

// StartSessionWith is StartSession with edit changing the request after
// Agent.Session has (to give it Files, say).
func (e *Env) StartSessionWith(t *testing.T, limits budget.Limits, edit func(*hub.Request), opts ...hub.Option) *SessionRun {
	t.Helper()
	return e.startSession(t, limits, "", edit, opts...)
}

func (e *Env) startSession(t *testing.T, limits budget.Limits, resume string, edit func(*hub.Request), opts ...hub.Option) *SessionRun {
	t.Helper()
	bin := Bin(t, e.Agent.Name)
	Unbounded(t, &limits)
	req := hub.Request{Agent: e.Agent.Name, Model: e.Agent.Model, Bin: bin, Cwd: e.Work, Env: slices.Clone(e.Env), Limits: limits, Resume: resume}
	e.Agent.edit(&req)
	if edit != nil {
		edit(&req)
	}
	s, err := hub.NewSession(t.Context(), req, opts...)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	r := &SessionRun{t: t, env: e, S: s}
	r.enc = events.NewEncoder(&r.stream)
	t.Cleanup(func() {
		if !r.closed {
			r.Close()
		}
		if t.Failed() || testing.Verbose() {
			t.Logf("session events:\n%s", r.stream.Bytes())
		}
	})
	return r
}

// Turn sends prompt and reads the turn's events to its turn.finished, which
// it returns. With onEvent, each event is given to it as it comes (to
// interrupt the turn at the first text, say). It fails t fatally when Send
// fails.
func (r *SessionRun) Turn(prompt string, onEvent func(events.Event)) events.TurnFinished {
	r.t.Helper()
	var tf *events.TurnFinished
	for ev, err := range r.S.Send(r.t.Context(), prompt) {
		if err != nil {
			r.t.Fatalf("Send(%q): %v", prompt, err)
		}
		r.Events = append(r.Events, ev)
		_ = r.enc.Encode(ev)
		if onEvent != nil {
			onEvent(ev)
		}
		if f, ok := ev.Body.(events.TurnFinished); ok {
			tf = &f
		}
	}
	if tf == nil {
		r.t.Fatalf("turn %q gave no turn.finished", prompt)
	}
	return *tf
}

// Close closes the session and checks what every session must leave: a
// valid event stream (ValidateStream) and no process of the session alive
// ([Leftovers]). It returns the run.finished.
func (r *SessionRun) Close() events.RunFinished {
	r.t.Helper()
	r.closed = true
	r.Fin = r.S.Close()
	ev := events.Event{Seq: int64(len(r.Events)), Body: r.Fin}
	if n := len(r.Events); n > 0 {
		ev.Seq, ev.RunID, ev.Agent, ev.TS = r.Events[n-1].Seq+1, r.Events[n-1].RunID, r.Events[n-1].Agent, r.Events[n-1].TS
	}
	r.Events = append(r.Events, ev)
	_ = r.enc.Encode(ev)
	if err := ValidateStream(r.stream.Bytes()); err != nil {
		r.t.Errorf("session event stream invalid: %v", err)
	}
	if left := Leftovers(r.env.Dir); len(left) > 0 {
		r.t.Errorf("processes of the session still alive after Close returned: %v", left)
	}
	return r.Fin
}

// PID is the agent's pid from the session's run.started.
func (r *SessionRun) PID() int {
	for _, ev := range r.Events {
		if rs, ok := ev.Body.(events.RunStarted); ok && rs.PID != nil {
			return *rs.PID
		}
	}
	return 0
}

// Count is how many events of type typ the session gave.
func (r *SessionRun) Count(typ events.Type) int {
	n := 0
	for _, ev := range r.Events {
		if ev.Body.Type() == typ {
			n++
		}
	}
	return n
}

// skipSession skips the session test name when a.Skip holds
// "Session/"+name, with the reason it gives: an agent that cannot play it.
func skipSession(t *testing.T, a Agent, name string) {
	t.Helper()
	if why, ok := a.Skip["Session/"+name]; ok {
		t.Skip(why)
	}
}

// edit applies a.Session to req, a request of a session test.
func (a Agent) edit(req *hub.Request) {
	if a.Session != nil {
		a.Session(req)
	}
}

// alive reports whether pid runs (and is no zombie).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// LiveSessions runs a's CLI as a live session (hub.NewSession) against the
// mock server: three turns in one process, an interrupt then a further
// turn, and a budget crossed in the second turn. Each checks the files and
// processes, not only the events.
func LiveSessions(t *testing.T, a Agent) {
	t.Run("HubKilled", func(t *testing.T) {
		if cfg := os.Getenv(sessionChildEnv); cfg != "" {
			sessionChild(t, a, cfg)
			return
		}
		t.Parallel()
		hubKilled(t, a)
	})
	t.Run("ThreeTurns", func(t *testing.T) {
		t.Parallel()
		e := a.Prepare(t, Setup{})
		r := e.StartSession(t, budget.Limits{IdleTimeout: time.Minute})
		prompts := []string{"turn one MOCK_ANSWER first-answer", "turn two MOCK_TOOL", "turn three MOCK_ANSWER third-answer"}
		var pids []int
		for i, p := range prompts {
			tf := r.Turn(p, nil)
			if !tf.OK || tf.Turn != int64(i+1) {
				t.Errorf("turn %d: turn.finished %+v, want ok and turn %d", i+1, tf, i+1)
			}
			if pid := r.PID(); pid == 0 || !alive(pid) {
				t.Errorf("after turn %d the agent (pid %d) is not running: a live session keeps its process", i+1, pid)
			} else {
				pids = append(pids, pid)
			}
		}
		if n := r.Count(events.TypeRunStarted); n != 1 {
			t.Errorf("%d run.started, want 1: one process for the whole session", n)
		}
		if n := r.Count(events.TypeSessionStarted); n != 1 {
			t.Errorf("%d session.started, want 1", n)
		}
		for _, ev := range r.Events {
			if ss, ok := ev.Body.(events.SessionStarted); ok && ss.Mode != events.SessionLive {
				t.Errorf("session.started mode %q, want live", ss.Mode)
			}
		}
		// The third turn's model call carries the conversation so far.
		calls := ModelCalls(e.Server)
		if len(calls) < 4 {
			t.Fatalf("%d model calls, want at least 4 (one per turn, two for the tool turn)", len(calls))
		}
		last := calls[len(calls)-1]
		// (Codex sends its environment context as the first user message.)
		if !slices.ContainsFunc(last.UserTexts, func(s string) bool { return strings.Contains(s, "turn one") }) ||
			!strings.Contains(last.LastUserText, "turn three") || last.Answered < 2 {
			t.Errorf("the third turn's model call: user texts %q, %d answers: want turn one's, turn three's last, and the earlier answers",
				last.UserTexts, last.Answered)
		}
		fin := r.Close()
		if !fin.OK {
			t.Errorf("run.finished %+v, want ok after Close", fin.Error)
		}
		if fin.Text != "third-answer" && !strings.Contains(fin.Text, "third-answer") {
			t.Errorf("run.finished text %q, want the last turn's answer", fin.Text)
		}
		for _, pid := range pids {
			if pid != pids[0] {
				t.Errorf("the agent's pid changed between turns (%v): one process takes every turn", pids)
			}
		}
		if len(pids) > 0 && alive(pids[0]) {
			t.Errorf("agent pid %d alive after Close", pids[0])
		}
	})
	t.Run("Interrupt", func(t *testing.T) {
		t.Parallel()
		skipSession(t, a, "Interrupt")
		e := a.Prepare(t, Setup{})
		r := e.StartSession(t, budget.Limits{IdleTimeout: time.Minute})
		asked := false
		tf := r.Turn("a long answer "+string(mockllm.Stall), func(ev events.Event) {
			if _, ok := ev.Body.(events.TextDelta); ok && !asked {
				asked = true
				if err := r.S.Interrupt(); err != nil {
					t.Errorf("Interrupt: %v", err)
				}
			}
		})
		if !asked {
			t.Fatalf("the stalled turn streamed no text to interrupt at")
		}
		if tf.OK || !tf.Interrupted || tf.Error == nil || tf.Error.Bin != events.BinCancelled {
			t.Errorf("interrupted turn.finished %+v, want interrupted, cancelled/caller", tf)
		}
		pid := r.PID()
		if !alive(pid) {
			t.Fatalf("the agent (pid %d) exited at the interrupt: the session must go on", pid)
		}
		tf = r.Turn("after the interrupt MOCK_ANSWER still-here", nil)
		if !tf.OK || !strings.Contains(tf.Text, "still-here") {
			t.Errorf("turn after the interrupt: %+v, want ok with the answer", tf)
		}
		if n := r.Count(events.TypeRunStarted); n != 1 {
			t.Errorf("%d run.started: the interrupt must not restart the agent", n)
		}
		if fin := r.Close(); !fin.OK {
			t.Errorf("run.finished %+v, want ok", fin.Error)
		}
	})
	t.Run("BadInput", func(t *testing.T) {
		t.Parallel()
		e := a.Prepare(t, Setup{})
		r := e.StartSession(t, budget.Limits{IdleTimeout: time.Minute})
		// A prompt while a turn runs is refused, and the turn goes on.
		var second []error
		tf := r.Turn("a long answer "+string(mockllm.Stall), func(ev events.Event) {
			if _, ok := ev.Body.(events.TextDelta); ok && second == nil {
				second = collect(r.S.Send(t.Context(), "meanwhile MOCK_TEXT"))
				_ = r.S.Interrupt()
			}
		})
		if len(second) != 1 || !errors.Is(second[0], hub.ErrTurnRunning) {
			t.Errorf("Send during a turn gave %v, want only hub.ErrTurnRunning", second)
		}
		if !tf.Interrupted {
			t.Errorf("turn.finished %+v, want the interrupted turn", tf)
		}
		// A prompt the CLI cannot take is refused before the turn starts,
		// and the session goes on.
		huge := strings.Repeat("x", 16<<20+1)
		errs := collect(r.S.Send(t.Context(), huge))
		var tooLarge *events.Error
		if len(errs) != 1 || !errors.As(errs[0], &tooLarge) || tooLarge.Reason != events.ReasonPromptTooLarge {
			t.Errorf("Send of a 16 MiB + 1 prompt gave %v, want only invalid_input/prompt_too_large", errs)
		}
		if tf := r.Turn("after the huge prompt MOCK_TEXT", nil); !tf.OK {
			t.Errorf("turn after the refused prompt: %+v, want ok", tf)
		}
		// One Send is one turn, however often its sequence is ranged over.
		seq := r.S.Send(t.Context(), "once MOCK_TEXT")
		if errs := collect(seq); len(errs) == 0 || errs[len(errs)-1] != nil {
			t.Errorf("the turn of a Send gave errors %v", errs)
		}
		if errs := collect(seq); len(errs) != 1 || errs[0] == nil {
			t.Errorf("ranging a Send's sequence again gave %v, want one error (no second turn)", errs)
		}
		// The agent dies between turns: the session ends, and says why.
		pid := r.PID()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for _, err := range collect(r.S.Send(t.Context(), "after the crash MOCK_TEXT")) {
			if err != nil && !errors.Is(err, hub.ErrSessionClosed) {
				t.Errorf("Send after the agent died: %v, want hub.ErrSessionClosed or a failed turn", err)
			}
		}
		fin := r.Close()
		if fin.OK || fin.Error == nil {
			t.Errorf("run.finished ok after the agent was killed between turns")
		}
		if errs := collect(r.S.Send(t.Context(), "after Close MOCK_TEXT")); len(errs) != 1 || !errors.Is(errs[0], hub.ErrSessionClosed) {
			t.Errorf("Send after Close gave %v, want only hub.ErrSessionClosed", errs)
		}
		if again := r.S.Close(); again.OK != fin.OK || again.DurationMS != fin.DurationMS {
			t.Errorf("a second Close gave another run.finished")
		}
	})
	t.Run("TurnHangs", func(t *testing.T) {
		t.Parallel()
		e := a.Prepare(t, Setup{})
		// The agent's own idle limit for a first attempt (Agent.IdleTimeout):
		// the first turn includes the CLI's start.
		idle := a.IdleTimeout
		if idle == 0 {
			idle = 5 * time.Second
		}
		// A first turn that the idle limit stopped before the CLI had
		// started (a busy machine) tested nothing: Retry starts a session
		// again with twice the limit.
		var lim budget.Limits
		var r *SessionRun
		Retry(t, idle, func(idle time.Duration) bool {
			lim = budget.Limits{IdleTimeout: idle, Grace: time.Second}
			r = e.StartSession(t, lim)
			tf := r.Turn("quick MOCK_TEXT", nil)
			if !tf.OK && tf.Error != nil && tf.Error.Bin == events.BinTimeout && tf.Error.Reason == events.ReasonIdle && len(ModelCalls(e.Server)) == 0 {
				r.Close()
				return false
			}
			if !tf.OK {
				t.Fatalf("turn 1: %+v", tf)
			}
			return true
		})
		// Between turns the agent's silence is no stall: wait past the
		// idle limit before the next prompt.
		time.Sleep(lim.IdleTimeout + time.Second)
		pid := r.PID()
		if !alive(pid) {
			t.Fatalf("the session's agent was stopped while no turn ran")
		}
		start := time.Now()
		tf := r.Turn("never answered "+string(mockllm.Hang), nil)
		took := time.Since(start)
		if tf.OK || tf.Error == nil || tf.Error.Bin != events.BinTimeout || tf.Error.Reason != events.ReasonIdle {
			t.Errorf("hung turn: %+v, want timeout/idle", tf)
		}
		if max := lim.IdleTimeout + lim.Grace + hub.StopWait; took > max+lim.IdleTimeout {
			t.Errorf("the hung turn ended after %s, want about the idle limit (+ grace + StopWait = %s)", took, max)
		}
		if fin := r.Close(); fin.Error == nil || fin.Error.Bin != events.BinTimeout {
			t.Errorf("run.finished %+v, want timeout/idle", fin.Error)
		}
		if alive(pid) {
			t.Errorf("agent pid %d alive after the idle stop", pid)
		}
	})
	t.Run("InterruptAtOnce", func(t *testing.T) {
		t.Parallel()
		skipSession(t, a, "InterruptAtOnce")
		// An interrupt sent with the prompt, before the CLI began the turn
		// (pi 0.73.1 drops an abort that comes before agent_start): the
		// turn, which the mock streams a second a piece, must end
		// interrupted rather than answered.
		e := a.Prepare(t, Setup{Server: mockllm.Options{ChunkDelay: time.Second}})
		r := e.StartSession(t, budget.Limits{IdleTimeout: 5 * time.Minute})
		tf := r.Turn("slow "+string(mockllm.Text), func(ev events.Event) {
			if _, ok := ev.Body.(events.TurnStarted); ok {
				if err := r.S.Interrupt(); err != nil {
					t.Errorf("Interrupt: %v", err)
				}
			}
		})
		if !tf.Interrupted || tf.OK || strings.Contains(tf.Text, "Hello from the mock model.") {
			t.Errorf("turn.finished %+v, want interrupted before the whole answer", tf)
		}
		// Claude Code folds a prompt it never began into the next one, so
		// the mock may take either marker: the turn must just answer.
		if tf := r.Turn("next "+string(mockllm.Text), nil); !tf.OK {
			t.Errorf("turn after the interrupt: %+v, want ok", tf)
		}
		if fin := r.Close(); !fin.OK {
			t.Errorf("run.finished %+v, want ok", fin.Error)
		}
	})
	t.Run("TurnTimeout", func(t *testing.T) {
		t.Parallel()
		skipSession(t, a, "TurnTimeout")
		turnTimeout(t, a)
	})
	t.Run("Resumed", func(t *testing.T) {
		t.Parallel()
		// A live session that goes on with an earlier run's session (hub
		// acp restarts a crashed agent so): the first turn's model call
		// carries the run's prompt and answer, and the session keeps its
		// id.
		e := a.Prepare(t, Setup{})
		req := hub.Request{Agent: a.Name, Model: a.Model, Bin: Bin(t, a.Name), Cwd: e.Work, Env: slices.Clone(e.Env), Prompt: "the earlier run MOCK_ANSWER earlier-answer"}
		a.edit(&req)
		Unbounded(t, &req.Limits)
		fin := hub.Run(t.Context(), req, func(events.Event) error { return nil })
		if !fin.OK || fin.SessionID == nil {
			t.Fatalf("the run to resume: %+v", fin.Error)
		}
		r := e.ResumeSession(t, budget.Limits{IdleTimeout: time.Minute}, *fin.SessionID)
		if tf := r.Turn("the resumed turn MOCK_ANSWER x MOCK_THEN resumed-answer", nil); !tf.OK || !strings.Contains(tf.Text, "resumed-answer") {
			t.Errorf("resumed turn: %+v, want ok with the answer to the second message of the conversation", tf)
		}
		calls := ModelCalls(e.Server)
		last := calls[len(calls)-1]
		if !slices.ContainsFunc(last.UserTexts, func(s string) bool { return strings.Contains(s, "the earlier run") }) || last.Answered < 1 {
			t.Errorf("the resumed turn's model call: user texts %q, %d answers: want the earlier run's prompt and answer", last.UserTexts, last.Answered)
		}
		var ids []string
		for _, ev := range r.Events {
			if ss, ok := ev.Body.(events.SessionStarted); ok {
				ids = append(ids, ss.SessionID)
			}
		}
		if len(ids) != 1 || ids[0] != *fin.SessionID {
			t.Errorf("session.started ids %q, want only the resumed %q", ids, *fin.SessionID)
		}
		if fin := r.Close(); !fin.OK {
			t.Errorf("run.finished %+v, want ok", fin.Error)
		}
	})
	t.Run("BudgetInSecondTurn", func(t *testing.T) {
		t.Parallel()
		e := a.Prepare(t, Setup{})
		// The first turn costs a fraction of a cent; the second's big usage
		// dollars: the session's --max-cost is crossed in turn 2.
		r := e.StartSession(t, budget.Limits{IdleTimeout: time.Minute, MaxCostUSD: 0.5})
		if tf := r.Turn("cheap MOCK_TEXT", nil); !tf.OK {
			t.Fatalf("turn 1: %+v, want ok under the budget", tf)
		}
		pid := r.PID()
		tf := r.Turn("expensive "+string(mockllm.BigUsage), nil)
		if tf.OK || tf.Error == nil || tf.Error.Bin != events.BinBudgetExceeded || tf.Error.Reason != events.ReasonCost {
			t.Errorf("turn 2: %+v, want budget_exceeded/cost", tf)
		}
		for _, err := range collect(r.S.Send(t.Context(), "one more MOCK_TEXT")) {
			if err == nil {
				t.Errorf("a turn after the session's budget ran out was accepted")
			}
		}
		fin := r.Close()
		if fin.OK || fin.Error == nil || fin.Error.Bin != events.BinBudgetExceeded {
			t.Errorf("run.finished %+v, want budget_exceeded", fin.Error)
		}
		if pid != 0 && alive(pid) {
			t.Errorf("agent pid %d alive after the budget stop", pid)
		}
	})
}

// sessionChildEnv, in the environment of this test binary run again by
// hubKilled, holds the session the child is to start (childConfig, JSON).
const sessionChildEnv = "HUBTEST_SESSION_CHILD"

// childConfig is what the child of hubKilled runs: a's CLI in the parent's
// Env, against the parent's mock server.
type childConfig struct {
	Bin, Work string
	Env       []string
}

// childReady is the line the child prints once its session's first turn
// ended, with the agent's pid.
const childReady = "HUBTEST-SESSION-READY "

// hubKilled runs this test binary again as a child that holds a live
// session (sessionChild), SIGKILLs it once the session's first turn is
// over, and checks that every process of the session is gone within the
// grace period and hub.StopWait (the guard sees its parent die and stops
// the tree), with twice that as the margin of a busy machine.
func hubKilled(t *testing.T, a Agent) {
	e := a.Prepare(t, Setup{})
	cfg, err := json.Marshal(childConfig{Bin: Bin(t, a.Name), Work: e.Work, Env: e.Env})
	if err != nil {
		t.Fatal(err)
	}
	var run []string
	for _, part := range strings.Split(t.Name(), "/") {
		run = append(run, "^"+regexp.QuoteMeta(part)+"$")
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(run, "/"), "-test.v", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), sessionChildEnv+"="+string(cfg))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var log, stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	agentPID := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		log.WriteString(line + "\n")
		if rest, ok := strings.CutPrefix(line, childReady); ok {
			agentPID, _ = strconv.Atoi(strings.TrimSpace(rest))
			break
		}
	}
	if agentPID == 0 || !alive(agentPID) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the child's session did not get through its first turn:\n%s\n%s", log.String(), stderr.String())
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed := time.Now()
	bound := 2 * (budget.Limits{}.GraceOrDefault() + hub.StopWait)
	for left := Leftovers(e.Dir); len(left) > 0; left = Leftovers(e.Dir) {
		if time.Since(killed) > bound {
			t.Fatalf("processes of the session still alive %s after hub was SIGKILLed: %v (agent pid %d)", bound, left, agentPID)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sessionChild is the child of hubKilled: it starts the session cfg says,
// takes one turn, prints childReady and the agent's pid, and waits to be
// killed.
func sessionChild(t *testing.T, a Agent, cfg string) {
	var c childConfig
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		t.Fatal(err)
	}
	req := hub.Request{Agent: a.Name, Model: a.Model, Bin: c.Bin, Cwd: c.Work, Env: c.Env,
		Limits: budget.Limits{Timeout: 5 * time.Minute, Linger: 5 * time.Minute}}
	a.edit(&req)
	s, err := hub.NewSession(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	pid := 0
	for ev, err := range s.Send(t.Context(), "before the kill MOCK_TEXT") {
		if err != nil {
			t.Fatal(err)
		}
		if rs, ok := ev.Body.(events.RunStarted); ok && rs.PID != nil {
			pid = *rs.PID
		}
	}
	fmt.Printf("%s%d\n", childReady, pid)
	time.Sleep(5 * time.Minute) // until the parent SIGKILLs this process
}

// turnTimeout: with WithTurnTimeout, a stalled turn is interrupted at the
// limit (timeout/wall) and the session goes on in the same stream.
func turnTimeout(t *testing.T, a Agent) {
	e := a.Prepare(t, Setup{})
	// Long enough for the first turn, which includes the CLI's start.
	limit := a.IdleTimeout
	if limit == 0 {
		limit = 8 * time.Second
	}
	r := e.StartSession(t, budget.Limits{IdleTimeout: 5 * time.Minute}, hub.WithTurnTimeout(limit))
	if tf := r.Turn("quick MOCK_TEXT", nil); !tf.OK {
		t.Fatalf("turn 1: %+v", tf)
	}
	start := time.Now()
	tf := r.Turn("stalls "+string(mockllm.Stall), nil)
	took := time.Since(start)
	if tf.OK || !tf.Interrupted || tf.Error == nil || tf.Error.Bin != events.BinTimeout || tf.Error.Reason != events.ReasonWall {
		t.Errorf("stalled turn: %+v, want interrupted, timeout/wall", tf)
	}
	if took < limit {
		t.Errorf("the stalled turn ended after %s, before its limit %s", took, limit)
	}
	if tf := r.Turn("after the timeout MOCK_ANSWER goes-on", nil); !tf.OK || !strings.Contains(tf.Text, "goes-on") {
		t.Errorf("turn after the timed-out one: %+v, want ok: the session goes on", tf)
	}
	if n := r.Count(events.TypeRunStarted); n != 1 {
		t.Errorf("%d run.started, want 1 in the session's stream: the turn's timeout must not end the session", n)
	}
	if fin := r.Close(); !fin.OK {
		t.Errorf("run.finished %+v, want ok", fin.Error)
	}
}

// collect returns the errors of a sequence.
func collect(seq func(func(events.Event, error) bool)) []error {
	var errs []error
	seq(func(_ events.Event, err error) bool {
		errs = append(errs, err)
		return true
	})
	return errs
}

// ResumedSessions runs a's CLI, which cannot hold a live session through
// hub, as a session held by resuming (hub.NewSession's fallback): three
// turns, each a process of its own resuming the last, announced as mode
// "resume", the third model call carrying the earlier turns; and a turn
// cut at its time limit (its process stopped) with the session going on.
func ResumedSessions(t *testing.T, a Agent) {
	t.Run("TurnTimeout", func(t *testing.T) {
		t.Parallel()
		turnTimeout(t, a)
	})
	t.Run("ThreeTurns", func(t *testing.T) {
		t.Parallel()
		e := a.Prepare(t, Setup{})
		r := e.StartSession(t, budget.Limits{IdleTimeout: time.Minute})
		for i, p := range []string{"turn one MOCK_ANSWER first-answer", "turn two MOCK_ANSWER second-answer", "turn three MOCK_ANSWER third-answer"} {
			if tf := r.Turn(p, nil); !tf.OK || tf.Turn != int64(i+1) {
				t.Errorf("turn %d: turn.finished %+v, want ok", i+1, tf)
			}
		}
		if n := r.Count(events.TypeRunStarted); n != 1 {
			t.Errorf("%d run.started, want 1 in the session's stream", n)
		}
		for _, ev := range r.Events {
			if ss, ok := ev.Body.(events.SessionStarted); ok && ss.Mode != events.SessionResume {
				t.Errorf("session.started mode %q, want resume: hub must not claim a live session", ss.Mode)
			}
		}
		calls := ModelCalls(e.Server)
		if len(calls) < 3 {
			t.Fatalf("%d model calls, want 3", len(calls))
		}
		last := calls[len(calls)-1]
		if !strings.Contains(last.LastUserText, "turn three") || last.Answered < 2 {
			t.Errorf("the third turn's model call: last user text %q, %d answers: want turn three's prompt after the earlier answers (the session resumed)", last.LastUserText, last.Answered)
		}
		// Each turn's own usage, not the session's running total (Codex
		// reports the latter on a resume): the three turns are alike.
		var turns []events.TurnFinished
		for _, ev := range r.Events {
			if tf, ok := ev.Body.(events.TurnFinished); ok {
				turns = append(turns, tf)
			}
		}
		for _, tf := range turns[1:] {
			if tf.Usage.Output != turns[0].Usage.Output {
				t.Errorf("turn %d output tokens %d, turn 1's %d: a turn reports its own usage", tf.Turn, tf.Usage.Output, turns[0].Usage.Output)
			}
		}
		fin := r.Close()
		if !fin.OK || fin.SessionID == nil || !strings.Contains(fin.Text, "third-answer") {
			t.Errorf("run.finished ok=%v error=%+v session=%v text=%q, want ok with the session id and the last answer", fin.OK, fin.Error, fin.SessionID, fin.Text)
		}
	})
}

// SessionLatency measures, when HUB_BENCH_SESSION names a number of pairs
// (it skips otherwise: a measurement, not a check), the time from sending a
// follow-up prompt to the turn's first event from the agent (its first
// event after turn.started), in a live session (hub.NewSession) and in a
// fresh run resuming the same session (hub.Run with Resume: today's
// follow-up), alternated, and logs the medians and the CPU model.
//
//	HUB_BENCH_SESSION=10 go test -run TestSessionLatency -v ./adapters/claude ./adapters/pi
func SessionLatency(t *testing.T, a Agent) {
	n, _ := strconv.Atoi(os.Getenv("HUB_BENCH_SESSION"))
	if n <= 0 {
		t.Skip("a measurement: set HUB_BENCH_SESSION=<pairs>")
	}
	e := a.Prepare(t, Setup{})
	r := e.StartSession(t, budget.Limits{IdleTimeout: time.Minute})
	r.Turn("warm up MOCK_TEXT", nil)
	// The fresh runs resume a session of their own: Codex 0.169.0 refuses
	// to resume a thread its live app-server still writes ("thread … already
	// has an active writer").
	req := hub.Request{Agent: a.Name, Model: a.Model, Bin: Bin(t, a.Name), Cwd: e.Work, Env: slices.Clone(e.Env), Prompt: "warm up MOCK_TEXT"}
	a.edit(&req)
	fin := hub.Run(t.Context(), req, func(events.Event) error { return nil })
	if !fin.OK || fin.SessionID == nil {
		t.Fatalf("the run to resume: %+v", fin.Error)
	}
	sid := *fin.SessionID
	var live, resume []time.Duration
	for range n {
		var first time.Duration
		start := time.Now()
		r.Turn("follow-up MOCK_TEXT", func(ev events.Event) {
			switch ev.Body.(type) {
			case events.TurnStarted:
			default:
				if first == 0 {
					first = time.Since(start)
				}
			}
		})
		live = append(live, first)
		first = 0
		start = time.Now()
		req := hub.Request{Agent: a.Name, Model: a.Model, Bin: Bin(t, a.Name), Cwd: e.Work, Env: slices.Clone(e.Env),
			Prompt: "follow-up MOCK_TEXT", Resume: sid}
		a.edit(&req)
		fin = hub.Run(t.Context(), req, func(ev events.Event) error {
			switch ev.Body.(type) {
			case events.RunStarted, events.Notice:
			default:
				if first == 0 {
					first = time.Since(start)
				}
			}
			return nil
		})
		if !fin.OK {
			t.Fatalf("resumed run: %+v", fin.Error)
		}
		resume = append(resume, first)
	}
	med := func(d []time.Duration) time.Duration {
		s := slices.Clone(d)
		slices.Sort(s)
		return s[len(s)/2]
	}
	t.Logf("%s, %d pairs alternated, on %s: Send to the turn's first agent event: live session median %s (min %s, max %s); fresh run resuming the session: median %s (min %s, max %s)",
		a.Name, n, cpuModel(), med(live), slices.Min(live), slices.Max(live), med(resume), slices.Min(resume), slices.Max(resume))
}

// cpuModel is /proc/cpuinfo's first model name.
func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
