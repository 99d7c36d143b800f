package acp_test

// Live sessions with an ACP agent (hub.NewSession: one connection,
// session/prompt again and again), against the fake ACP agent played by
// this test binary. Each session's stream is checked against the schema
// and, once it is closed, no process of it may be left.

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/hubtest/fakeacp"
)

// session is one live session with the fake agent, recorded.
type session struct {
	t      *testing.T
	f      *fake
	s      *hub.Session
	events []events.Event
	stream bytes.Buffer
	enc    *events.Encoder
	closed bool
}

// startSession starts a live session with the fake agent in f, whose
// scenario is each prompt's (or scenario, when not ""), with limits and
// the edits to the request.
func (f *fake) startSession(t *testing.T, scenario string, lim budget.Limits, edit ...func(*hub.Request)) *session {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if lim.Timeout == 0 {
		lim.Timeout = 5 * time.Minute // a net against a hang
	}
	if scenario == "" {
		scenario = "prompt"
	}
	req := hub.Request{Agent: "acp", Bin: exe, Cwd: f.work, Limits: lim,
		Env: append(f.env, fakeacp.EnvScenario+"="+scenario, "GORACE=atexit_sleep_ms=0")}
	for _, e := range edit {
		e(&req)
	}
	s, err := hub.NewSession(t.Context(), req)
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	r := &session{t: t, f: f, s: s}
	r.enc = events.NewEncoder(&r.stream)
	t.Cleanup(func() {
		if !r.closed {
			r.close()
		}
		if t.Failed() {
			t.Logf("session events:\n%s", r.stream.Bytes())
		}
	})
	return r
}

