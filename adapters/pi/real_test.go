package pi_test

// Contract tests: the real pi CLI (pinned in scripts/install-agents.sh) run
// through hub against internal/mockllm's Chat Completions API, one scenario
// per test, offline. pi exits 0 on every provider error below: each verdict
// comes from hub's reading of its events.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters"
	_ "github.com/hubcli/hub/adapters/pi"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/realcli"
	"github.com/hubcli/hub/mockllm"
)

// modelsJSON is pi's models.json naming provider "mock" at the server.
func modelsJSON(baseURL string) string {
	return fmt.Sprintf(`{"providers": {"mock": {"baseUrl": %q,
  "api": "openai-completions", "apiKey": "x",
  "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
  "models": [{"id": "mock-model", "contextWindow": 128000, "maxTokens": 8192,
    "cost": {"input": %g, "output": %g, "cacheRead": %g, "cacheWrite": %g}}]}}}`,
		baseURL+"/v1", realcli.MockPrices.In, realcli.MockPrices.Out, realcli.MockPrices.CacheRead, realcli.MockPrices.CacheWrite)
}

// Settings for pi's agent directory.
const (
	// noRetries turns off pi's auto-retry and the provider SDK's own
	// retries, so an error scenario ends in about pi's start-up time.
	noRetries = `{"retry": {"enabled": false, "provider": {"maxRetries": 0}}}`
	// slowRetries keeps pi's retry machinery as it is by default (auto-retry
	// 3 times with doubling backoff; the OpenAI SDK's own retries per
	// attempt) but starts the backoff at 30 s instead of 2 s, so that when
	// hub stops pi it is certainly backing off, however long Node took to
	// start on a loaded machine.
	slowRetries = `{"retry": {"enabled": true, "maxRetries": 3, "baseDelayMs": 30000}}`
)

// slots bounds how many pi processes the tests run at once. Each run starts
// Node twice (the version probe, then the run; about 1.5 CPU-seconds each),
// and with every test parallel a 2-core machine took over 15 s to answer
// `pi --version`, failing the probe.
var slots = make(chan struct{}, runtime.NumCPU())

func takeSlot(t *testing.T) {
	t.Helper()
	select {
	case slots <- struct{}{}:
	case <-t.Context().Done():
		t.Fatal("no slot to run pi in before the test ended")
	}
}

// piRun is one real pi run's setup.
type piRun struct {
	prompt   string
	model    string // default "mock/mock-model"
	resume   string
	settings string
	limits   budget.Limits
	env      []string
	args     []string // extra pi arguments, through a wrapper script
	dir      string   // reuse this home (and its sessions); "" for a new one
	// agentRetries is Request.AgentRetries.
	agentRetries *int
}

type realRun struct {
	realcli.Result
	server *mockllm.Server
	dir    string
}

func (r realRun) types() []events.Type {
	var out []events.Type
	for _, ev := range r.Events {
		if ev.Type() != events.TypeTextDelta {
			out = append(out, ev.Type())
		}
	}
	return out
}

func (r realRun) text() string {
	var b strings.Builder
	for _, ev := range r.Events {
		if d, ok := ev.Body.(events.TextDelta); ok {
			b.WriteString(d.Text)
		}
	}
	return b.String()
}

