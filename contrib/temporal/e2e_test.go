package hubtemporal

// End-to-end tests: FanOut and hub.Run on a real Temporal server, with
// workers of this process and, for TestEndToEndWorkerKilled, one of a
// helper process (this test binary started again). They run only when
// HUB_TEMPORAL_ADDRESS names a server; scripts/temporal-test.sh starts a
// local one (temporal server start-dev) and runs them with
// HUB_REQUIRE_TEMPORAL=1, which turns the skip into a failure.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/mockllm"
)

// The variables of the end-to-end tests.
const (
	// addressEnv names the server (host:port of its frontend); unset, the
	// tests skip.
	addressEnv = "HUB_TEMPORAL_ADDRESS"
	// namespaceEnv is the namespace, "default" when unset.
	namespaceEnv = "HUB_TEMPORAL_NAMESPACE"
	// requireEnv, when set, fails the tests that would skip for want of a
	// server (scripts/temporal-test.sh, and so CI, sets it).
	requireEnv = "HUB_REQUIRE_TEMPORAL"
	// workerEnv makes the test binary a helper worker (see TestMain): its
	// value is the task queue to serve.
	workerEnv = "HUB_TEMPORAL_TEST_WORKER"
)

// The activity settings of the tests that stop a run: short enough that a
// dead worker's attempt times out, and a cancellation reaches the run, in
// seconds; long enough that a worker of a loaded machine does not miss a
// heartbeat (the activity records one every third of it).
const (
	e2eHeartbeat = 5 * time.Second
	e2eGrace     = time.Second
)

// TestMain runs the test binary as a helper worker when workerEnv says so
// (TestEndToEndWorkerKilled kills it mid-activity). hub's guard, which
// every run starts by re-executing this binary, needs nothing here: package
// internal/proc's init runs it before TestMain.
func TestMain(m *testing.M) {
	if queue := os.Getenv(workerEnv); queue != "" {
		os.Exit(helperWorker(queue))
	}
	os.Exit(m.Run())
}

// helperWorker serves hub.Run (activities only) on queue until it is
// killed. Its log goes to stderr, which the test keeps in a file.
func helperWorker(queue string) int {
	c, err := client.Dial(client.Options{HostPort: os.Getenv(addressEnv), Namespace: namespace()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper worker:", err)
		return 1
	}
	defer c.Close()
	w := worker.New(c, queue, worker.Options{DisableWorkflowWorker: true})
	registerActivity(w, &Activities{})
	if err := w.Run(worker.InterruptCh()); err != nil {
		fmt.Fprintln(os.Stderr, "helper worker:", err)
		return 1
	}
	return 0
}

// registerActivity registers a's Run as hub.Run alone, for a worker that
// runs no workflows (FanOut is registered by Register).
func registerActivity(w worker.Worker, a *Activities) {
	w.RegisterActivityWithOptions(a.Run, activity.RegisterOptions{Name: ActivityName})
}

func namespace() string {
	if ns := os.Getenv(namespaceEnv); ns != "" {
		return ns
	}
	return "default"
}

// dial returns a client of the server named by HUB_TEMPORAL_ADDRESS,
// closed when t ends, and a context for the test's waits on the server
// (see e2eContext). Without the variable it skips t, or fails it when
// HUB_REQUIRE_TEMPORAL is set.
func dial(t *testing.T) (client.Client, context.Context) {
	t.Helper()
	addr := os.Getenv(addressEnv)
	if addr == "" {
		msg := "set " + addressEnv + " to a Temporal server (e.g. localhost:7233), or run bash scripts/temporal-test.sh"
		if os.Getenv(requireEnv) != "" {
			t.Fatal(requireEnv + " is set but there is no server: " + msg)
		}
		t.Skip(msg)
	}
	ctx := e2eContext(t)
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: namespace(), Logger: quietLogger()})
	if err != nil {
		t.Fatalf("dial %s (namespace %s): %v", addr, namespace(), err)
	}
	t.Cleanup(c.Close)
	return c, ctx
}

// e2eContext is the bound of a test's waits on the server: a minute before
// the test binary's -timeout (a stuck wait then fails the test with its
// own message, and the cleanups run, instead of the binary panicking), or
// 10 minutes without one.
func e2eContext(t *testing.T) context.Context {
	t.Helper()
	end := time.Now().Add(10 * time.Minute)
	if dl, ok := t.Deadline(); ok {
		end = dl.Add(-time.Minute)
	}
	ctx, cancel := context.WithDeadline(t.Context(), end)
	t.Cleanup(cancel)
	return ctx
}

