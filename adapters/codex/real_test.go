package codex_test

// Contract tests: the real Codex CLI (pinned in scripts/install-agents.sh)
// run through hub against internal/mockllm's OpenAI Responses API, one
// scenario per test, offline.

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters"
	_ "github.com/hubcli/hub/adapters/codex"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/realcli"
	"github.com/hubcli/hub/mockllm"
)

// model is the model the tests' config names; hub's price table has it.
const model = "gpt-5.5"

// gpt55 is gpt-5.5's price in USD per million tokens (input, cached input,
// output), as budget.DefaultPrices has it, written out so the expected costs
// below are computed by hand and not by the code under test.
const gpt55In, gpt55Cached, gpt55Out = 5.00, 0.50, 30.00

type realRun struct {
	realcli.Result
	server *mockllm.Server
	home   string // CODEX_HOME
}

func (r realRun) notices(kind events.NoticeKind) []events.Notice {
	var out []events.Notice
	for _, ev := range r.Events {
		if b, ok := ev.Body.(events.Notice); ok && b.Kind == kind {
			out = append(out, b)
		}
	}
	return out
}

// setup is one run's environment: a mock server, a fresh home, and a
// CODEX_HOME whose config.toml points Codex at the server (REAL-CLIS.md).
type setup struct {
	server  *mockllm.Server
	dir     string // the run's home directory (realcli.Home)
	work    string // working directory
	codex   string // CODEX_HOME
	env     []string
	retries int // request and stream retries Codex makes; -1 leaves Codex's defaults
}