// runReal runs the real pi through adapters.Run with its own mock server,
// home and agent directory, and checks what every run must keep (realcli.Run:
// a valid stream, one run.finished last, no process of the run left).
func runReal(t *testing.T, srv *mockllm.Server, p piRun) realRun {
	t.Helper()
	bin := realcli.Bin(t, "pi")
	if srv == nil {
		var err error
		if srv, err = mockllm.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
	}
	dir, env := p.dir, []string(nil)
	if dir == "" {
		dir, env = realcli.Home(t)
	} else {
		env = []string{"HOME=" + filepath.Join(dir, "home")}
	}
	agent := filepath.Join(dir, "agent")
	work := filepath.Join(dir, "work")
	for _, d := range []string{agent, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(agent, "models.json"), modelsJSON(srv.URL()))
	settings := filepath.Join(agent, "settings.json")
	if p.settings != "" {
		write(t, settings, p.settings)
	} else if err := os.Remove(settings); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(p.args) > 0 {
		// pi has no settings for its tool list: pass --tools through a
		// wrapper that execs pi, so the process hub watches is pi itself.
		wrapper := filepath.Join(dir, "pi-wrapper")
		write(t, wrapper, "#!/bin/sh\nexec "+bin+" "+strings.Join(p.args, " ")+` "$@"`+"\n")
		if err := os.Chmod(wrapper, 0o755); err != nil {
			t.Fatal(err)
		}
		bin = wrapper
	}
	// No key from the test's own environment may reach a real provider.
	env = append(env, "PI_CODING_AGENT_DIR="+agent, "PI_OFFLINE=1",
		"ANTHROPIC_API_KEY=", "ANTHROPIC_OAUTH_TOKEN=", "OPENAI_API_KEY=", "GEMINI_API_KEY=")
	env = append(env, p.env...)
	if p.model == "" {
		p.model = "mock/mock-model"
	}
	if p.limits.Timeout == 0 {
		p.limits.Timeout = 2 * time.Minute
	}
	req := adapters.Request{Agent: "pi", Prompt: p.prompt, Model: p.model, Resume: p.resume, Bin: bin, Cwd: work, Env: env, Limits: p.limits,
		AgentRetries: p.agentRetries}
	takeSlot(t)
	defer func() { <-slots }()
	return realRun{Result: realcli.Run(t, req, dir), server: srv, dir: dir}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantOK(t *testing.T, r realRun, text string) {
	t.Helper()
	if !r.Fin.OK {
		t.Fatalf("run.finished not ok: %v", r.Fin.Error)
	}
	if r.Fin.Text != text {
		t.Errorf("text = %q, want %q", r.Fin.Text, text)
	}
	if r.Fin.SessionID == nil || len(*r.Fin.SessionID) < 32 {
		t.Errorf("session_id = %v, want pi's session UUID", r.Fin.SessionID)
	}
	if r.Fin.ExitCode == nil || *r.Fin.ExitCode != 0 {
		t.Errorf("exit_code = %v, want 0", r.Fin.ExitCode)
	}
	if r.Fin.CostSource != events.CostReported {
		t.Errorf("cost_source = %s, want reported", r.Fin.CostSource)
	}
}

func TestRealDetect(t *testing.T) {
	t.Parallel()
	bin := realcli.Bin(t, "pi")
	takeSlot(t)
	defer func() { <-slots }()
	ad, err := adapters.Lookup("pi")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := ad.Detect(context.Background(), bin)
	if err != nil || inst.Version != "0.73.1" || inst.Path == "" {
		t.Errorf("Detect(%s) = %+v, %v; want version 0.73.1 (pi prints it on stderr)", bin, inst, err)
	}
}

func TestRealText(t *testing.T) {
	t.Parallel()
	r := runReal(t, nil, piRun{prompt: "Say hello. " + string(mockllm.Text), settings: noRetries})
	wantOK(t, r, mockllm.TextAnswer)
	if got := r.text(); got != mockllm.TextAnswer {
		t.Errorf("text.delta joined = %q, want %q", got, mockllm.TextAnswer)
	}
	realcli.CheckReportedUsage(t, r.Fin.Usage, realcli.MockPrices, mockllm.PromptTokens-mockllm.CachedTokens, mockllm.CompletionTokens, mockllm.CachedTokens)
	if r.Fin.Turns != 1 || r.Fin.ToolCalls != 0 {
		t.Errorf("turns=%d tool_calls=%d, want 1, 0", r.Fin.Turns, r.Fin.ToolCalls)
	}
	if n := len(realcli.ModelCalls(r.server)); n != 1 {
		t.Errorf("model calls = %d, want 1", n)
	}
	want := []events.Type{events.TypeRunStarted, events.TypeSessionStarted, events.TypeMessage, events.TypeUsage, events.TypeRunFinished}
	if got := r.types(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("event types (without text.delta) = %v, want %v", got, want)
	}
	t.Logf("text in %s", r.Took.Round(time.Millisecond))
}

// TestRealPromptExact: the model gets the prompt as given, and no flag or
// file is read from it. pi has no "--": a prompt starting with "-" or "@"
// goes on stdin (pi trims its ends; these have no whitespace there), any
// other in argv, byte for byte.
func TestRealPromptExact(t *testing.T) {
	t.Parallel()
	for name, prompt := range map[string]string{
		"dash":   "--help -v \"quoted\"  two  spaces\nsecond line " + string(mockllm.Text),
		"at":     "@/etc/passwd is not a file to attach " + string(mockllm.Text),
		"spaces": "  leading and trailing  \"q\" 'r' $HOME `x`\n" + string(mockllm.Text) + "  ",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := runReal(t, nil, piRun{prompt: prompt, settings: noRetries})
			wantOK(t, r, mockllm.TextAnswer)
			calls := realcli.ModelCalls(r.server)
			if len(calls) == 0 || calls[0].UserText != prompt {
				t.Errorf("model got user text %q, want %q", realcli.FirstUserText(calls), prompt)
			}
		})
	}
}

