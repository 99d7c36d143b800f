package opencode_test

// Contract tests: the real OpenCode CLI (pinned in scripts/install-agents.sh)
// run through hub against package mockllm's Chat Completions API, offline:
// the shared scenarios of hubtest.Conformance, then OpenCode's own.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub"
	_ "github.com/hubcli/hub/adapters/opencode"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
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
     "limit": {"context": 128000, "output": 8192}}}}}}`, baseURL+"/v1", hubtest.MockPrices.In, hubtest.MockPrices.Out, hubtest.MockPrices.CacheRead, hubtest.MockPrices.CacheWrite)
}

var exitOne = 1

// agent is how OpenCode runs against the mock server, and where it reports
// differently from the other CLIs.
var agent = hubtest.Agent{
	Name:  "opencode",
	Model: "mock/mock-model",
	// OpenCode has no retry setting: Env.Retries changes nothing.
	Configure: func(t testing.TB, e *hubtest.Env) {
		cfg := e.Write(t, "opencode.json", config(e.Server.URL()))
		e.Env = append(e.Env, "OPENCODE_CONFIG="+cfg, "OPENCODE_DISABLE_MODELS_FETCH=1")
	},
	Shell:        hubtest.ShellBashEnv,
	SessionID:    regexp.MustCompile(`^ses_[0-9A-Za-z]+$`),
	SessionModel: "mock/mock-model",
	// The only model call is the one whose usage the stream reports: hub's
	// --title keeps OpenCode from a hidden title-generation call.
	CallModel: "mock-model",
	Prompt:    hubtest.PromptFirstUser,
	// The first step's reported cost of the big usage, by hand: 500 000 ×
	// $3 + 250 000 × $15 + 1 000 000 × $0.30 per million = $5.55; it
	// crosses --max-cost $1 and OpenCode's compaction calls never happen.
	Cost: hubtest.Cost{Source: events.CostReported, Prices: &hubtest.MockPrices, Big: 5.55},
	// OpenCode runs its bash tool in a process group of its own and ignores
	// SIGTERM while the tool runs; it reports the call once it has run.
	Tool: hubtest.ToolReport{Name: "bash", CallIDKept: true, CommandField: "command", ExitCode: true, AfterRun: true},
	// Usage over the model's 128k context makes OpenCode compact the
	// session: more model calls follow the big one, each its own step.
	Compaction:        hubtest.CompactCalls,
	ErrorExit:         &exitOne,
	IdleTimeout:       12 * time.Second, // about OpenCode's start-up time on an idle 2-core machine; Retry doubles it
	ToolKilledTimeout: 25 * time.Second,
	Skip: map[string]string{
		"FailFast": "OpenCode reports a 401 once, with no retry notice before it: there is no retry to stop (seen: Errors/MOCK_401 ends unavailable/auth by itself); TestRealQuotaFailFast stops a retried quota error",
	},
	// OpenCode has no retry setting; its log (on stderr, which hub asks
	// for) names each failed call, which hub counts, without a status.
	HubCountsRetries:   true,
	RetryStatusUnknown: true,
	// The first line of OpenCode's default prompt for the provider (1.18.33).
	DefaultSystem: "You are opencode, an interactive CLI tool",
}

// TestReal runs the conformance scenarios. Errors: the mock's retry-after
// makes OpenCode's own retries of 429 and 5xx quick (it honours
// retry-after-ms); TestRealDefaultRetriesBoundedByTimeout covers the slow
// way. FinalAnswer: the resume runs hub's own agent, which may run no tool.
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

// TestRealDefaultRetriesBoundedByTimeout: with OpenCode's own backoff (no
// retry-after), a failing provider keeps it silent for minutes; hub's wall
// timeout ends the run on time.
func TestRealDefaultRetriesBoundedByTimeout(t *testing.T) {
	t.Parallel()
	// OpenCode must have reached the failing provider, and be in its
	// backoff (2.4, 4.4, 8.9, 19, 37 s here), when hub stops it. How many
	// calls it made depends on its start-up time, which load stretches:
	// with none, the timeout ran out in the start-up and the attempt tested
	// nothing (hubtest.Retry).
	hubtest.Retry(t, 20*time.Second, func(timeout time.Duration) bool {
		e := agent.Prepare(t, hubtest.Setup{Retries: hubtest.RetriesDefault})
		lim := budget.Limits{Timeout: timeout, Grace: 2 * time.Second}
		r := e.Run(t, "Fail slowly. "+string(mockllm.ServerError), lim)
		hubtest.WantErr(t, r.Fin, events.BinTimeout, events.ReasonWall, 0)
		hubtest.WantTook(t, r, lim)
		// Its log named the failed call (a retry notice): the timeout's
		// message says what it was retrying.
		if len(r.Notices(events.NoticeRetry)) == 0 {
			return false
		}
		if !strings.Contains(r.Fin.Error.Message, "while the agent was retrying a failed model call (unavailable/server") {
			t.Errorf("message %q does not say what OpenCode was retrying", r.Fin.Error.Message)
		}
		return true
	})
}

// TestRealFinalAnswerRunsNoTool: a model that calls a tool whatever it is
// told (MOCK_TOOLFOREVER). OpenCode reports a tool call only once it has run,
// so tool call 2, the crossing one, has run; in the resume, OpenCode asks for
// permission, cannot, and rejects the call: it runs nothing more, even with
// the caller's own inline config allowing every tool, and hub ends the
// resume without a final answer. The run is granted --permission full
// (the default, read-only, offers no bash). Each run of the tool appends a
// line to a file (BASH_ENV) with the time it ran. The first process may
// run one more call after the crossing: OpenCode ignores SIGTERM while a
// tool runs, and the mock answers its next model call at once (a clean
// clone's CI saw tool 3 run there); the resume starts only once that
// process is gone, and must run none.
func TestRealFinalAnswerRunsNoTool(t *testing.T) {
	t.Parallel()
	e := agent.Prepare(t, hubtest.Setup{})
	marks := filepath.Join(e.Dir, "marks")
	e.ShellInit(t, "builtin echo ran $(date +%s%N) >> "+marks+"\n")
	e.Env = append(e.Env, `OPENCODE_CONFIG_CONTENT={"permission":{"*":"allow"}}`)
	r := e.Run(t, "Loop. "+string(mockllm.ToolForever), budget.Limits{MaxToolSteps: 1, Grace: 2 * time.Second}, hubtest.GrantFull)
	hubtest.WantErr(t, r.Fin, events.BinBudgetExceeded, events.ReasonToolSteps, 0)
	if r.Fin.Partial || !strings.Contains(r.Fin.Error.Message, "called a tool during the final-answer resume") {
		t.Errorf("run.finished partial=%v error %q, want no final answer because the resume called a tool", r.Fin.Partial, r.Fin.Error.Message)
	}
	// The resume's first event: the second session.started.
	var resumed time.Time
	n := 0
	for _, ev := range r.Events {
		if _, ok := ev.Body.(events.SessionStarted); ok {
			if n++; n == 2 {
				resumed = ev.TS
			}
		}
	}
	if resumed.IsZero() {
		t.Fatal("no resume: one session.started")
	}
	b, _ := os.ReadFile(marks)
	var before, after int
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var ns int64
		if _, err := fmt.Sscanf(l, "ran %d", &ns); err != nil {
			t.Fatalf("mark %q: %v", l, err)
		}
		if time.Unix(0, ns).Before(resumed) {
			before++
		} else {
			after++
		}
	}
	if before < 2 || after != 0 {
		t.Errorf("the tool ran %d times before the resume and %d after, want 2 or more (the crossing call had run before OpenCode reported it) and none in the resume", before, after)
	}
}

// TestRealQuotaFailFast: OpenCode retries a 429 insufficient_quota for more
// than a minute, silent on stdout (testdata/opencode/quota). Its log line of
// the first failed call (hub passes --print-logs) is a retry notice, and
// hub stops it there: a quota does not lift by retrying.
func TestRealQuotaFailFast(t *testing.T) {
	t.Parallel()
	e := agent.Prepare(t, hubtest.Setup{Retries: hubtest.RetriesDefault})
	lim := budget.Limits{Grace: 2 * time.Second, Timeout: 3 * time.Minute}
	r := e.Run(t, "Fail please. "+string(mockllm.Quota), lim)
	hubtest.WantErr(t, r.Fin, events.BinUnavailable, events.ReasonQuota, 0)
	if n := len(r.Notices(events.NoticeRetry)); n != 1 {
		t.Errorf("%d retry notices, want 1 (stopped at the first)", n)
	}
	if calls := len(hubtest.ModelCalls(e.Server)); calls > 2 {
		t.Errorf("%d model calls: hub did not stop the retries", calls)
	}
	if !strings.Contains(r.Fin.Error.Message, "exceeded your current quota") {
		t.Errorf("message %q does not quote the provider", r.Fin.Error.Message)
	}
}

// TestRealConfigErrors: OpenCode's own configuration, broken. An
// opencode.json that is not valid JSON is not_configured, its path in the
// message, its content (API keys) in no event; a provider it does not know
// is bad_model with OpenCode's own words, from its log (the error event
// says only "Unexpected server error").
func TestRealConfigErrors(t *testing.T) {
	t.Parallel()
	t.Run("invalid json", func(t *testing.T) {
		t.Parallel()
		e := agent.Prepare(t, hubtest.Setup{})
		const key = "sk-CanaryKey0123456789abcdefXYZ"
		cfg := e.Write(t, "opencode.json", `{"provider": {"mock": {"options": {"apiKey": "`+key+`"}}} "oops": 1}`)
		r := e.Run(t, "Say hello. "+string(mockllm.Text), budget.Limits{Timeout: 2 * time.Minute},
			func(req *hub.Request) { req.Env = append(req.Env, "OPENCODE_CONFIG="+cfg) })
		hubtest.WantErr(t, r.Fin, events.BinUnavailable, events.ReasonNotConfigured, 0)
		if !strings.Contains(r.Fin.Error.Message, cfg) {
			t.Errorf("message %q does not name %s", r.Fin.Error.Message, cfg)
		}
		for _, ev := range r.Events {
			if b, _ := ev.MarshalJSON(); strings.Contains(string(b), "Canary") {
				t.Errorf("the config's key is in an event: %s", b)
			}
		}
	})
	t.Run("unknown provider", func(t *testing.T) {
		t.Parallel()
		e := agent.Prepare(t, hubtest.Setup{})
		r := e.Run(t, "Say hello. "+string(mockllm.Text), budget.Limits{Timeout: 2 * time.Minute},
			func(req *hub.Request) { req.Model = "nope/x" })
		hubtest.WantErr(t, r.Fin, events.BinInvalidInput, events.ReasonBadModel, 0)
		if !strings.Contains(r.Fin.Error.Message, "nope/x") {
			t.Errorf("message %q does not name the model", r.Fin.Error.Message)
		}
	})
}

// TestRealSystemPrompt: --system-prompt and --append-system-prompt reach
// the model, one-shot and in a live session (hubtest.SystemPrompts).
func TestRealSystemPrompt(t *testing.T) {
	t.Parallel()
	hubtest.SystemPrompts(t, agent)
}
