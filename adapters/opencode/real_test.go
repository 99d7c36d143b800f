package opencode_test

// Contract tests: the real OpenCode CLI (pinned in scripts/install-agents.sh)
// run through hub against internal/mockllm, one scenario per test, offline.

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters"
	_ "github.com/hubcli/hub/adapters/opencode"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/realcli"
	"github.com/hubcli/hub/mockllm"
)

// config is an OpenCode config pointing provider "mock" at the server.
func config(baseURL string) string {
	return fmt.Sprintf(`{"$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
 "model": "mock/mock-model", "small_model": "mock/mock-model",
 "provider": {"mock": {"npm": "@ai-sdk/openai-compatible",
   "options": {"baseURL": %q, "apiKey": "x"},
   "models": {"mock-model": {"tool_call": true,
     "cost": {"input": %g, "output": %g, "cache_read": %g, "cache_write": %g},
     "limit": {"context": 128000, "output": 8192}}}}}}`, baseURL+"/v1", realcli.MockPrices.In, realcli.MockPrices.Out, realcli.MockPrices.CacheRead, realcli.MockPrices.CacheWrite)
}

type realRun struct {
	realcli.Result
	server *mockllm.Server
}

func (r realRun) types() []events.Type {
	var out []events.Type
	for _, ev := range r.Events {
		out = append(out, ev.Type())
	}
	return out
}

// runReal runs the real opencode on prompt through adapters.Run with its own
// mock server and home, and checks what every run must keep: a valid stream
// with one run.finished last, and no process of the run left alive.
func runReal(t *testing.T, prompt string, opts mockllm.Options, limits budget.Limits, extraEnv ...string) realRun {
	t.Helper()
	bin := realcli.Bin(t, "opencode")
	srv, err := mockllm.StartWith(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	dir, env := realcli.Home(t)
	cfg := filepath.Join(dir, "opencode.json")
	if err := os.WriteFile(cfg, []byte(config(srv.URL())), 0o644); err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	env = append(env, "OPENCODE_CONFIG="+cfg, "OPENCODE_DISABLE_MODELS_FETCH=1")
	for _, e := range extraEnv {
		env = append(env, strings.ReplaceAll(e, "$DIR", dir))
	}
	if limits.Timeout == 0 {
		limits.Timeout = 2 * time.Minute
	}
	req := adapters.Request{Agent: "opencode", Prompt: prompt, Model: "mock/mock-model", Bin: bin, Cwd: work, Env: env, Limits: limits}
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
	if r.Fin.SessionID == nil || !strings.HasPrefix(*r.Fin.SessionID, "ses_") {
		t.Errorf("session_id = %v, want ses_…", r.Fin.SessionID)
	}
	if r.Fin.ExitCode == nil || *r.Fin.ExitCode != 0 {
		t.Errorf("exit_code = %v, want 0", r.Fin.ExitCode)
	}
	if r.Fin.CostSource != events.CostReported {
		t.Errorf("cost_source = %s, want reported", r.Fin.CostSource)
	}
}

func TestRealText(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Say hello. "+string(mockllm.Text), mockllm.Options{}, budget.Limits{})
	wantOK(t, r, mockllm.TextAnswer)
	realcli.CheckReportedUsage(t, r.Fin.Usage, realcli.MockPrices, mockllm.PromptTokens-mockllm.CachedTokens, mockllm.CompletionTokens, mockllm.CachedTokens)
	if r.Fin.Turns != 1 || r.Fin.ToolCalls != 0 {
		t.Errorf("turns=%d tool_calls=%d, want 1, 0", r.Fin.Turns, r.Fin.ToolCalls)
	}
	// --title keeps OpenCode from a hidden title-generation call: the only
	// model call is the one whose usage the stream reports.
	if n := len(realcli.ModelCalls(r.server)); n != 1 {
		t.Errorf("model calls = %d, want 1 (no hidden title call)", n)
	}
	want := []events.Type{events.TypeRunStarted, events.TypeSessionStarted, events.TypeMessage, events.TypeUsage, events.TypeRunFinished}
	if got := r.types(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("event types = %v, want %v", got, want)
	}
}

// TestRealPromptExact: the model gets the prompt byte for byte — quotes,
// newlines, a leading dash — and no flag is read from it.
func TestRealPromptExact(t *testing.T) {
	t.Parallel()
	prompt := "--help -v \"quoted\"  two  spaces\nsecond line " + string(mockllm.Text)
	r := runReal(t, prompt, mockllm.Options{}, budget.Limits{})
	wantOK(t, r, mockllm.TextAnswer)
	calls := realcli.ModelCalls(r.server)
	if len(calls) == 0 || calls[0].UserText != prompt {
		t.Errorf("model got user text %q, want %q", realcli.FirstUserText(calls), prompt)
	}
}

func TestRealTool(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Run the marker command. "+string(mockllm.Tool), mockllm.Options{}, budget.Limits{})
	wantOK(t, r, mockllm.ToolAnswerPrefix+mockllm.ToolOutput)
	started, finished := r.Tool()
	if started == nil || started.Name != "bash" || started.Kind != events.ToolShell || started.CallID != mockllm.ToolCallID {
		t.Fatalf("tool.started = %+v, want bash/shell %s", started, mockllm.ToolCallID)
	}
	var input struct{ Command string }
	if err := json.Unmarshal(started.Input, &input); err != nil || input.Command != mockllm.ToolCommand {
		t.Errorf("tool input = %s, want command %q", started.Input, mockllm.ToolCommand)
	}
	if finished == nil || finished.Status != events.ToolOK || strings.TrimSpace(finished.Output) != mockllm.ToolOutput ||
		finished.ExitCode == nil || *finished.ExitCode != 0 {
		t.Errorf("tool.finished = %+v, want ok, output %q, exit 0", finished, mockllm.ToolOutput)
	}
	if r.Fin.Turns != 2 || r.Fin.ToolCalls != 1 {
		t.Errorf("turns=%d tool_calls=%d, want 2, 1", r.Fin.Turns, r.Fin.ToolCalls)
	}
	realcli.CheckReportedUsage(t, r.Fin.Usage, realcli.MockPrices, 2*(mockllm.PromptTokens-mockllm.CachedTokens), 2*mockllm.CompletionTokens, 2*mockllm.CachedTokens)
}

func TestRealBigUsage(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Big. "+string(mockllm.BigUsage), mockllm.Options{}, budget.Limits{})
	wantOK(t, r, mockllm.TextAnswer)
	// Usage over the model's 128k context makes OpenCode compact the session:
	// more model calls follow the first, each reported by its own step. The
	// first is the big one; the run's total is the sum of every step.
	var steps []events.Usage
	for _, ev := range r.Events {
		if u, ok := ev.Body.(events.Usage); ok {
			steps = append(steps, u)
		}
	}
	if len(steps) == 0 {
		t.Fatal("no usage events")
	}
	realcli.CheckReportedUsage(t, steps[0].Step, realcli.MockPrices, mockllm.BigPromptTokens-mockllm.BigCachedTokens, mockllm.BigCompletionTokens, mockllm.BigCachedTokens)
	var sum events.Tokens
	sum.CostUSD = new(float64)
	for _, u := range steps {
		sum = sum.Add(u.Step)
	}
	realcli.CheckReportedUsage(t, r.Fin.Usage, realcli.MockPrices, sum.Input, sum.Output, sum.CacheRead)
	if r.Fin.Turns != int64(len(steps)) || int64(len(realcli.ModelCalls(r.server))) != r.Fin.Turns {
		t.Errorf("turns = %d, usage events %d, model calls %d: want all equal", r.Fin.Turns, len(steps), len(realcli.ModelCalls(r.server)))
	}
}

func TestRealErrors(t *testing.T) {
	t.Parallel()
	// RetryAfter makes OpenCode's own retries of 429/5xx quick (it honours
	// retry-after-ms); TestRealDefaultRetriesBoundedByTimeout covers the slow way.
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
		{mockllm.Overloaded, events.BinUnavailable, events.ReasonOverloaded, 503},
		{mockllm.Overflow, events.BinInvalidInput, events.ReasonContextOverflow, 0},
	}
	for _, tt := range tests {
		t.Run(string(tt.scenario), func(t *testing.T) {
			t.Parallel()
			r := runReal(t, "Fail please. "+string(tt.scenario), fast, budget.Limits{Timeout: 90 * time.Second})
			realcli.WantErr(t, r.Fin, tt.bin, tt.reason, tt.status)
			t.Logf("%s: %s in %s", tt.scenario, r.Fin.Error.Message, r.Took.Round(time.Millisecond))
		})
	}
}