func TestRealToolBash(t *testing.T) {
	t.Parallel()
	r := runReal(t, nil, piRun{prompt: "Run the marker command. " + string(mockllm.Tool), settings: noRetries})
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
		finished.ExitCode == nil || *finished.ExitCode != 0 || finished.OutputBytes != int64(len(finished.Output)) {
		t.Errorf("tool.finished = %+v, want ok, output %q, exit 0", finished, mockllm.ToolOutput)
	}
	if r.Fin.Turns != 2 || r.Fin.ToolCalls != 1 {
		t.Errorf("turns=%d tool_calls=%d, want 2, 1", r.Fin.Turns, r.Fin.ToolCalls)
	}
	realcli.CheckReportedUsage(t, r.Fin.Usage, realcli.MockPrices, 2*(mockllm.PromptTokens-mockllm.CachedTokens), 2*mockllm.CompletionTokens, 2*mockllm.CachedTokens)
	calls := realcli.ModelCalls(r.server)
	if len(calls) != 2 || !calls[1].ToolResult {
		t.Errorf("model calls = %+v, want 2, the second carrying the tool result", calls)
	}
}

// TestRealToolFails: a command exiting non-zero is a failed tool with its
// exit status (pi reports it only in the output text), and the run goes on.
func TestRealToolFails(t *testing.T) {
	t.Parallel()
	bashEnv := filepath.Join(t.TempDir(), "bashenv")
	write(t, bashEnv, "echo() { builtin echo \"$@\"; return 3; }\n")
	r := runReal(t, nil, piRun{prompt: "Run it. " + string(mockllm.Tool), settings: noRetries, env: []string{"BASH_ENV=" + bashEnv}})
	if !r.Fin.OK {
		t.Fatalf("run.finished not ok: %v", r.Fin.Error)
	}
	_, finished := r.Tool()
	if finished == nil || finished.Status != events.ToolError || finished.ExitCode == nil || *finished.ExitCode != 3 {
		t.Errorf("tool.finished = %+v, want error with exit code 3", finished)
	}
}

// TestRealToolRead: with only the read tool offered, the mock reads a file.
func TestRealToolRead(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile(mockllm.ToolReadPath)
	if err != nil {
		t.Skipf("%s: %v", mockllm.ToolReadPath, err)
	}
	r := runReal(t, nil, piRun{prompt: "Read the marker file. " + string(mockllm.Tool), settings: noRetries, args: []string{"--tools", "read"}})
	wantOK(t, r, mockllm.ToolAnswerPrefix+strings.TrimSpace(string(want)))
	started, finished := r.Tool()
	if started == nil || started.Name != "read" || started.Kind != events.ToolRead || string(started.Input) != `{"path":"`+mockllm.ToolReadPath+`"}` {
		t.Fatalf("tool.started = %+v, want read/read of %s", started, mockllm.ToolReadPath)
	}
	if finished == nil || finished.Status != events.ToolOK || finished.Output != string(want) || finished.ExitCode != nil {
		t.Errorf("tool.finished = %+v, want ok with the file's content and no exit code", finished)
	}
	if r.Fin.ToolCalls != 1 {
		t.Errorf("tool_calls = %d, want 1", r.Fin.ToolCalls)
	}
}

