package codex_test

// Contract tests: the real Codex CLI (pinned in scripts/install-agents.sh)
// run through hub against package mockllm's OpenAI Responses API, offline:
// the shared scenarios of hubtest.Conformance, then Codex's own.

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub"
	_ "github.com/hubcli/hub/adapters/codex"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/mockllm"
)

// model is the model the tests' config names; hub's price table has it.
const model = "gpt-5.5"

// gpt55 is gpt-5.5's price in USD per million tokens, as
// budget.DefaultPrices has it, written out so the expected costs are
// computed by hand and not by the code under test.
var gpt55 = hubtest.Prices{In: 5.00, CacheRead: 0.50, Out: 30.00}

// agent is how Codex runs against the mock server, and where it reports
// differently from the other CLIs.
var agent = hubtest.Agent{
	Name:      "codex",
	Configure: configure,
	// Codex runs `bash -lc '<command>'`.
	Shell:        hubtest.ShellLogin,
	SessionID:    hubtest.UUID,
	SessionModel: model, // from CODEX_HOME/config.toml
	CallModel:    model,
	// Codex sends context messages (AGENTS.md, environment) first.
	Prompt:     hubtest.PromptLastUser,
	Reasoning:  true,
	TextEvents: []events.Type{events.TypeRunStarted, events.TypeSessionStarted, events.TypeReasoning, events.TypeMessage, events.TypeUsage, events.TypeRunFinished},
	// Codex reports no cost: hub estimates it. By hand: Text 800 × $5 +
	// 200 × $0.50 + 50 × $30 per million = $0.0056; BigUsage 500 000 × $5
	// + 1 000 000 × $0.50 + 250 000 × $30 per million = $10.50, which
	// crosses --max-cost $1 at the turn's usage event.
	Cost: hubtest.Cost{Source: events.CostEstimated, Prices: &gpt55, Text: 0.0056, Big: 10.50},
	// One Codex turn holds both model calls of a tool run, and Codex
	// prefixes the command's output with its own lines.
	Tool: hubtest.ToolReport{Name: "command_execution", ExitCode: true, OutputWrapped: true, Turns: 1},
	// Codex's failures are English sentences without the status for a 5xx.
	ErrorStatus: map[mockllm.Scenario]int{mockllm.ServerError: 0, mockllm.Overloaded: 0},
	IdleTimeout: 8 * time.Second,
	// Below unified exec's 10 s yield, after which the turn would end with
	// the command left running (TestRealToolOutlivesTurn). Stopping the run
	// must kill the tool, the native binary and the Node wrapper.
	ToolKilledTimeout: 6 * time.Second,
	// A phrase of Codex's own base instructions (0.169.0).
	DefaultSystem: "You have a vivid inner life as Codex",
}