// TestRealIdle: a provider that never answers (hang) or stops mid-stream
// (stall) ends by hub's idle timeout in about that time.
func TestRealIdle(t *testing.T) {
	t.Parallel()
	const idle = 12 * time.Second // above OpenCode's start-up time on a busy 2-core machine
	for _, sc := range []mockllm.Scenario{mockllm.Hang, mockllm.Stall} {
		t.Run(string(sc), func(t *testing.T) {
			t.Parallel()
			r := runReal(t, "Wait. "+string(sc), mockllm.Options{}, budget.Limits{IdleTimeout: idle, Grace: 2 * time.Second})
			realcli.WantErr(t, r.Fin, events.BinTimeout, events.ReasonIdle, 0)
			// From the agent's last output (or the start) to the end: the
			// idle timeout plus at most the grace and some slack.
			n := len(r.Events)
			quiet := r.Events[n-1].TS.Sub(r.Events[n-2].TS)
			if quiet < idle || quiet > idle+2*time.Second+3*time.Second {
				t.Errorf("last output to run.finished = %s, want about the idle timeout %s", quiet, idle)
			}
		})
	}
}

// TestRealDefaultRetriesBoundedByTimeout: with OpenCode's own backoff (no
// retry-after), a failing provider keeps it silent for minutes; hub's wall
// timeout ends the run on time.
func TestRealDefaultRetriesBoundedByTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 20 * time.Second
	r := runReal(t, "Fail slowly. "+string(mockllm.ServerError), mockllm.Options{}, budget.Limits{Timeout: timeout, Grace: 2 * time.Second})
	realcli.WantErr(t, r.Fin, events.BinTimeout, events.ReasonWall, 0)
	if r.Took > timeout+10*time.Second {
		t.Errorf("run took %s, want about %s", r.Took, timeout)
	}
	// OpenCode reached the failing provider and was still in its backoff
	// (2.4, 4.4, 8.9, 19, 37 s here) when hub stopped it. How many calls it
	// made depends on its start-up time, which load stretches.
	if n := len(realcli.ModelCalls(r.server)); n < 1 {
		t.Errorf("model calls = %d, want at least 1", n)
	}
}