// TestRealBigUsage: usage far over the 128k context window. pi reports the
// call's tokens and cost, then judges the context overflowed and starts
// compacting, and print mode exits there: the answer stands.
func TestRealBigUsage(t *testing.T) {
	t.Parallel()
	r := runReal(t, nil, piRun{prompt: "Big. " + string(mockllm.BigUsage), settings: noRetries})
	wantOK(t, r, mockllm.TextAnswer)
	in, out, cached := int64(mockllm.BigPromptTokens-mockllm.BigCachedTokens), int64(mockllm.BigCompletionTokens), int64(mockllm.BigCachedTokens)
	realcli.CheckReportedUsage(t, r.Fin.Usage, realcli.MockPrices, in, out, cached)
	// By hand: 500000·3 + 250000·15 + 1000000·0.3 per million = $5.55.
	if r.Fin.CostUSD == nil || math.Abs(*r.Fin.CostUSD-5.55) > 1e-9 {
		t.Errorf("cost_usd = %v, want 5.55", r.Fin.CostUSD)
	}
	if r.Fin.Turns != 1 {
		t.Errorf("turns = %d, want 1", r.Fin.Turns)
	}
	var compaction bool
	for _, ev := range r.Events {
		if n, ok := ev.Body.(events.Notice); ok && n.Kind == events.NoticeCompaction {
			compaction = true
		}
	}
	if !compaction {
		t.Errorf("no compaction notice: pi 0.73.1 compacts after a call over its context window")
	}
}

func TestRealErrors(t *testing.T) {
	t.Parallel()
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
		{mockllm.Overflow, events.BinInvalidInput, events.ReasonContextOverflow, 400},
	}
	for _, tt := range tests {
		t.Run(string(tt.scenario), func(t *testing.T) {
			t.Parallel()
			r := runReal(t, nil, piRun{prompt: "Fail please. " + string(tt.scenario), settings: noRetries, limits: budget.Limits{Timeout: 90 * time.Second}})
			realcli.WantErr(t, r.Fin, tt.bin, tt.reason, tt.status)
			if r.Fin.ExitCode == nil || *r.Fin.ExitCode != 0 {
				t.Errorf("exit_code = %v, want 0 (pi exits 0 on provider errors)", r.Fin.ExitCode)
			}
			// After an overflow pi starts compacting (more calls, which
			// the mock fails the same way) and print mode exits meanwhile.
			if n := len(realcli.ModelCalls(r.server)); n != 1 && tt.scenario != mockllm.Overflow || n < 1 {
				t.Errorf("model calls = %d, want 1 (retries are off)", n)
			}
			t.Logf("%s: %s in %s", tt.scenario, r.Fin.Error.Message, r.Took.Round(time.Millisecond))
		})
	}
}

// TestRealSetupErrors: pi exits 1 with a line on stderr before any model
// call; hub names that line.
func TestRealSetupErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, model, resume string
		bin                 events.Bin
		reason              events.Reason
		says                string
	}{
		{"unknown provider", "nope/mock-model", "", events.BinInvalidInput, events.ReasonBadModel, `Unknown provider "nope"`},
		{"no API key", "anthropic/claude-sonnet-4-5", "", events.BinUnavailable, events.ReasonNotConfigured, "No API key found for anthropic"},
		{"unknown session", "", "00000000-0000-7000-8000-000000000000", events.BinInvalidInput, events.ReasonBadSession, "No session found matching '00000000-0000-7000-8000-000000000000'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := runReal(t, nil, piRun{prompt: "Say hello. " + string(mockllm.Text), model: tt.model, resume: tt.resume, settings: noRetries})
			realcli.WantErr(t, r.Fin, tt.bin, tt.reason, 0)
			if !strings.Contains(r.Fin.Error.Message, tt.says) || r.Fin.ExitCode == nil || *r.Fin.ExitCode != 1 {
				t.Errorf("error %q, exit %v; want it to say %q, exit 1", r.Fin.Error.Message, r.Fin.ExitCode, tt.says)
			}
			if n := len(realcli.ModelCalls(r.server)); n != 0 {
				t.Errorf("model calls = %d, want 0", n)
			}
		})
	}
}