// left returns the time left before ctx's deadline.
func left(ctx context.Context) time.Duration {
	dl, _ := ctx.Deadline()
	return time.Until(dl)
}

// startWorker starts a worker of this process on queue with opts and a's
// activity (and FanOut unless opts disables workflows), stopped when t
// ends.
func startWorker(t *testing.T, c client.Client, queue string, opts worker.Options, a *Activities) {
	t.Helper()
	w := worker.New(c, queue, opts)
	if opts.DisableWorkflowWorker {
		registerActivity(w, a)
	} else {
		Register(w, a)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
}

// startFanOut starts FanOut(in) on queue, under an id of its own made from
// queue, and terminates it when t ends if it is still running (a failed
// test leaves nothing running on the server).
func startFanOut(t *testing.T, ctx context.Context, c client.Client, queue string, in FanOutInput) client.WorkflowRun {
	t.Helper()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: queue, TaskQueue: queue}, FanOutName, in)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.TerminateWorkflow(context.Background(), run.GetID(), run.GetRunID(), "the test ended")
	})
	return run
}

// queueName is a task queue (and workflow id) of t's own.
func queueName(t *testing.T) string {
	return fmt.Sprintf("hub-%s-%d", strings.ToLower(t.Name()), time.Now().UnixNano())
}

// TestEndToEnd runs FanOut with a worker of this process over a fake agent
// that answers and one that fails with a 401 (non-retryable: it ran once).
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	c, ctx := dial(t)
	queue := queueName(t)
	startWorker(t, c, queue, worker.Options{}, &Activities{})

	ok, auth := fakeAgent(t, okBody), fakeAgent(t, authBody)
	run := startFanOut(t, ctx, c, queue, FanOutInput{
		Task:   Request{Prompt: "fix it", Permission: "full", Limits: Limits{Timeout: time.Minute}},
		Agents: []Target{{Agent: "opencode", Bin: ok}, {Agent: "opencode", Bin: auth}},
	})
	var out FanOutResult
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("FanOut = %v", err)
	}
	if len(out.Results) != 2 || !out.Results[0].OK || out.Results[0].Finished == nil || out.Results[0].Finished.Text != "the answer" ||
		out.Results[1].OK || out.Results[1].ErrorType != "unavailable/auth" || out.Results[1].Finished == nil {
		t.Errorf("FanOut = %+v, want the answer, then unavailable/auth with its run.finished", out)
	}
	if n := runs(t, auth); n != 1 {
		t.Errorf("the auth failure ran %d times, want 1", n)
	}
}

// realAgent is a real agent CLI pointed at a mock model server of its own.
type realAgent struct {
	name string
	bin  string
	srv  *mockllm.Server
	dir  string   // its home and config: every process of its runs names it in its environment
	env  []string // what points it at srv (Target.Env)
}

// newRealAgent finds the real CLI name (hubtest.Bin: skipped when it
// is not installed, unless HUB_REQUIRE_REAL_CLIS is set), starts a mock
// server for it, and points it there with scripts/mock-env.sh, the shell
// form of the adapter tests' Configure (which adapters/<name>'s
// TestMockEnvScript holds equal to it).
func newRealAgent(t *testing.T, name string) realAgent {
	t.Helper()
	bin := hubtest.Bin(t, name)
	srv, err := mockllm.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	// The script's exports, evaluated by bash and printed back
	// NUL-separated, each NAME=value.
	cmd := exec.Command("bash", "-c", `out=$(bash "$0" "$@") || exit
eval "$out"
for k in $(sed -n 's/^export \([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p' <<<"$out"); do printf '%s=%s\0' "$k" "${!k}"; done`,
		hubtest.MockEnvScript(), name, srv.URL(), dir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", hubtest.MockEnvScript(), name, err, stderr.Bytes())
	}
	env := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(env) == 0 || !strings.HasPrefix(env[0], "HOME=") {
		t.Fatalf("mock-env.sh %s exported %q, want HOME first", name, env)
	}
	return realAgent{name: name, bin: bin, srv: srv, dir: dir, env: env}
}