// TestRealToolKilled: OpenCode runs its bash tool in a process group of its
// own and ignores SIGTERM while the tool runs. Stopping the run must still
// kill the tool and everything it started (runReal checks for survivors).
func TestRealToolKilled(t *testing.T) {
	t.Parallel()
	// BASH_ENV makes the tool's `echo` hang: bash sources it first.
	bashEnv := filepath.Join(t.TempDir(), "bashenv")
	if err := os.WriteFile(bashEnv, []byte("echo() { sleep 300; builtin echo \"$@\"; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runReal(t, "Run it. "+string(mockllm.Tool), mockllm.Options{},
		budget.Limits{Timeout: 25 * time.Second, Grace: 2 * time.Second}, "BASH_ENV="+bashEnv)
	realcli.WantErr(t, r.Fin, events.BinTimeout, events.ReasonWall, 0)
	if n := len(realcli.ModelCalls(r.server)); n < 1 {
		t.Errorf("model calls = %d: OpenCode never asked for the tool, so nothing was tested", n)
	}
}

// TestRealMaxCost: the first step's reported cost (500 000 × $3 + 250 000 ×
// $15 + 1 000 000 × $0.30 per million = $5.55) crosses --max-cost $1; that
// usage event is the last one forwarded and OpenCode's compaction calls
// never happen.
func TestRealMaxCost(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Big. "+string(mockllm.BigUsage), mockllm.Options{}, budget.Limits{MaxCostUSD: 1, Grace: 2 * time.Second})
	realcli.WantErr(t, r.Fin, events.BinBudgetExceeded, events.ReasonCost, 0)
	if n := len(r.Events); r.Events[n-2].Type() != events.TypeUsage {
		t.Errorf("last forwarded event = %s, want the crossing usage", r.Events[n-2].Type())
	}
	if r.Fin.CostUSD == nil || math.Abs(*r.Fin.CostUSD-realcli.MockPrices.Cost(500_000, 250_000, 1_000_000, 0)) > 1e-9 || r.Fin.Turns != 1 {
		t.Errorf("cost = %v over %d turns, want the first step's $5.55 only", r.Fin.CostUSD, r.Fin.Turns)
	}
}

// TestRealFinalAnswer: a tool loop stopped by --max-tool-steps 2 is resumed
// once (hub's agent, which may run no tool), and the resume's answer comes
// back marked partial.
func TestRealFinalAnswer(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Loop. "+string(mockllm.ToolLoop), mockllm.Options{}, budget.Limits{MaxToolSteps: 2, Grace: 2 * time.Second})
	realcli.CheckFinalAnswer(t, r.Fin, r.server)
}

// TestRealFinalAnswerRunsNoTool: a model that calls a tool whatever it is
// told (MOCK_TOOLFOREVER). OpenCode reports a tool call only once it has run,
// so tool call 2, the crossing one, has run; in the resume, OpenCode asks for
// permission, cannot, and rejects the call: it runs nothing more, even with
// the caller's own inline config allowing every tool, and hub ends the
// resume without a final answer. Each run of the tool appends a line to a
// file (BASH_ENV).
func TestRealFinalAnswerRunsNoTool(t *testing.T) {
	t.Parallel()
	marks := filepath.Join(t.TempDir(), "marks")
	bashEnv := filepath.Join(t.TempDir(), "bashenv")
	if err := os.WriteFile(bashEnv, []byte("builtin echo ran >> "+marks+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runReal(t, "Loop. "+string(mockllm.ToolForever), mockllm.Options{}, budget.Limits{MaxToolSteps: 1, Grace: 2 * time.Second},
		"BASH_ENV="+bashEnv, `OPENCODE_CONFIG_CONTENT={"permission":{"*":"allow"}}`)
	realcli.WantErr(t, r.Fin, events.BinBudgetExceeded, events.ReasonToolSteps, 0)
	if r.Fin.Partial || !strings.Contains(r.Fin.Error.Message, "called a tool during the final-answer resume") {
		t.Errorf("run.finished partial=%v error %q, want no final answer because the resume called a tool", r.Fin.Partial, r.Fin.Error.Message)
	}
	b, _ := os.ReadFile(marks)
	if n := strings.Count(string(b), "ran"); n != 2 {
		t.Errorf("the tool ran %d times, want 2 (the crossing call had run before OpenCode reported it; none in the resume)", n)
	}
}