// TestRealResume: run.finished.session_id resumes the session (--session):
// the second call carries the first exchange.
func TestRealResume(t *testing.T) {
	t.Parallel()
	srv, err := mockllm.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	first := runReal(t, srv, piRun{prompt: "First. " + string(mockllm.Text), settings: noRetries})
	wantOK(t, first, mockllm.TextAnswer)
	second := runReal(t, srv, piRun{prompt: "Second. " + string(mockllm.Text), settings: noRetries, resume: *first.Fin.SessionID, dir: first.dir})
	wantOK(t, second, mockllm.TextAnswer)
	if *second.Fin.SessionID != *first.Fin.SessionID {
		t.Errorf("resumed session_id = %s, want %s", *second.Fin.SessionID, *first.Fin.SessionID)
	}
	calls := realcli.ModelCalls(srv)
	if len(calls) != 2 || calls[1].UserText != calls[0].UserText {
		t.Errorf("model calls = %d, second's first user text %q; want 2, the first prompt %q", len(calls), realcli.FirstUserText(calls[1:]), calls[0].UserText)
	}
}

// TestRealIdle: a provider that never answers (hang) or stops mid-stream
// (stall) ends by hub's idle timeout in about that time. With retries off
// pi would wait for the OpenAI SDK's own 10-minute timeout.
func TestRealIdle(t *testing.T) {
	t.Parallel()
	const idle = 10 * time.Second // above pi's start-up time on a busy 2-core machine
	const grace = 2 * time.Second
	for _, sc := range []mockllm.Scenario{mockllm.Hang, mockllm.Stall} {
		t.Run(string(sc), func(t *testing.T) {
			t.Parallel()
			r := runReal(t, nil, piRun{prompt: "Wait. " + string(sc), settings: noRetries, limits: budget.Limits{IdleTimeout: idle, Grace: grace}})
			realcli.WantErr(t, r.Fin, events.BinTimeout, events.ReasonIdle, 0)
			n := len(r.Events)
			quiet := r.Events[n-1].TS.Sub(r.Events[n-2].TS)
			if quiet < idle || quiet > idle+grace+3*time.Second {
				t.Errorf("last output to run.finished = %s, want about the idle timeout %s", quiet, idle)
			}
			if sc == mockllm.Stall && (r.text() == "" || !strings.HasPrefix(mockllm.TextAnswer, r.text())) {
				t.Errorf("streamed text before the stall = %q, want a prefix of %q", r.text(), mockllm.TextAnswer)
			}
			t.Logf("%s: ended in %s", sc, r.Took.Round(time.Millisecond))
		})
	}
}

// TestRealRetriesBounded: pi retrying a failing provider (first backoff
// 30 s) is stopped by hub's wall timeout on time, after pi had started
// retrying.
func TestRealRetriesBounded(t *testing.T) {
	t.Parallel()
	const timeout = 25 * time.Second
	r := runReal(t, nil, piRun{prompt: "Fail slowly. " + string(mockllm.ServerError), settings: slowRetries,
		limits: budget.Limits{Timeout: timeout, Grace: 2 * time.Second}})
	realcli.WantErr(t, r.Fin, events.BinTimeout, events.ReasonWall, 0)
	if r.Took > timeout+5*time.Second {
		t.Errorf("run took %s, want about %s", r.Took, timeout)
	}
	wantRetrying(t, r)
}

// TestRealRetriesIdle: the same bounded by hub's idle timeout: pi is silent
// while it backs off (30 s here), so an idle timeout of 14 s, longer than
// pi's start-up, stops it in its first backoff.
func TestRealRetriesIdle(t *testing.T) {
	t.Parallel()
	const idle = 14 * time.Second
	r := runReal(t, nil, piRun{prompt: "Fail slowly. " + string(mockllm.Overloaded), settings: slowRetries,
		limits: budget.Limits{IdleTimeout: idle, Timeout: time.Minute, Grace: 2 * time.Second}})
	realcli.WantErr(t, r.Fin, events.BinTimeout, events.ReasonIdle, 0)
	wantRetrying(t, r)
}