// target is the fan-out target that runs a, with the mock model.
func (a realAgent) target() Target {
	return Target{Agent: a.name, Model: "mock/mock-model", Bin: a.bin, Env: a.env}
}

// unbounded is Limits for a real CLI's run: the time limits it does not
// test are the time the test has left (hubtest.Unbounded: a real CLI's
// start-up takes as long as the machine's load makes it), less a minute
// for the workflow's own end (e2eContext's margin).
func unbounded(t *testing.T) Limits {
	t.Helper()
	var l budget.Limits
	hubtest.Unbounded(t, &l)
	if l.Timeout > 0 {
		l.Timeout -= time.Minute
		if l.Timeout <= 0 {
			t.Fatal("no time left before the test's deadline to run the agent")
		}
		l.Linger, l.Finalize = l.Timeout, l.Timeout
	}
	return Limits{Timeout: l.Timeout, Linger: l.Linger, Finalize: l.Finalize}
}

// TestEndToEndRealAgents fans one task out over two real agent CLIs, pi
// and OpenCode, each against a mock model server of its own: both runs
// are ok with the mock model's answer, its usage (the mock's tokens at the
// prices the agent's config gives the model) and one model call each, and
// leave no process behind.
func TestEndToEndRealAgents(t *testing.T) {
	t.Parallel()
	c, ctx := dial(t)
	agents := []realAgent{newRealAgent(t, "pi"), newRealAgent(t, "opencode")}
	queue := queueName(t)
	startWorker(t, c, queue, worker.Options{}, &Activities{})

	const prompt = "Say hello. " + string(mockllm.Text)
	in := FanOutInput{Task: Request{Prompt: prompt, Cwd: t.TempDir(), Limits: unbounded(t)}}
	for _, a := range agents {
		in.Agents = append(in.Agents, a.target())
	}
	run := startFanOut(t, ctx, c, queue, in)
	var out FanOutResult
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("FanOut = %v", err)
	}
	if len(out.Results) != len(agents) {
		t.Fatalf("FanOut = %d results, want %d: %+v", len(out.Results), len(agents), out)
	}
	in0, out0, cached := int64(mockllm.PromptTokens-mockllm.CachedTokens), int64(mockllm.CompletionTokens), int64(mockllm.CachedTokens)
	for i, a := range agents {
		t.Run(a.name, func(t *testing.T) {
			r := out.Results[i]
			if !r.OK || r.Finished == nil || !r.Finished.OK {
				t.Fatalf("result = %+v (error %s), want ok", r, r.Error)
			}
			fin := r.Finished
			if r.Agent != a.name || r.Model != "mock/mock-model" {
				t.Errorf("result agent %q model %q, want %q mock/mock-model", r.Agent, r.Model, a.name)
			}
			if fin.Text != mockllm.TextAnswer {
				t.Errorf("text = %q, want the mock model's %q", fin.Text, mockllm.TextAnswer)
			}
			if fin.ExitCode == nil || *fin.ExitCode != 0 || fin.SessionID == nil || *fin.SessionID == "" {
				t.Errorf("exit code %v, session id %v: want 0 and a session", fin.ExitCode, fin.SessionID)
			}
			hubtest.CheckUsage(t, fin.Usage, hubtest.MockPrices, in0, out0, cached)
			want := hubtest.MockPrices.Cost(in0, out0, cached, 0)
			if fin.CostSource != events.CostReported || fin.CostUSD == nil || math.Abs(*fin.CostUSD-want) > 1e-9 {
				t.Errorf("run.finished cost = %v (%s), want %.6f reported", fin.CostUSD, fin.CostSource, want)
			}
			calls := hubtest.ModelCalls(a.srv)
			if len(calls) != 1 || calls[0].Scenario != mockllm.Text || !strings.Contains(calls[0].UserText, prompt) {
				t.Errorf("mock server got %d model calls (%+v), want 1 carrying the prompt", len(calls), calls)
			}
			if live := hubtest.Leftovers(a.dir); len(live) > 0 {
				t.Errorf("processes of the run still alive after the workflow ended: %v", live)
			}
		})
	}
}

