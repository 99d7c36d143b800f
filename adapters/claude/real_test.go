package claude_test

// Contract tests: the real Claude Code CLI (pinned in
// scripts/install-agents.sh) run through hub against internal/mockllm's
// Anthropic Messages API, one scenario per test, offline.

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters"
	_ "github.com/hubcli/hub/adapters/claude"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/realcli"
	"github.com/hubcli/hub/mockllm"
)

type realRun struct {
	realcli.Result
	server *mockllm.Server
}

func (r realRun) notices(kind events.NoticeKind) int {
	n := 0
	for _, ev := range r.Events {
		if b, ok := ev.Body.(events.Notice); ok && b.Kind == kind {
			n++
		}
	}
	return n
}

// runReal runs the real claude on prompt through adapters.Run with its own
// mock server and home, and checks what every run must keep: a valid stream
// with one run.finished last, and no process of the run left alive.
func runReal(t *testing.T, prompt string, opts mockllm.Options, limits budget.Limits, extraEnv ...string) realRun {
	t.Helper()
	return runRealReq(t, prompt, opts, limits, func(req *adapters.Request) { req.Env = append(req.Env, extraEnv...) })
}

// runRealReq is runReal with edit applied to the request.
func runRealReq(t *testing.T, prompt string, opts mockllm.Options, limits budget.Limits, edit func(*adapters.Request)) realRun {
	t.Helper()
	bin := realcli.Bin(t, "claude")
	srv, err := mockllm.StartWith(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	dir, env := realcli.Home(t)
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	env = append(env, "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=x",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "IS_SANDBOX=1")
	if limits.Timeout == 0 {
		limits.Timeout = 2 * time.Minute
	}
	req := adapters.Request{Agent: "claude", Prompt: prompt, Bin: bin, Cwd: work, Env: env, Limits: limits}
	edit(&req)
	res := realRun{Result: realcli.Run(t, req, dir), server: srv}
	return res
}

func wantOK(t *testing.T, r realRun, text string) {
	t.Helper()
	if !r.Fin.OK {
		t.Fatalf("run.finished not ok: %v", r.Fin.Error)
	}
	if r.Fin.Text != text {
		t.Errorf("text = %q, want %q", r.Fin.Text, text)
	}
	if r.Fin.SessionID == nil || *r.Fin.SessionID == "" {
		t.Errorf("session_id = %v, want one", r.Fin.SessionID)
	}
	if r.Fin.CostSource != events.CostReported || r.Fin.CostUSD == nil || *r.Fin.CostUSD <= 0 {
		t.Errorf("cost = %v %s, want a reported cost", r.Fin.CostUSD, r.Fin.CostSource)
	}
}

// checkUsage: run.finished totals are the result's, and equal the sum of the
// per-call usage events (each model message counted once).
func checkUsage(t *testing.T, r realRun, in, out, cacheRead int64) {
	t.Helper()
	u := r.Fin.Usage
	if u.Input != in || u.Output != out || u.CacheRead != cacheRead {
		t.Errorf("usage = in %d out %d cache read %d, want %d %d %d", u.Input, u.Output, u.CacheRead, in, out, cacheRead)
	}
	var sum events.Tokens
	for _, ev := range r.Events {
		if s, ok := ev.Body.(events.Usage); ok {
			sum = sum.Add(s.Step)
		}
	}
	if sum.Input != u.Input || sum.Output != u.Output || sum.CacheRead != u.CacheRead {
		t.Errorf("usage events sum to %+v, run.finished says %+v: a message counted twice or missed", sum, u)
	}
}

func TestRealText(t *testing.T) {
	t.Parallel()
	prompt := "--help \"quoted\"\nSay hello. " + string(mockllm.Text)
	r := runReal(t, prompt, mockllm.Options{}, budget.Limits{})
	wantOK(t, r, mockllm.TextAnswer)
	checkUsage(t, r, mockllm.PromptTokens-mockllm.CachedTokens, mockllm.CompletionTokens, mockllm.CachedTokens)
	if r.Fin.Turns != 1 {
		t.Errorf("turns = %d, want 1", r.Fin.Turns)
	}
	calls := realcli.ModelCalls(r.server)
	if len(calls) == 0 || !strings.Contains(calls[0].UserText, prompt) {
		t.Errorf("model got user text %q, want it to hold the prompt %q byte for byte", realcli.FirstUserText(calls), prompt)
	}
	var deltas strings.Builder
	for _, ev := range r.Events {
		if d, ok := ev.Body.(events.TextDelta); ok {
			deltas.WriteString(d.Text)
		}
	}
	if deltas.String() != mockllm.TextAnswer {
		t.Errorf("text.delta events = %q, want the answer streamed", deltas.String())
	}
}

func TestRealTool(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Run the marker command. "+string(mockllm.Tool), mockllm.Options{}, budget.Limits{})
	wantOK(t, r, mockllm.ToolAnswerPrefix+mockllm.ToolOutput)
	started, finished := r.Tool()
	if started == nil || started.Name != "Bash" || started.Kind != events.ToolShell {
		t.Fatalf("tool.started = %+v, want Bash/shell", started)
	}
	if finished == nil || finished.Status != events.ToolOK || strings.TrimSpace(finished.Output) != mockllm.ToolOutput || finished.CallID != started.CallID {
		t.Errorf("tool.finished = %+v, want ok with %q for %s", finished, mockllm.ToolOutput, started.CallID)
	}
	if r.Fin.Turns != 2 || r.Fin.ToolCalls != 1 {
		t.Errorf("turns=%d tool_calls=%d, want 2, 1", r.Fin.Turns, r.Fin.ToolCalls)
	}
	checkUsage(t, r, 2*(mockllm.PromptTokens-mockllm.CachedTokens), 2*mockllm.CompletionTokens, 2*mockllm.CachedTokens)
}

func TestRealBigUsage(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Big. "+string(mockllm.BigUsage), mockllm.Options{}, budget.Limits{})
	wantOK(t, r, mockllm.TextAnswer)
	checkUsage(t, r, mockllm.BigPromptTokens-mockllm.BigCachedTokens, mockllm.BigCompletionTokens, mockllm.BigCachedTokens)
	if c := *r.Fin.CostUSD; math.IsNaN(c) || c < 1 {
		t.Errorf("cost = %v, want the large reported cost", c)
	}
}

func TestRealErrors(t *testing.T) {
	t.Parallel()
	fast := mockllm.Options{RetryAfter: 100 * time.Millisecond}
	tests := []struct {
		scenario mockllm.Scenario
		bin      events.Bin
		reason   events.Reason
		status   int
	}{
		{mockllm.Unauthorized, events.BinUnavailable, events.ReasonAuth, 401},
		{mockllm.RateLimited, events.BinUnavailable, events.ReasonRateLimit, 429},
		{mockllm.ServerError, events.BinUnavailable, events.ReasonServer, 500},
		{mockllm.Overloaded, events.BinUnavailable, events.ReasonOverloaded, mockllm.StatusOverloaded},
		{mockllm.Overflow, events.BinInvalidInput, events.ReasonContextOverflow, 0},
	}
	for _, tt := range tests {
		t.Run(string(tt.scenario), func(t *testing.T) {
			t.Parallel()
			r := runReal(t, "Fail please. "+string(tt.scenario), fast, budget.Limits{Timeout: 90 * time.Second},
				"CLAUDE_CODE_MAX_RETRIES=1")
			realcli.WantErr(t, r.Fin, tt.bin, tt.reason, tt.status)
			t.Logf("%s: %s in %s", tt.scenario, r.Fin.Error.Message, r.Took.Round(time.Millisecond))
		})
	}
}

// TestRealFailFast: with Claude's default retries (ten, about three minutes
// for a 401), hub stops it at the first retry notice.
func TestRealFailFast(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Bad key. "+string(mockllm.Unauthorized), mockllm.Options{}, budget.Limits{Grace: 2 * time.Second})
	realcli.WantErr(t, r.Fin, events.BinUnavailable, events.ReasonAuth, 401)
	var retryAt, endAt time.Time
	for _, ev := range r.Events {
		if n, ok := ev.Body.(events.Notice); ok && n.Kind == events.NoticeRetry && retryAt.IsZero() {
			retryAt = ev.TS
		}
		if ev.Type() == events.TypeRunFinished {
			endAt = ev.TS
		}
	}
	if retryAt.IsZero() {
		t.Fatal("no retry notice: nothing to fail fast on")
	}
	if d := endAt.Sub(retryAt); d > 3*time.Second {
		t.Errorf("run.finished %s after the first retry notice, want within about two seconds", d)
	}
}

// TestRealIdle: a provider that never answers (hang) or stops mid-stream
// (stall) ends by hub's idle timeout.
func TestRealIdle(t *testing.T) {
	t.Parallel()
	const idle = 8 * time.Second
	for _, sc := range []mockllm.Scenario{mockllm.Hang, mockllm.Stall} {
		t.Run(string(sc), func(t *testing.T) {
			t.Parallel()
			r := runReal(t, "Wait. "+string(sc), mockllm.Options{}, budget.Limits{IdleTimeout: idle, Grace: 2 * time.Second})
			realcli.WantErr(t, r.Fin, events.BinTimeout, events.ReasonIdle, 0)
			n := len(r.Events)
			quiet := r.Events[n-1].TS.Sub(r.Events[n-2].TS)
			if quiet < idle || quiet > idle+5*time.Second {
				t.Errorf("last output to run.finished = %s, want about the idle timeout %s", quiet, idle)
			}
		})
	}
}

// TestRealToolKilled: Claude runs Bash in a process group of its own; a
// stopped run must still kill the tool and what it started.
func TestRealToolKilled(t *testing.T) {
	t.Parallel()
	bashEnv := filepath.Join(t.TempDir(), "bashenv")
	if err := os.WriteFile(bashEnv, []byte("echo() { sleep 300; builtin echo \"$@\"; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runReal(t, "Run it. "+string(mockllm.Tool), mockllm.Options{},
		budget.Limits{Timeout: 15 * time.Second, Grace: 2 * time.Second}, "BASH_ENV="+bashEnv)
	realcli.WantErr(t, r.Fin, events.BinTimeout, events.ReasonWall, 0)
	if n := r.notices(events.NoticeRetry); n != 0 {
		t.Logf("%d retry notices", n)
	}
	tool := false
	for _, ev := range r.Events {
		if ev.Type() == events.TypeToolStarted {
			tool = true
		}
	}
	if !tool {
		t.Errorf("no tool.started: the tool never ran, so nothing was tested")
	}
}

// TestRealMaxCost: Claude Code reports cost only in its final result
// ($7.20 for the large usage here), so --max-cost $1 cannot be checked per
// call (a cost_unknown notice says so) and is crossed at the result: the run
// ends budget_exceeded/cost with the result's totals.
func TestRealMaxCost(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Big. "+string(mockllm.BigUsage), mockllm.Options{}, budget.Limits{MaxCostUSD: 1, Grace: 2 * time.Second})
	realcli.WantErr(t, r.Fin, events.BinBudgetExceeded, events.ReasonCost, 0)
	if n := r.notices(events.NoticeCostUnknown); n != 1 {
		t.Errorf("%d cost_unknown notices, want 1 (per-call cost is unknown until the result)", n)
	}
	if r.Fin.CostUSD == nil || *r.Fin.CostUSD <= 1 || r.Fin.CostSource != events.CostReported {
		t.Errorf("cost = %v %s, want the reported total above $1", r.Fin.CostUSD, r.Fin.CostSource)
	}
}

// TestRealFinalAnswer: a tool loop stopped by --max-tool-steps 2 is resumed
// once, asked to answer without tools, and the resume's answer comes back
// marked partial. The tools stay defined: the mock server, as the Anthropic
// API, refuses a tool history without them (with --tools= Claude Code got
// that 400).
func TestRealFinalAnswer(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Loop. "+string(mockllm.ToolLoop), mockllm.Options{}, budget.Limits{MaxToolSteps: 2, Grace: 2 * time.Second})
	realcli.CheckFinalAnswer(t, r.Fin, r.server)
}

// TestRealAgentRetries: --agent-retries 1 becomes CLAUDE_CODE_MAX_RETRIES=1:
// Claude Code retries a 500 once (one retry notice, two model calls) and
// fails as unavailable/server.
func TestRealAgentRetries(t *testing.T) {
	t.Parallel()
	one := 1
	r := runRealReq(t, "Fail please. "+string(mockllm.ServerError), mockllm.Options{RetryAfter: 100 * time.Millisecond},
		budget.Limits{Timeout: 90 * time.Second}, func(req *adapters.Request) { req.AgentRetries = &one })
	realcli.WantErr(t, r.Fin, events.BinUnavailable, events.ReasonServer, 500)
	if n, calls := r.notices(events.NoticeRetry), len(realcli.ModelCalls(r.server)); n != 1 || calls != 2 {
		t.Errorf("%d retry notices, %d model calls; want 1 and 2", n, calls)
	}
}