// configure writes a CODEX_HOME whose config.toml points Codex at the
// server (REAL-CLIS.md); with RetriesFew it retries a request and a stream
// once instead of 4 and 5 times.
func configure(t testing.TB, e *hubtest.Env) {
	knobs := ""
	if e.Retries == hubtest.RetriesFew {
		knobs = "request_max_retries = 1\nstream_max_retries = 1\n"
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
%s`, model, e.Server.URL(), knobs)
	path := e.Write(t, filepath.Join("codex-home", "config.toml"), config)
	e.Env = append(e.Env, "CODEX_HOME="+filepath.Dir(path), "MOCK_API_KEY=x")
}

// TestReal runs the conformance scenarios. Errors: every one fails after
// Codex gave its thread id. AgentRetries: --agent-retries 1 sets the
// retries of the provider config.toml selects (here "mock", left at
// Codex's defaults in the file). FailFast: hub stops a 401 at the first
// "Reconnecting" notice. FinalAnswer: the resume is `exec resume` in a
// read-only sandbox; Codex cannot switch its tools off, so they are still
// offered.
func TestReal(t *testing.T) {
	t.Parallel()
	hubtest.Conformance(t, agent)
}

// TestRealTTY runs the Text and Tool scenarios with the CLI on a
// pseudo-terminal (hub run --tty): the same events as without.
func TestRealTTY(t *testing.T) {
	t.Parallel()
	hubtest.ConformanceTTY(t, agent)
}

// TestRealUnknownModel: a model hub has no price for gives cost null,
// cost_source unknown and a cost_unknown notice, never 0.
func TestRealUnknownModel(t *testing.T) {
	t.Parallel()
	e := agent.Prepare(t, hubtest.Setup{})
	r := e.Run(t, "Hello. "+string(mockllm.Text), budget.Limits{}, func(req *hub.Request) { req.Model = "mock-model" })
	unpriced := agent
	unpriced.Cost = hubtest.Cost{Source: events.CostUnknown}
	unpriced.WantOK(t, r, mockllm.TextAnswer)
	if n := r.Notices(events.NoticeCostUnknown); len(n) != 1 || !strings.Contains(n[0].Message, "mock-model") {
		t.Errorf("cost_unknown notices = %+v, want one naming the model", n)
	}
	if u := r.Fin.Usage; u.Input != mockllm.PromptTokens-mockllm.CachedTokens || u.Output != mockllm.CompletionTokens {
		t.Errorf("usage = %+v: tokens must still be counted", u)
	}
	if calls := hubtest.ModelCalls(e.Server); len(calls) == 0 || calls[0].Model != "mock-model" {
		t.Errorf("model calls = %+v, want --model passed to codex", calls)
	}
}

// TestRealResume: a second run resumes the first one's session; Codex then
// reports the session's running total, which hub passes on and flags.
func TestRealResume(t *testing.T) {
	t.Parallel()
	e := agent.Prepare(t, hubtest.Setup{})
	first := e.Run(t, "First. "+string(mockllm.Text), budget.Limits{})
	agent.WantOK(t, first, mockllm.TextAnswer)
	second := e.Run(t, "Second. "+string(mockllm.Text), budget.Limits{}, func(req *hub.Request) { req.Resume = *first.Fin.SessionID })
	agent.WantOK(t, second, mockllm.TextAnswer)
	if *second.Fin.SessionID != *first.Fin.SessionID {
		t.Errorf("resumed session id = %s, want %s", *second.Fin.SessionID, *first.Fin.SessionID)
	}
	hubtest.CheckUsage(t, second.Fin.Usage, gpt55, 2*(mockllm.PromptTokens-mockllm.CachedTokens), 2*mockllm.CompletionTokens, 2*mockllm.CachedTokens)
	flagged := false
	for _, n := range second.Notices(events.NoticeCostUnknown) {
		flagged = flagged || strings.Contains(n.Message, "resumed session")
	}
	if !flagged {
		t.Error("no notice that a resumed run's usage includes earlier turns")
	}

	// An unknown id, and one that is not a UUID (codex would take it for a
	// thread name and silently start a new session).
	for _, id := range []string{"00000000-0000-0000-0000-000000000000", "no-such-thread"} {
		bad := e.Run(t, "Third. "+string(mockllm.Text), budget.Limits{}, func(req *hub.Request) { req.Resume = id })
		hubtest.WantErr(t, bad.Fin, events.BinInvalidInput, events.ReasonBadSession, 0)
	}
}

// TestRealToolOutlivesTurn: Codex's unified exec returns after its yield
// time (10 s) with a slow command still running in the background, and the
// turn completes. The run is ok, the tool call is closed as an error, and
// the background command dies with the run (RunChecked checks Leftovers).
func TestRealToolOutlivesTurn(t *testing.T) {
	t.Parallel()
	e := agent.Prepare(t, hubtest.Setup{})
	e.ShellInit(t, hubtest.SlowEcho)
	r := e.Run(t, "Run it. "+string(mockllm.Tool), budget.Limits{Grace: 2 * time.Second})
	agent.WantOK(t, r, "")
	started, finished := r.Tool()
	if started == nil || finished == nil || finished.CallID != started.CallID || finished.Status != events.ToolError {
		t.Errorf("tool.started %+v, tool.finished %+v: want the still-running call closed as an error", started, finished)
	}
}

// TestRealSystemPrompt: --system-prompt and --append-system-prompt reach
// the model, one-shot and in a live session (hubtest.SystemPrompts).
func TestRealSystemPrompt(t *testing.T) {
	t.Parallel()
	hubtest.SystemPrompts(t, agent)
}