// turn sends prompt and reads its events to its turn.finished, giving each
// to onEvent (if not nil) as it comes.
func (r *session) turn(prompt string, onEvent func(events.Event)) events.TurnFinished {
	r.t.Helper()
	var tf *events.TurnFinished
	for ev, err := range r.s.Send(r.t.Context(), prompt) {
		if err != nil {
			r.t.Fatalf("Send(%q): %v", prompt, err)
		}
		r.events = append(r.events, ev)
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

// close closes the session, checks its stream and that nothing of it runs,
// and returns its run.finished.
func (r *session) close() events.RunFinished {
	r.t.Helper()
	r.closed = true
	fin := r.s.Close()
	ev, _ := r.s.Finished()
	r.events = append(r.events, ev)
	_ = r.enc.Encode(ev)
	if err := hubtest.ValidateStream(r.stream.Bytes()); err != nil {
		r.t.Errorf("session stream invalid: %v", err)
	}
	if left := hubtest.Leftovers(r.f.dir); len(left) > 0 {
		r.t.Errorf("processes of the session alive after Close: %v", left)
	}
	return fin
}

// pid is the agent's pid from run.started.
func (r *session) pid() int {
	for _, ev := range r.events {
		if rs, ok := ev.Body.(events.RunStarted); ok && rs.PID != nil {
			return *rs.PID
		}
	}
	return 0
}

func (r *session) count(typ events.Type) int {
	n := 0
	for _, ev := range r.events {
		if ev.Body.Type() == typ {
			n++
		}
	}
	return n
}

// alive reports whether pid runs (and is no zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// TestSessionThreeTurns: three prompts in one agent process (the pid of
// run.started alive after each turn, one run.started and one
// session.started marked live), the agent seeing the earlier prompts on
// the same connection, each turn with its own usage and cost (the fake
// reports the session's cost, $0.0125 a turn, as ACP does), and the
// session's totals in run.finished.
func TestSessionThreeTurns(t *testing.T) {
	t.Parallel()
	r := newFake(t).startSession(t, "", budget.Limits{})
	prompts := []string{"text one", "text two", "recall three"}
	var pids []int
	var turns []events.TurnFinished
	for i, p := range prompts {
		tf := r.turn(p, nil)
		if !tf.OK || tf.Turn != int64(i+1) {
			t.Fatalf("turn %d: %+v, want ok", i+1, tf)
		}
		turns = append(turns, tf)
		if pid := r.pid(); pid == 0 || !alive(pid) {
			t.Errorf("after turn %d the agent (pid %d) is not running", i+1, pid)
		} else {
			pids = append(pids, pid)
		}
	}
	if want := "earlier: text one | text two"; turns[2].Text != want {
		t.Errorf("third turn's answer %q, want %q: the agent saw the earlier prompts on its connection", turns[2].Text, want)
	}
	for _, tf := range turns {
		if tf.Usage.Input != 800 || tf.Usage.Output != 50 || tf.CostUSD == nil || *tf.CostUSD < 0.0124 || *tf.CostUSD > 0.0126 || tf.CostSource != events.CostReported {
			t.Errorf("turn %d: usage %+v cost %v %s, want 800 in, 50 out, $0.0125 reported (its own, not the session's)", tf.Turn, tf.Usage, tf.CostUSD, tf.CostSource)
		}
	}
	if n := r.count(events.TypeRunStarted); n != 1 {
		t.Errorf("%d run.started, want 1", n)
	}
	for _, ev := range r.events {
		if ss, ok := ev.Body.(events.SessionStarted); ok && (ss.Mode != events.SessionLive || ss.SessionID != "fake-session") {
			t.Errorf("session.started %+v, want mode live, session fake-session", ss)
		}
	}
	if n := r.count(events.TypeSessionStarted); n != 1 {
		t.Errorf("%d session.started, want 1", n)
	}
	fin := r.close()
	if !fin.OK || fin.Text != turns[2].Text || fin.SessionID == nil || *fin.SessionID != "fake-session" {
		t.Errorf("run.finished %+v, want ok with the last answer and the session", fin)
	}
	if fin.CostUSD == nil || *fin.CostUSD < 0.0374 || *fin.CostUSD > 0.0376 || fin.Usage.Input != 3*800 {
		t.Errorf("run.finished usage %+v cost %v, want the three turns' (2400 in, $0.0375)", fin.Usage, fin.CostUSD)
	}
	for _, pid := range pids {
		if pid != pids[0] {
			t.Errorf("pid changed between turns: %v", pids)
		}
	}
	if alive(pids[0]) {
		t.Errorf("agent pid %d alive after Close", pids[0])
	}
}

// TestSessionInterrupt: Interrupt sends session/cancel for the running
// prompt (the fake answers it cancelled only on a session/cancel); the turn
// ends interrupted, cancelled/caller, and the next turn goes on in the
// same process. An interrupt with every turn over does nothing.
func TestSessionInterrupt(t *testing.T) {
	t.Parallel()
	r := newFake(t).startSession(t, "", budget.Limits{})
	asked := false
	tf := r.turn("stall", func(ev events.Event) {
		if _, ok := ev.Body.(events.TextDelta); ok && !asked {
			asked = true
			if err := r.s.Interrupt(); err != nil {
				t.Errorf("Interrupt: %v", err)
			}
		}
	})
	if tf.OK || !tf.Interrupted || tf.Error == nil || tf.Error.Bin != events.BinCancelled || tf.Error.Reason != events.ReasonCaller {
		t.Errorf("interrupted turn: %+v, want interrupted, cancelled/caller", tf)
	}
	pid := r.pid()
	if err := r.s.Interrupt(); err != nil {
		t.Errorf("Interrupt between turns: %v", err)
	}
	if tf := r.turn("text", nil); !tf.OK || tf.Text != fakeacp.Answer {
		t.Errorf("turn after the interrupt: %+v, want ok", tf)
	}
	if r.pid() != pid || !alive(pid) || r.count(events.TypeRunStarted) != 1 {
		t.Errorf("the interrupt restarted the agent")
	}
	if fin := r.close(); !fin.OK {
		t.Errorf("run.finished %+v, want ok", fin.Error)
	}
}

// TestSessionTurnTimeout: a turn over its WithTurnTimeout is interrupted
// with session/cancel (timeout/wall), and the session goes on.
func TestSessionTurnTimeout(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	exe, _ := os.Executable()
	const limit = 2 * time.Second
	s, err := hub.NewSession(t.Context(), hub.Request{Agent: "acp", Bin: exe, Cwd: f.work, Limits: budget.Limits{Timeout: 5 * time.Minute},
		Env: append(f.env, fakeacp.EnvScenario+"=prompt")}, hub.WithTurnTimeout(limit))
	if err != nil {
		t.Fatal(err)
	}
	r := &session{t: t, f: f, s: s}
	r.enc = events.NewEncoder(&r.stream)
	start := time.Now()
	tf := r.turn("hang", nil)
	if took := time.Since(start); took < limit || !tf.Interrupted || tf.Error == nil || tf.Error.Bin != events.BinTimeout || tf.Error.Reason != events.ReasonWall {
		t.Errorf("hung turn after %s: %+v, want interrupted at %s, timeout/wall", took, tf, limit)
	}
	if tf := r.turn("text", nil); !tf.OK {
		t.Errorf("turn after the timed-out one: %+v", tf)
	}
	if fin := r.close(); !fin.OK {
		t.Errorf("run.finished %+v, want ok", fin.Error)
	}
}

// TestSessionBudgetInSecondTurn: the second turn's cost crosses the
// session's --max-cost (two turns of $0.0125 against $0.02): the turn
// ends budget_exceeded/cost, though its usage comes in the very line that
// ends it (the prompt's answer), and the session is over.
func TestSessionBudgetInSecondTurn(t *testing.T) {
	t.Parallel()
	r := newFake(t).startSession(t, "", budget.Limits{MaxCostUSD: 0.02})
	if tf := r.turn("text", nil); !tf.OK {
		t.Fatalf("turn 1: %+v, want ok under the budget", tf)
	}
	pid := r.pid()
	tf := r.turn("text again", nil)
	if tf.OK || tf.Error == nil || tf.Error.Bin != events.BinBudgetExceeded || tf.Error.Reason != events.ReasonCost {
		t.Errorf("turn 2: %+v, want budget_exceeded/cost", tf)
	}
	for ev, err := range r.s.Send(t.Context(), "text once more") {
		if err == nil {
			t.Errorf("a turn after the budget ran out was taken: %+v", ev)
			break
		}
	}
	fin := r.close()
	if fin.OK || fin.Error == nil || fin.Error.Bin != events.BinBudgetExceeded {
		t.Errorf("run.finished %+v, want budget_exceeded", fin.Error)
	}
	if alive(pid) {
		t.Errorf("agent pid %d alive after the budget stop", pid)
	}
}

// TestSessionSetupFails: an agent that refuses session/new
// (auth_required) takes no turn: the first turn ends with its error
// (unavailable/auth), and so does the session, its process gone.
func TestSessionSetupFails(t *testing.T) {
	t.Parallel()
	r := newFake(t).startSession(t, "auth", budget.Limits{})
	tf := r.turn("text", nil)
	if tf.OK || tf.Error == nil || tf.Error.Bin != events.BinUnavailable || tf.Error.Reason != events.ReasonAuth {
		t.Errorf("turn.finished %+v, want unavailable/auth", tf)
	}
	fin := r.close()
	if fin.OK || fin.Error == nil || fin.Error.Bin != events.BinUnavailable || fin.Error.Reason != events.ReasonAuth {
		t.Errorf("run.finished %+v, want unavailable/auth", fin.Error)
	}
}

// TestSessionAgentDies: an agent that dies in a turn ends it (agent_failed,
// from its exit and stderr) and the session; one killed between turns ends
// the session, and the next Send is refused or fails.
func TestSessionAgentDies(t *testing.T) {
	t.Parallel()
	t.Run("in a turn", func(t *testing.T) {
		t.Parallel()
		r := newFake(t).startSession(t, "", budget.Limits{})
		if tf := r.turn("text", nil); !tf.OK {
			t.Fatalf("turn 1: %+v", tf)
		}
		tf := r.turn("crash", nil)
		if tf.OK || tf.Error == nil || tf.Error.Bin != events.BinAgentFailed {
			t.Errorf("turn.finished %+v, want agent_failed", tf)
		}
		if fin := r.close(); fin.OK {
			t.Errorf("run.finished ok after the agent crashed")
		}
	})
	t.Run("between turns", func(t *testing.T) {
		t.Parallel()
		r := newFake(t).startSession(t, "", budget.Limits{})
		if tf := r.turn("text", nil); !tf.OK {
			t.Fatalf("turn 1: %+v", tf)
		}
		if err := syscall.Kill(r.pid(), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for ev, err := range r.s.Send(t.Context(), "text") {
			if err != nil && !errors.Is(err, hub.ErrSessionClosed) {
				t.Errorf("Send after the agent died: %v", err)
			}
			if err == nil {
				r.events = append(r.events, ev)
				_ = r.enc.Encode(ev)
			}
			if tf, ok := ev.Body.(events.TurnFinished); ok && tf.OK {
				t.Errorf("a turn of a dead agent ended ok")
			}
		}
		if fin := r.close(); fin.OK {
			t.Errorf("run.finished ok after the agent was killed")
		}
	})
}

// TestSessionPermissions: the agent's permission requests in a session are
// answered from the grant as in a one-shot run, turn after turn: a write
// outside the grant is rejected (the disk shows none), one inside it under
// workspace-write is allowed; an interrupted turn's request is cancelled.
func TestSessionPermissions(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	inside := filepath.Join(f.work, "inside.txt")
	r := f.startSession(t, "", budget.Limits{}, perm(grant.ReadOnly))
	if tf := r.turn("text", nil); !tf.OK {
		t.Fatalf("turn 1: %+v", tf)
	}
	r.turn("write: "+inside, nil)
	if _, err := os.Stat(inside); err == nil {
		t.Errorf("read-only session: the write was allowed")
	}
	denied := 0
	for _, ev := range r.events {
		if tf, ok := ev.Body.(events.ToolFinished); ok && tf.Status == events.ToolDenied {
			denied++
		}
	}
	if denied != 1 {
		t.Errorf("%d tool calls denied, want the write's", denied)
	}
	if tf := r.turn("text", nil); !tf.OK {
		t.Errorf("turn after the denied one: %+v", tf)
	}
	if fin := r.close(); fin.ToolCallsDenied != 1 {
		t.Errorf("run.finished tool_calls_denied %d, want 1", fin.ToolCallsDenied)
	}

	r = f.startSession(t, "", budget.Limits{}, perm(grant.WorkspaceWrite))
	if tf := r.turn("text", nil); !tf.OK {
		t.Fatalf("turn 1: %+v", tf)
	}
	if tf := r.turn("write: "+inside, nil); !tf.OK {
		t.Errorf("workspace-write session, write inside: %+v", tf)
	}
	if b, err := os.ReadFile(inside); err != nil || string(b) != "written by fake acp\n" {
		t.Errorf("the allowed write: %q, %v", b, err)
	}
	r.close()
}