// TestEndToEndNotRetried: a run that fails in a non-retryable bin (a real
// pi told 401 by the mock: unavailable/auth) is not retried, however many
// attempts the policy allows: one attempt, one model call, and FanOut's
// result carries the error's type and its run.finished.
func TestEndToEndNotRetried(t *testing.T) {
	t.Parallel()
	c, ctx := dial(t)
	pi := newRealAgent(t, "pi")
	queue := queueName(t)
	var attempts atomic.Int32
	startWorker(t, c, queue, worker.Options{}, &Activities{Options: func(Request) []hub.Option {
		attempts.Add(1)
		return nil
	}})

	run := startFanOut(t, ctx, c, queue, FanOutInput{
		Task:        Request{Prompt: "Say hello. " + string(mockllm.Unauthorized), Cwd: t.TempDir(), Limits: unbounded(t)},
		Agents:      []Target{pi.target()},
		MaxAttempts: 3,
	})
	var out FanOutResult
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("FanOut = %v", err)
	}
	r := out.Results[0]
	if r.OK || r.ErrorType != "unavailable/auth" || r.Finished == nil || r.Finished.Error == nil {
		t.Fatalf("result = %+v, want unavailable/auth with its run.finished", r)
	}
	if e := r.Finished.Error; e.Retryable || e.HTTPStatus == nil || *e.HTTPStatus != 401 {
		t.Errorf("run.finished error = %+v, want not retryable, HTTP 401", e)
	}
	if n := attempts.Load(); n != 1 {
		t.Errorf("%d attempts ran, want 1 (the policy allows 3; the bin is not retryable)", n)
	}
	if n := len(hubtest.ModelCalls(pi.srv)); n != 1 {
		t.Errorf("the mock server got %d model calls, want 1", n)
	}
}

// TestEndToEndCancel: cancelling the workflow reaches the running activity
// through a heartbeat; hub stops the agent's whole process group, the
// activity ends cancelled/caller (a canceled error carrying its
// run.finished), and FanOut returns the cancellation with it.
func TestEndToEndCancel(t *testing.T) {
	t.Parallel()
	c, ctx := dial(t)
	queue := queueName(t)
	startWorker(t, c, queue, worker.Options{}, &Activities{})

	dir := t.TempDir()
	pidFile, childFile := filepath.Join(dir, "pid"), filepath.Join(dir, "child")
	bin := fakeAgent(t, hangBody(pidFile, childFile))
	run := startFanOut(t, ctx, c, queue, FanOutInput{
		Task:             Request{Prompt: "hang", Limits: Limits{Grace: e2eGrace}},
		Agents:           []Target{{Agent: "opencode", Bin: bin}},
		HeartbeatTimeout: e2eHeartbeat,
	})
	pid, child := readPID(t, pidFile, left(ctx)), readPID(t, childFile, left(ctx))
	if err := c.CancelWorkflow(ctx, run.GetID(), run.GetRunID()); err != nil {
		t.Fatal(err)
	}
	cancelled := time.Now()
	var out FanOutResult
	err := run.Get(ctx, &out)
	took := time.Since(cancelled)

	// FanOut waits for the activity (WaitForCancellation), and the
	// activity for the agent's tree: it is gone once the workflow ended.
	waitGone(t, 0, pid, child)
	if live := liveInGroup(t, pid); len(live) > 0 {
		t.Errorf("the agent's process group %d still has %v", pid, live)
	}
	var canceled *temporal.CanceledError
	if !errors.As(err, &canceled) {
		t.Fatalf("FanOut(cancelled) = %v (%T), want a canceled error", err, err)
	}
	if !canceled.HasDetails() || canceled.Details(&out) != nil || len(out.Results) != 1 {
		t.Fatalf("FanOut(cancelled) details = %+v, want the fan-out's result", out)
	}
	r := out.Results[0]
	if r.OK || r.Finished == nil || r.Finished.Error == nil ||
		r.Finished.Error.Bin != events.BinCancelled || r.Finished.Error.Reason != events.ReasonCaller {
		t.Errorf("result = %+v, want the activity's run.finished cancelled/caller", r)
	}
	// The cancellation reaches the worker with the answer to a heartbeat
	// (one every third of the timeout, sent at most every 0.8 of it), then
	// hub stops the tree (the grace, then SIGKILL) and the workflow ends
	// (one more workflow task): well within two heartbeat timeouts, the
	// grace and hub's own stop bound.
	if max := 2*e2eHeartbeat + e2eGrace + hub.StopWait; took > max {
		t.Errorf("FanOut ended %v after the cancel, want within %v", took, max)
	}
}

