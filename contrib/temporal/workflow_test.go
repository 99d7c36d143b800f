package hubtemporal

import (
	stdcontext "context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
)

// quietSuite returns a test suite whose environments log nothing: the
// SDK's debug lines and the activities' expected errors would drown the
// tests' own output.
func quietSuite() *testsuite.WorkflowTestSuite {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger())
	return &s
}

// quietLogger is a Temporal logger that writes nothing.
func quietLogger() log.Logger {
	return log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// workflowEnv returns a test workflow environment with hub's activity and
// FanOut registered, its log discarded.
func workflowEnv(t *testing.T) *testsuite.TestWorkflowEnvironment {
	t.Helper()
	env := quietSuite().NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute)
	Register(env, &Activities{})
	return env
}

// TestFanOut: one task over four agents, run at once; the workflow
// collects two run.finisheds and two errors, and the non-retryable auth
// failure ran once.
func TestFanOut(t *testing.T) {
	t.Parallel()
	env := workflowEnv(t)
	okA, okB, auth := fakeAgent(t, okBody), fakeAgent(t, okBody), fakeAgent(t, authBody)
	var started atomic.Int32
	env.SetOnActivityStartedListener(func(*activity.Info, stdcontext.Context, converter.EncodedValues) { started.Add(1) })
	in := FanOutInput{
		Task: Request{Prompt: "fix it", Permission: "full", Limits: Limits{Timeout: time.Minute}},
		Agents: []Target{
			{Agent: "opencode", Bin: okA, Model: "mock/a"},
			{Agent: "opencode", Bin: okB, Model: "mock/b"},
			{Agent: "opencode", Bin: auth},
			{Agent: "codex", Bin: filepath.Join(t.TempDir(), "codex")},
		},
	}
	env.ExecuteWorkflow(FanOutName, in)
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("FanOut = %v, want no error", err)
	}
	var out FanOutResult
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	if len(out.Results) != 4 {
		t.Fatalf("FanOut = %d results, want 4: %+v", len(out.Results), out)
	}
	for i, r := range out.Results[:2] {
		if !r.OK || r.Finished == nil || !r.Finished.OK || r.Finished.Text != "the answer" || r.Model != in.Agents[i].Model {
			t.Errorf("result %d = %+v, want ok with the answer, model %s", i, r, in.Agents[i].Model)
		}
	}
	for i, want := range map[int]string{2: "unavailable/auth", 3: "not_installed/not_found"} {
		r := out.Results[i]
		if r.OK || r.ErrorType != want || r.Finished == nil || r.Finished.Error == nil || ErrorType(r.Finished.Error) != want {
			t.Errorf("result %d = %+v, want error %s with its run.finished", i, r, want)
		}
	}
	if n := runs(t, auth); n != 1 {
		t.Errorf("the auth failure ran %d times, want 1 (non-retryable)", n)
	}
	if n := started.Load(); n != 4 {
		t.Errorf("%d activities started, want 4 (no retry)", n)
	}
}

// TestFanOutRetry: a rate limit with a retry-after of 30 s is retried
// after 30 s (the error's NextRetryDelay, not the policy's 10 s), and the
// second attempt's run.finished is the result.
func TestFanOutRetry(t *testing.T) {
	t.Parallel()
	env := workflowEnv(t)
	bin := fakeAgent(t, firstThenBody(rateLimitBody, okBody))
	var mu sync.Mutex
	var startedAt []time.Time
	env.SetOnActivityStartedListener(func(*activity.Info, stdcontext.Context, converter.EncodedValues) {
		mu.Lock()
		startedAt = append(startedAt, env.Now())
		mu.Unlock()
	})
	env.ExecuteWorkflow(FanOutName, FanOutInput{
		Task:   Request{Prompt: "fix it", Permission: "full"},
		Agents: []Target{{Agent: "opencode", Bin: bin}},
	})
	var out FanOutResult
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatalf("FanOut = %v, want no error", err)
	}
	if r := out.Results[0]; !r.OK || r.Finished == nil || r.Finished.Text != "the answer" {
		t.Errorf("result = %+v, want the second attempt's ok run.finished", r)
	}
	if n := runs(t, bin); n != 2 {
		t.Errorf("the agent ran %d times, want 2", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(startedAt) != 2 {
		t.Fatalf("%d attempts started, want 2", len(startedAt))
	}
	if d := startedAt[1].Sub(startedAt[0]); d < 30*time.Second || d > 40*time.Second {
		t.Errorf("the retry came %v after the first attempt, want the retry-after, 30s", d)
	}
}

// TestFanOutCancel: cancelling the workflow cancels its running activity;
// the cancellation reaches the activity through a heartbeat, and the
// agent's process tree stops.
func TestFanOutCancel(t *testing.T) {
	t.Parallel()
	env := workflowEnv(t)
	dir := t.TempDir()
	pidFile, childFile := filepath.Join(dir, "pid"), filepath.Join(dir, "child")
	bin := fakeAgent(t, hangBody(pidFile, childFile))
	// Once a heartbeat says the agent's session started (so the fake
	// wrote both pids), the workflow is cancelled.
	var sent atomic.Int32
	var once sync.Once
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, d converter.EncodedValues) {
		var p Progress
		if d.Get(&p) != nil || p.RunID == "" {
			return
		}
		sent.Add(1)
		if p.SessionID == "ses_hang" {
			once.Do(env.CancelWorkflow)
		}
	})
	env.ExecuteWorkflow(FanOutName, FanOutInput{
		Task:             Request{Prompt: "hang", Limits: Limits{Grace: time.Second}},
		Agents:           []Target{{Agent: "opencode", Bin: bin}},
		HeartbeatTimeout: time.Second,
	})
	var canceled *temporal.CanceledError
	if err := env.GetWorkflowError(); !errors.As(err, &canceled) {
		t.Errorf("FanOut(cancelled) = %v, want a canceled error", err)
	}
	pid, child := readPID(t, pidFile, 0), readPID(t, childFile, 0)
	// The test environment completes the cancelled workflow at once; the
	// activity learns of it at its next heartbeat (within the throttle,
	// 0.8 × HeartbeatTimeout) and stops the agent (within the grace).
	waitGone(t, 15*time.Second, pid, child)
	if live := liveInGroup(t, pid); len(live) > 0 {
		t.Errorf("the agent's process group %d still has %v", pid, live)
	}
	if sent.Load() == 0 {
		t.Error("no heartbeat with progress reached the (test) server, and so no cancellation was asked for")
	}
}