func newSetup(t *testing.T, opts mockllm.Options, retries int) *setup {
	t.Helper()
	srv, err := mockllm.StartWith(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	dir, env := realcli.Home(t)
	s := &setup{server: srv, dir: dir, work: filepath.Join(dir, "work"), codex: filepath.Join(dir, "codex-home"), retries: retries}
	for _, d := range []string{s.work, s.codex} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	knobs := ""
	if retries >= 0 {
		knobs = fmt.Sprintf("request_max_retries = %d\nstream_max_retries = %d\n", retries, retries)
	}
	config := fmt.Sprintf(`model = %q
model_provider = "mock"
[analytics]
enabled = false
[features]
plugins = false
remote_plugin = false
apps = false
unbounded_connection_retries = false
[model_providers.mock]
name = "mock"
base_url = "%s/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
%s`, model, srv.URL(), knobs)
	if err := os.WriteFile(filepath.Join(s.codex, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	s.env = append(env, "CODEX_HOME="+s.codex, "MOCK_API_KEY=x")
	return s
}

// run runs the real codex on prompt through adapters.Run and checks what
// every run must keep: a valid stream with one run.finished last, and no
// process of the run (Node wrapper, native binary, tools) left alive.
func (s *setup) run(t *testing.T, prompt string, limits budget.Limits, edit ...func(*adapters.Request)) realRun {
	t.Helper()
	if limits.Timeout == 0 {
		limits.Timeout = 2 * time.Minute
	}
	req := adapters.Request{Agent: "codex", Prompt: prompt, Bin: realcli.Bin(t, "codex"), Cwd: s.work, Env: s.env, Limits: limits}
	for _, e := range edit {
		e(&req)
	}
	return realRun{Result: realcli.Run(t, req, s.dir), server: s.server, home: s.codex}
}

func runReal(t *testing.T, prompt string, limits budget.Limits) realRun {
	t.Helper()
	return newSetup(t, mockllm.Options{}, 1).run(t, prompt, limits)
}

func wantOK(t *testing.T, r realRun) {
	t.Helper()
	if !r.Fin.OK {
		t.Fatalf("run.finished not ok: %v", r.Fin.Error)
	}
	if r.Fin.SessionID == nil || *r.Fin.SessionID == "" {
		t.Errorf("session_id = %v, want Codex's thread id", r.Fin.SessionID)
	}
	if r.Fin.ExitCode == nil || *r.Fin.ExitCode != 0 {
		t.Errorf("exit_code = %v, want 0", r.Fin.ExitCode)
	}
}

// wantUsage checks run.finished's tokens (input without the cached ones,
// SPEC §3) and an estimated cost equal to the hand-computed one.
func wantUsage(t *testing.T, r realRun, in, cached, out int64) {
	t.Helper()
	u := r.Fin.Usage
	if u.Input != in || u.CacheRead != cached || u.Output != out {
		t.Errorf("usage = in %d cache read %d out %d, want %d %d %d", u.Input, u.CacheRead, u.Output, in, cached, out)
	}
	want := (float64(in)*gpt55In + float64(cached)*gpt55Cached + float64(out)*gpt55Out) / 1e6
	if r.Fin.CostSource != events.CostEstimated || r.Fin.CostUSD == nil || math.Abs(*r.Fin.CostUSD-want) > 1e-9 {
		t.Errorf("cost = %v (%s), want %v estimated", r.Fin.CostUSD, r.Fin.CostSource, want)
	}
}

func TestRealText(t *testing.T) {
	t.Parallel()
	prompt := "--help \"quoted\" -\nSay hello. " + string(mockllm.Text)
	r := runReal(t, prompt, budget.Limits{})
	wantOK(t, r)
	if r.Fin.Text != mockllm.TextAnswer {
		t.Errorf("text = %q, want %q", r.Fin.Text, mockllm.TextAnswer)
	}
	// 800 × $5 + 200 × $0.50 + 50 × $30 per million = $0.0056.
	wantUsage(t, r, mockllm.PromptTokens-mockllm.CachedTokens, mockllm.CachedTokens, mockllm.CompletionTokens)
	if math.Abs(*r.Fin.CostUSD-0.0056) > 1e-12 {
		t.Errorf("cost = %v, want 0.0056", *r.Fin.CostUSD)
	}
	if r.Fin.Turns != 1 {
		t.Errorf("turns = %d, want 1", r.Fin.Turns)
	}
	calls := realcli.ModelCalls(r.server)
	if len(calls) != 1 || calls[0].Model != model {
		t.Fatalf("model calls = %+v, want one to %s", calls, model)
	}
	found := false
	for _, ev := range r.Events {
		switch b := ev.Body.(type) {
		case events.Reasoning:
			found = found || b.Text == mockllm.ReasoningSummary
		case events.SessionStarted:
			if b.Model == nil || *b.Model != model {
				t.Errorf("session.started model = %v, want %s (from CODEX_HOME/config.toml)", b.Model, model)
			}
		}
	}
	if !found {
		t.Errorf("no reasoning event with the model's summary %q", mockllm.ReasoningSummary)
	}
	if calls[0].LastUserText != prompt {
		t.Errorf("model got last user text %q, want the prompt %q byte for byte", calls[0].LastUserText, prompt)
	}
}

func TestRealTool(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Run the marker command. "+string(mockllm.Tool), budget.Limits{})
	wantOK(t, r)
	started, finished := r.Tool()
	if started == nil || started.Kind != events.ToolShell || !strings.Contains(string(started.Input), mockllm.ToolCommand) {
		t.Fatalf("tool.started = %+v, want a shell command running %q", started, mockllm.ToolCommand)
	}
	if finished == nil || finished.Status != events.ToolOK || strings.TrimSpace(finished.Output) != mockllm.ToolOutput ||
		finished.CallID != started.CallID || finished.ExitCode == nil || *finished.ExitCode != 0 {
		t.Errorf("tool.finished = %+v, want ok, exit 0, output %q, for %s", finished, mockllm.ToolOutput, started.CallID)
	}
	if !strings.HasPrefix(r.Fin.Text, mockllm.ToolAnswerPrefix) || !strings.Contains(r.Fin.Text, mockllm.ToolOutput) {
		t.Errorf("text = %q, want the model's answer quoting the tool output", r.Fin.Text)
	}
	// One Codex turn with two model calls: usage comes once, summed.
	if r.Fin.Turns != 1 || r.Fin.ToolCalls != 1 {
		t.Errorf("turns=%d tool_calls=%d, want 1, 1", r.Fin.Turns, r.Fin.ToolCalls)
	}
	wantUsage(t, r, 2*(mockllm.PromptTokens-mockllm.CachedTokens), 2*mockllm.CachedTokens, 2*mockllm.CompletionTokens)
}

// TestRealBigUsage: the estimated cost of the mock's large usage, by hand:
// 500 000 × $5 + 1 000 000 × $0.50 + 250 000 × $30 per million = $10.50.
func TestRealBigUsage(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Big. "+string(mockllm.BigUsage), budget.Limits{})
	wantOK(t, r)
	wantUsage(t, r, mockllm.BigPromptTokens-mockllm.BigCachedTokens, mockllm.BigCachedTokens, mockllm.BigCompletionTokens)
	if math.Abs(*r.Fin.CostUSD-10.50) > 1e-9 {
		t.Errorf("cost = %v, want 10.50", *r.Fin.CostUSD)
	}
}

// TestRealUnknownModel: a model hub has no price for gives cost null,
// cost_source unknown and a cost_unknown notice, never 0.
func TestRealUnknownModel(t *testing.T) {
	t.Parallel()
	s := newSetup(t, mockllm.Options{}, 1)
	r := s.run(t, "Hello. "+string(mockllm.Text), budget.Limits{}, func(req *adapters.Request) { req.Model = "mock-model" })
	wantOK(t, r)
	if r.Fin.CostUSD != nil || r.Fin.CostSource != events.CostUnknown {
		t.Errorf("cost = %v (%s), want null and unknown", r.Fin.CostUSD, r.Fin.CostSource)
	}
	if n := r.notices(events.NoticeCostUnknown); len(n) != 1 || !strings.Contains(n[0].Message, "mock-model") {
		t.Errorf("cost_unknown notices = %+v, want one naming the model", n)
	}
	if u := r.Fin.Usage; u.Input != mockllm.PromptTokens-mockllm.CachedTokens || u.Output != mockllm.CompletionTokens {
		t.Errorf("usage = %+v: tokens must still be counted", u)
	}
	if calls := realcli.ModelCalls(r.server); len(calls) == 0 || calls[0].Model != "mock-model" {
		t.Errorf("model calls = %+v, want --model passed to codex", calls)
	}
}

func TestRealErrors(t *testing.T) {
	t.Parallel()
	fast := mockllm.Options{RetryAfter: 100 * time.Millisecond}
	tests := []struct {
		scenario   mockllm.Scenario
		noFailFast bool
		bin        events.Bin
		reason     events.Reason
		status     int
	}{
		{mockllm.Unauthorized, false, events.BinUnavailable, events.ReasonAuth, 401},
		{mockllm.Unauthorized, true, events.BinUnavailable, events.ReasonAuth, 401},
		{mockllm.RateLimited, false, events.BinUnavailable, events.ReasonRateLimit, 429},
		{mockllm.ServerError, false, events.BinUnavailable, events.ReasonServer, 0},
		{mockllm.Overloaded, false, events.BinUnavailable, events.ReasonOverloaded, 0},
		{mockllm.Overflow, false, events.BinInvalidInput, events.ReasonContextOverflow, 0},
	}
	for _, tt := range tests {
		name := string(tt.scenario)
		if tt.noFailFast {
			name += "-no-fail-fast"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := newSetup(t, fast, 1)
			r := s.run(t, "Fail please. "+string(tt.scenario), budget.Limits{Timeout: 90 * time.Second},
				func(req *adapters.Request) { req.NoFailFast = tt.noFailFast })
			realcli.WantErr(t, r.Fin, tt.bin, tt.reason, tt.status)
			if r.Fin.SessionID == nil {
				t.Errorf("session_id null: Codex gave a thread id before failing")
			}
			t.Logf("%s: %s in %s", name, r.Fin.Error.Message, r.Took.Round(time.Millisecond))
		})
	}
}

// TestRealFailFast: with Codex's default retries, hub stops a 401 at the
// first "Reconnecting" notice.
func TestRealFailFast(t *testing.T) {
	t.Parallel()
	s := newSetup(t, mockllm.Options{}, -1)
	r := s.run(t, "Bad key. "+string(mockllm.Unauthorized), budget.Limits{Grace: 2 * time.Second})
	realcli.WantErr(t, r.Fin, events.BinUnavailable, events.ReasonAuth, 401)
	if n := len(r.notices(events.NoticeRetry)); n != 1 {
		t.Errorf("%d retry notices, want exactly 1 (hub stops at the first)", n)
	}
	if n := len(realcli.ModelCalls(r.server)); n > 3 {
		t.Errorf("%d model calls: hub let Codex keep retrying", n)
	}
}

// TestRealIdle: a provider that never answers (hang) or stops mid-stream
// (stall) ends by hub's idle timeout, with the Node wrapper, the native
// binary and everything else gone.
func TestRealIdle(t *testing.T) {
	t.Parallel()
	const idle = 8 * time.Second
	for _, sc := range []mockllm.Scenario{mockllm.Hang, mockllm.Stall} {
		t.Run(string(sc), func(t *testing.T) {
			t.Parallel()
			r := runReal(t, "Wait. "+string(sc), budget.Limits{IdleTimeout: idle, Grace: 2 * time.Second})
			realcli.WantErr(t, r.Fin, events.BinTimeout, events.ReasonIdle, 0)
			n := len(r.Events)
			quiet := r.Events[n-1].TS.Sub(r.Events[n-2].TS)
			if quiet < idle || quiet > idle+5*time.Second {
				t.Errorf("last output to run.finished = %s, want about the idle timeout %s", quiet, idle)
			}
		})
	}
}

// TestRealResume: a second run resumes the first one's session; Codex then
// reports the session's running total, which hub passes on and flags.
func TestRealResume(t *testing.T) {
	t.Parallel()
	s := newSetup(t, mockllm.Options{}, 1)
	first := s.run(t, "First. "+string(mockllm.Text), budget.Limits{})
	wantOK(t, first)
	second := s.run(t, "Second. "+string(mockllm.Text), budget.Limits{}, func(req *adapters.Request) { req.Resume = *first.Fin.SessionID })
	wantOK(t, second)
	if *second.Fin.SessionID != *first.Fin.SessionID {
		t.Errorf("resumed session id = %s, want %s", *second.Fin.SessionID, *first.Fin.SessionID)
	}
	wantUsage(t, second, 2*(mockllm.PromptTokens-mockllm.CachedTokens), 2*mockllm.CachedTokens, 2*mockllm.CompletionTokens)
	flagged := false
	for _, n := range second.notices(events.NoticeCostUnknown) {
		flagged = flagged || strings.Contains(n.Message, "resumed session")
	}
	if !flagged {
		t.Error("no notice that a resumed run's usage includes earlier turns")
	}

	// An unknown id, and one that is not a UUID (codex would take it for a
	// thread name and silently start a new session).
	for _, id := range []string{"00000000-0000-0000-0000-000000000000", "no-such-thread"} {
		bad := s.run(t, "Third. "+string(mockllm.Text), budget.Limits{}, func(req *adapters.Request) { req.Resume = id })
		realcli.WantErr(t, bad.Fin, events.BinInvalidInput, events.ReasonBadSession, 0)
	}
}

// TestRealToolKilled: Codex runs its shell tool in a process group of its
// own; a run stopped mid-tool must still kill the tool, the native binary
// and the Node wrapper.
func TestRealToolKilled(t *testing.T) {
	t.Parallel()
	s := newSetup(t, mockllm.Options{}, 1)
	// Codex runs `bash -lc 'echo mock-tool-ok'`: a login shell reads
	// ~/.bash_profile, which makes echo sleep first.
	home := strings.TrimPrefix(s.env[0], "HOME=")
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("echo() { sleep 300; builtin echo \"$@\"; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := s.run(t, "Run it. "+string(mockllm.Tool), budget.Limits{Timeout: 6 * time.Second, Grace: 2 * time.Second})
	realcli.WantErr(t, r.Fin, events.BinTimeout, events.ReasonWall, 0)
	if started, _ := r.Tool(); started == nil {
		t.Errorf("no tool.started: the tool never ran, so nothing was tested")
	}
}

// TestRealToolOutlivesTurn: Codex's unified exec returns after its yield
// time (10 s) with a slow command still running in the background, and the
// turn completes. The run is ok, the tool call is closed as an error, and
// the background command dies with the run (realcli.Run checks Leftovers).
func TestRealToolOutlivesTurn(t *testing.T) {
	t.Parallel()
	s := newSetup(t, mockllm.Options{}, 1)
	home := strings.TrimPrefix(s.env[0], "HOME=")
	if err := os.WriteFile(filepath.Join(home, ".bash_profile"), []byte("echo() { sleep 300; builtin echo \"$@\"; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := s.run(t, "Run it. "+string(mockllm.Tool), budget.Limits{Timeout: time.Minute, Grace: 2 * time.Second})
	wantOK(t, r)
	started, finished := r.Tool()
	if started == nil || finished == nil || finished.CallID != started.CallID || finished.Status != events.ToolError {
		t.Errorf("tool.started %+v, tool.finished %+v: want the still-running call closed as an error", started, finished)
	}
}

// TestRealMaxCost: the estimated cost of the large usage ($10.50) crosses
// --max-cost $1 at the turn's usage event, the last one forwarded.
func TestRealMaxCost(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Big. "+string(mockllm.BigUsage), budget.Limits{MaxCostUSD: 1, Grace: 2 * time.Second})
	realcli.WantErr(t, r.Fin, events.BinBudgetExceeded, events.ReasonCost, 0)
	if n := len(r.Events); r.Events[n-2].Type() != events.TypeUsage {
		t.Errorf("last forwarded event = %s, want the crossing usage", r.Events[n-2].Type())
	}
	if r.Fin.CostUSD == nil || math.Abs(*r.Fin.CostUSD-10.50) > 1e-9 || r.Fin.CostSource != events.CostEstimated {
		t.Errorf("cost = %v %s, want the estimated 10.50", r.Fin.CostUSD, r.Fin.CostSource)
	}
}

// TestRealFinalAnswer: a tool loop stopped by --max-tool-steps 2 is resumed
// once (exec resume, read-only sandbox; Codex cannot switch its tools off, so
// they are still offered), and the resume's answer comes back marked partial.
func TestRealFinalAnswer(t *testing.T) {
	t.Parallel()
	r := runReal(t, "Loop. "+string(mockllm.ToolLoop), budget.Limits{MaxToolSteps: 2, Grace: 2 * time.Second})
	realcli.CheckFinalAnswer(t, r.Fin, r.server)
}

// TestRealAgentRetries: --agent-retries 1 sets the retries of the provider
// config.toml selects (here "mock", left at Codex's defaults in the file):
// Codex retries a 500 once, with one retry notice, two model calls in all.
func TestRealAgentRetries(t *testing.T) {
	t.Parallel()
	one := 1
	r := newSetup(t, mockllm.Options{RetryAfter: 100 * time.Millisecond}, -1).run(t, "Fail please. "+string(mockllm.ServerError),
		budget.Limits{Timeout: 90 * time.Second}, func(req *adapters.Request) { req.AgentRetries = &one })
	realcli.WantErr(t, r.Fin, events.BinUnavailable, events.ReasonServer, 0)
	if n, calls := len(r.notices(events.NoticeRetry)), len(realcli.ModelCalls(r.server)); n != 1 || calls != 2 {
		t.Errorf("%d retry notices, %d model calls; want 1 and 2 (one retry)", n, calls)
	}
}