// TestEndToEndWorkerKilled: a worker process SIGKILLed mid-activity. The
// first attempt runs in a helper worker (this binary started again, which
// serves activities only; workflows run in this process); once its agent
// and the agent's child are running, a worker of this process starts and
// the helper is killed. hub's guard sees its parent gone and stops the
// agent's tree; the attempt's heartbeats stop, Temporal times it out after
// the heartbeat timeout and retries it on this process's worker, whose
// second run of the agent answers.
func TestEndToEndWorkerKilled(t *testing.T) {
	t.Parallel()
	c, ctx := dial(t)
	queue := queueName(t)
	startWorker(t, c, queue, worker.Options{LocalActivityWorkerOnly: true}, &Activities{})

	logFile := filepath.Join(t.TempDir(), "helper.log")
	helperLog, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer helperLog.Close()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	helper := exec.Command(self)
	helper.Env = append(os.Environ(), workerEnv+"="+queue)
	helper.Stdout, helper.Stderr = helperLog, helperLog
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var helperErr error
	helperDone := make(chan struct{})
	go func() { helperErr = helper.Wait(); close(helperDone) }()
	t.Cleanup(func() {
		_ = helper.Process.Kill()
		<-helperDone
		if t.Failed() {
			b, _ := os.ReadFile(logFile)
			t.Logf("helper worker's log:\n%s", b)
		}
	})

	dir := t.TempDir()
	pidFile, childFile := filepath.Join(dir, "pid"), filepath.Join(dir, "child")
	bin := fakeAgent(t, firstThenBody(hangBody(pidFile, childFile), okBody))
	run := startFanOut(t, ctx, c, queue, FanOutInput{
		Task:             Request{Prompt: "fix it", Permission: "full", Limits: Limits{Grace: e2eGrace}},
		Agents:           []Target{{Agent: "opencode", Bin: bin}},
		HeartbeatTimeout: e2eHeartbeat,
		MaxAttempts:      3,
	})
	pid, child := readPID(t, pidFile, left(ctx)), readPID(t, childFile, left(ctx))
	// The first run is the helper's: the agent's parent is its guard, a
	// child of the helper.
	guard := parentOf(pid)
	if comm := commOf(guard); comm != "hub-guard" || parentOf(guard) != helper.Process.Pid {
		t.Fatalf("the agent's parent %d (%s) has parent %d, want a hub-guard below the helper worker %d",
			guard, comm, parentOf(guard), helper.Process.Pid)
	}

	hb := &heartbeats{}
	startWorker(t, c, queue, worker.Options{DisableWorkflowWorker: true, Interceptors: []interceptor.WorkerInterceptor{hb}}, &Activities{})
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-helperDone
	if helperErr == nil || !strings.Contains(helperErr.Error(), "killed") {
		t.Errorf("helper worker ended with %v, want killed", helperErr)
	}
	// The guard stops the tree as a limit would: SIGTERM, the grace, then
	// SIGKILL; within hub's own bound on a stop.
	waitGone(t, e2eGrace+hub.StopWait, pid, child)
	if live := liveInGroup(t, pid); len(live) > 0 {
		t.Errorf("the agent's process group %d still has %v", pid, live)
	}

	var out FanOutResult
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("FanOut = %v", err)
	}
	if r := out.Results[0]; !r.OK || r.Finished == nil || r.Finished.Text != "the answer" {
		t.Errorf("result = %+v, want the retried attempt's ok run.finished", r)
	}
	if n := runs(t, bin); n != 2 {
		t.Errorf("the agent ran %d times, want 2 (the killed attempt and its retry)", n)
	}
	got := hb.all()
	if len(got) == 0 {
		t.Fatal("this process's worker recorded no heartbeat: the retry did not run here")
	}
	for _, p := range got {
		if p.Attempt != 2 {
			t.Errorf("heartbeat %+v of this process's worker, want attempt 2", p)
			break
		}
	}
}

// parentOf returns pid's parent from /proc, 0 if unknown.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := bytes.LastIndexByte(b, ')')
	if err != nil || i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:])) // state ppid …
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// commOf returns pid's command name from /proc.
func commOf(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}
