package hubtemporal

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/hubcli/hub/events"
)

// heartbeats records every heartbeat an activity records, through a worker
// interceptor: the test environment's heartbeat listener sees only those
// the SDK's throttle lets through to the server.
type heartbeats struct {
	interceptor.WorkerInterceptorBase
	mu  sync.Mutex
	got []Progress
}

func (h *heartbeats) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &hbInbound{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, h: h}
}

func (h *heartbeats) all() []Progress {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Progress(nil), h.got...)
}

type hbInbound struct {
	interceptor.ActivityInboundInterceptorBase
	h *heartbeats
}

func (i *hbInbound) Init(outbound interceptor.ActivityOutboundInterceptor) error {
	return i.Next.Init(&hbOutbound{ActivityOutboundInterceptorBase: interceptor.ActivityOutboundInterceptorBase{Next: outbound}, h: i.h})
}

type hbOutbound struct {
	interceptor.ActivityOutboundInterceptorBase
	h *heartbeats
}

func (o *hbOutbound) RecordHeartbeat(ctx context.Context, details ...any) {
	if len(details) == 1 {
		if p, ok := details[0].(Progress); ok {
			o.h.mu.Lock()
			o.h.got = append(o.h.got, p)
			o.h.mu.Unlock()
		}
	}
	o.Next.RecordHeartbeat(ctx, details...)
}

// activityEnv returns a test activity environment with hub's activity
// registered, whose activities' contexts derive from ctx, and the recorder
// of their heartbeats.
func activityEnv(t *testing.T, ctx context.Context, a *Activities) (*testsuite.TestActivityEnvironment, *heartbeats) {
	t.Helper()
	env := quietSuite().NewTestActivityEnvironment()
	hb := &heartbeats{}
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: ctx, Interceptors: []interceptor.WorkerInterceptor{hb}})
	env.SetTestTimeout(time.Minute)
	if a == nil {
		a = &Activities{}
	}
	env.RegisterActivity(a.Run)
	return env, hb
}

func TestRunOK(t *testing.T) {
	t.Parallel()
	env, hb := activityEnv(t, context.Background(), nil)
	var listened sync.Mutex
	var sent []Progress
	env.SetOnActivityHeartbeatListener(func(_ *activity.Info, d converter.EncodedValues) {
		var p Progress
		if err := d.Get(&p); err == nil {
			listened.Lock()
			sent = append(sent, p)
			listened.Unlock()
		}
	})
	bin := fakeAgent(t, okBody)
	val, err := env.ExecuteActivity((&Activities{}).Run, Request{Agent: "opencode", Prompt: "hi", Bin: bin, Permission: "full"})
	if err != nil {
		t.Fatalf("Run(ok) = %v, want no error", err)
	}
	var fin events.RunFinished
	if err := val.Get(&fin); err != nil {
		t.Fatal(err)
	}
	if !fin.OK || fin.Text != "the answer" || fin.Usage.Sum() != 12 || fin.CostUSD == nil || *fin.CostUSD != 0.003 {
		t.Errorf("Run(ok) = %+v, want ok, \"the answer\", 12 tokens, $0.003", fin)
	}

	got := hb.all()
	if len(got) == 0 {
		t.Fatal("no heartbeat recorded")
	}
	var sawTool, sawStep bool
	last := int64(-1)
	for _, p := range got {
		if p.RunID == "" || p.Agent != "opencode" || p.Attempt != 1 || p.PID == 0 {
			t.Errorf("heartbeat %+v: want a run id, agent opencode, attempt 1 and the agent's pid", p)
		}
		if p.Seq < last {
			t.Errorf("heartbeat seq %d after %d: want it never to go back", p.Seq, last)
		}
		last = p.Seq
		if p.Tool == "bash" && p.ToolCalls == 1 {
			sawTool = true
		}
		if p.Tokens == 7 && p.CostUSD != nil && *p.CostUSD == 0.001 && p.Turns == 1 {
			sawStep = true
		}
	}
	if fin := got[len(got)-1]; fin.Tokens != 12 || fin.CostUSD == nil || *fin.CostUSD != 0.003 || fin.Tool != "" || fin.SessionID != "ses_x" {
		t.Errorf("last heartbeat = %+v, want 12 tokens, $0.003, no tool running, session ses_x", fin)
	}
	if !sawTool || !sawStep {
		t.Errorf("heartbeats %+v: want one with tool bash running and one after the first step (7 tokens, $0.001)", got)
	}
	listened.Lock()
	defer listened.Unlock()
	if len(sent) == 0 || sent[0].RunID != got[0].RunID {
		t.Errorf("heartbeats sent to the server = %+v, want at least the first, of run %s", sent, got[0].RunID)
	}
}

