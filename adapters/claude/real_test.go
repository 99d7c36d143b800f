package claude_test

// Contract tests: the real Claude Code CLI (pinned in
// scripts/install-agents.sh) run through hub against package mockllm's
// Anthropic Messages API, offline: the shared scenarios of
// hubtest.Conformance.

import (
	"testing"
	"time"

	_ "github.com/hubcli/hub/adapters/claude"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/mockllm"
)

// agent is how Claude Code runs against the mock server, and where it
// reports differently from the other CLIs.
var agent = hubtest.Agent{
	Name: "claude",
	Configure: func(t testing.TB, e *hubtest.Env) {
		e.Env = append(e.Env, "ANTHROPIC_BASE_URL="+e.Server.URL(), "ANTHROPIC_API_KEY=x",
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "IS_SANDBOX=1")
		if e.Retries == hubtest.RetriesFew {
			// Its default is ten retries over about three minutes.
			e.Env = append(e.Env, "CLAUDE_CODE_MAX_RETRIES=1")
		}
	},
	Shell:     hubtest.ShellBashEnv,
	SessionID: hubtest.UUID,
	// Claude Code adds context (system reminders) to the prompt's message.
	Prompt:     hubtest.PromptInFirstUser,
	TextDeltas: true,
	// Claude Code prices the calls itself ($7.20 for the big usage) and
	// reports the cost only in its final result, so --max-cost cannot be
	// checked per call (a cost_unknown notice says so) and is crossed at
	// the result, with the result's totals.
	Cost: hubtest.Cost{Source: events.CostReported, AtEnd: true},
	Tool: hubtest.ToolReport{Name: "Bash", CallIDKept: true, CommandField: "command"},
	// The Messages API's overloaded status.
	ErrorStatus: map[mockllm.Scenario]int{mockllm.Overloaded: mockllm.StatusOverloaded},
	IdleTimeout: 8 * time.Second,
	// Claude runs Bash in a process group of its own; a stopped run must
	// still kill the tool and what it started.
	ToolKilledTimeout: 15 * time.Second,
	// A heading of Claude Code's own prompt (2.1.328); a replaced prompt
	// keeps only its one-line identity block.
	DefaultSystem: "# Harness",
}

// TestReal runs the conformance scenarios. AgentRetries: --agent-retries 1
// becomes CLAUDE_CODE_MAX_RETRIES=1. FailFast: with Claude's default
// retries (ten, about three minutes for a 401), hub stops it at the first
// retry notice. FinalAnswer: the tools stay defined in the resume (with
// --tools= Claude Code got the mock's 400, as from the Anthropic API).
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

// TestRealSystemPrompt: --system-prompt and --append-system-prompt reach
// the model through --system-prompt-file and --append-system-prompt-file.
func TestRealSystemPrompt(t *testing.T) {
	t.Parallel()
	hubtest.SystemPrompts(t, agent)
}