// wantRetrying: hub stopped pi after it had announced a retry and the model
// had been called more than once.
func wantRetrying(t *testing.T, r realRun) {
	t.Helper()
	var retries int
	for _, ev := range r.Events {
		if n, ok := ev.Body.(events.Notice); ok && n.Kind == events.NoticeRetry {
			retries++
		}
	}
	calls := len(realcli.ModelCalls(r.server))
	if retries < 1 || calls < 2 {
		t.Errorf("retry notices = %d, model calls = %d: want pi to have been retrying when hub stopped it", retries, calls)
	}
	t.Logf("stopped after %s, %d retry notices, %d model calls", r.Took.Round(time.Millisecond), retries, calls)
}

// TestRealMaxCost: pi's reported cost of the large usage ($5.55) crosses
// --max-cost $1 at that call's usage event, the last one forwarded.
func TestRealMaxCost(t *testing.T) {
	t.Parallel()
	r := runReal(t, nil, piRun{prompt: "Big. " + string(mockllm.BigUsage), settings: noRetries,
		limits: budget.Limits{MaxCostUSD: 1, Grace: 2 * time.Second}})
	realcli.WantErr(t, r.Fin, events.BinBudgetExceeded, events.ReasonCost, 0)
	if n := len(r.Events); r.Events[n-2].Type() != events.TypeUsage {
		t.Errorf("last forwarded event = %s, want the crossing usage", r.Events[n-2].Type())
	}
	if r.Fin.CostUSD == nil || math.Abs(*r.Fin.CostUSD-5.55) > 1e-9 || r.Fin.CostSource != events.CostReported {
		t.Errorf("cost = %v %s, want the reported 5.55", r.Fin.CostUSD, r.Fin.CostSource)
	}
}

// TestRealFinalAnswer: a tool loop stopped by --max-tool-steps 2 is resumed
// once, asked to answer without tools, and the resume's answer comes back
// marked partial.
func TestRealFinalAnswer(t *testing.T) {
	t.Parallel()
	srv, err := mockllm.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	r := runReal(t, srv, piRun{prompt: "Loop. " + string(mockllm.ToolLoop), settings: noRetries,
		limits: budget.Limits{MaxToolSteps: 2, Grace: 2 * time.Second}})
	realcli.CheckFinalAnswer(t, r.Fin, srv)
}

// TestRealAgentRetries: pi has no setting hub can pass, so hub counts: with
// pi set to retry 3 times, --agent-retries 1 stops it at its second retry
// notice, before the third model call, as unavailable/server.
func TestRealAgentRetries(t *testing.T) {
	t.Parallel()
	one := 1
	srv, err := mockllm.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	r := runReal(t, srv, piRun{prompt: "Fail please. " + string(mockllm.ServerError),
		settings: `{"retry": {"enabled": true, "maxRetries": 3, "baseDelayMs": 2000, "provider": {"maxRetries": 0}}}`,
		limits:   budget.Limits{Timeout: 60 * time.Second, Grace: 2 * time.Second}, agentRetries: &one})
	realcli.WantErr(t, r.Fin, events.BinUnavailable, events.ReasonServer, 0)
	if !strings.Contains(r.Fin.Error.Message, "--agent-retries 1") {
		t.Errorf("error = %q, want it to name --agent-retries 1", r.Fin.Error.Message)
	}
	retries := 0
	for _, ev := range r.Events {
		if n, ok := ev.Body.(events.Notice); ok && n.Kind == events.NoticeRetry {
			retries++
		}
	}
	if calls := len(realcli.ModelCalls(srv)); retries != 2 || calls != 2 {
		t.Errorf("%d retry notices, %d model calls; want 2 and 2 (stopped at the second retry)", retries, calls)
	}
}