// TestRunCancelled: cancelling the activity's context stops the agent and
// its child (the whole process group), and the activity reports a
// cancellation carrying run.finished cancelled/caller.
func TestRunCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, hb := activityEnv(t, ctx, nil)
	dir := t.TempDir()
	pidFile, childFile := filepath.Join(dir, "pid"), filepath.Join(dir, "child")
	bin := fakeAgent(t, hangBody(pidFile, childFile))

	go func() {
		readPID(t, childFile, 30*time.Second)
		cancel()
	}()
	start := time.Now()
	_, err := env.ExecuteActivity((&Activities{}).Run, Request{Agent: "opencode", Prompt: "hang", Bin: bin,
		Limits: Limits{Grace: time.Second}})
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("Run took %v after the cancel, want it to stop within the grace", d)
	}
	var canceled *temporal.CanceledError
	if !errors.As(err, &canceled) {
		t.Fatalf("Run(cancelled) = %v (%T), want a *temporal.CanceledError", err, err)
	}
	var fin events.RunFinished
	if !canceled.HasDetails() || canceled.Details(&fin) != nil || fin.Error == nil ||
		fin.Error.Bin != events.BinCancelled || fin.Error.Reason != events.ReasonCaller {
		t.Errorf("Run(cancelled) details = %+v, want run.finished cancelled/caller", fin)
	}
	pid, child := readPID(t, pidFile, 0), readPID(t, childFile, 0)
	waitGone(t, 0, pid, child)
	if live := liveInGroup(t, pid); len(live) > 0 {
		t.Errorf("the agent's process group %d still has %v", pid, live)
	}
	if got := hb.all(); len(got) == 0 || got[0].PID != pid {
		t.Errorf("heartbeats = %+v, want the first to carry the agent's pid %d", got, pid)
	}
}

// TestRunErrors: a failed run is an application error of type
// "<bin>/<reason>", non-retryable unless hub says it is retryable, with
// retry_after_s as the next retry delay and run.finished as its details.
func TestRunErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		req       Request
		wantType  string
		wantRetry bool
		wantDelay time.Duration
	}{
		{"auth", Request{Bin: fakeAgent(t, authBody)}, "unavailable/auth", false, 0},
		{"rate limit", Request{Bin: fakeAgent(t, rateLimitBody)}, "unavailable/rate_limit", true, 30 * time.Second},
		{"not installed", Request{Bin: filepath.Join(t.TempDir(), "opencode")}, "not_installed/not_found", false, 0},
		{"bad permission", Request{Bin: fakeAgent(t, okBody), Permission: "most"}, "invalid_input/bad_request", false, 0},
		{"bad prices file", Request{Bin: fakeAgent(t, okBody), PricesFile: "/nonexistent/prices.json"}, "invalid_input/bad_request", false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env, _ := activityEnv(t, context.Background(), nil)
			req := tt.req
			req.Agent, req.Prompt = "opencode", "hi"
			_, err := env.ExecuteActivity((&Activities{}).Run, req)
			var app *temporal.ApplicationError
			if !errors.As(err, &app) {
				t.Fatalf("Run(%s) = %v (%T), want a *temporal.ApplicationError", tt.name, err, err)
			}
			if app.Type() != tt.wantType || app.NonRetryable() == tt.wantRetry || app.NextRetryDelay() != tt.wantDelay {
				t.Errorf("Run(%s) = type %q, non-retryable %v, next retry delay %v; want %q, %v, %v",
					tt.name, app.Type(), app.NonRetryable(), app.NextRetryDelay(), tt.wantType, !tt.wantRetry, tt.wantDelay)
			}
			var fin events.RunFinished
			if err := app.Details(&fin); err != nil || fin.OK || fin.Error == nil || ErrorType(fin.Error) != tt.wantType {
				t.Errorf("Run(%s) details = %+v (%v), want its run.finished", tt.name, fin, err)
			}
		})
	}
}

// TestErrorOf covers the mapping table of the README, one row per rule.
func TestErrorOf(t *testing.T) {
	t.Parallel()
	after := 2.5
	tests := []struct {
		e         *events.Error
		wantType  string
		wantRetry bool
		wantDelay time.Duration
	}{
		{events.NewError(events.BinUnavailable, events.ReasonRateLimit, "", "429").WithRetryAfter(after), "unavailable/rate_limit", true, 2500 * time.Millisecond},
		{events.NewError(events.BinUnavailable, events.ReasonOverloaded, "", "529"), "unavailable/overloaded", true, 0},
		{events.NewError(events.BinUnavailable, events.ReasonServer, "", "500"), "unavailable/server", true, 0},
		{events.NewError(events.BinUnavailable, events.ReasonNetwork, "", "reset"), "unavailable/network", true, 0},
		{events.NewError(events.BinTimeout, events.ReasonIdle, "", "idle"), "timeout/idle", true, 0},
		{events.NewError(events.BinTimeout, events.ReasonWall, "", "wall"), "timeout/wall", false, 0},
		{events.NewError(events.BinUnavailable, events.ReasonAuth, "", "401"), "unavailable/auth", false, 0},
		{events.NewError(events.BinUnavailable, events.ReasonQuota, "", "402"), "unavailable/quota", false, 0},
		{events.NewError(events.BinBudgetExceeded, events.ReasonCost, "", "$"), "budget_exceeded/cost", false, 0},
		{events.NewError(events.BinInternal, "", "", "bug"), "internal", false, 0},
		{nil, "internal", false, 0},
	}
	for _, tt := range tests {
		err := ErrorOf(events.RunFinished{Error: tt.e})
		var app *temporal.ApplicationError
		if !errors.As(err, &app) {
			t.Fatalf("ErrorOf(%v) = %T, want *temporal.ApplicationError", tt.e, err)
		}
		if app.Type() != tt.wantType || app.NonRetryable() == tt.wantRetry || app.NextRetryDelay() != tt.wantDelay {
			t.Errorf("ErrorOf(%v) = %q, non-retryable %v, delay %v; want %q, %v, %v",
				tt.e, app.Type(), app.NonRetryable(), app.NextRetryDelay(), tt.wantType, !tt.wantRetry, tt.wantDelay)
		}
	}
	if err := ErrorOf(events.RunFinished{OK: true}); err != nil {
		t.Errorf("ErrorOf(ok) = %v, want nil", err)
	}
}
