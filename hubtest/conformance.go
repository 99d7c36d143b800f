package hubtest

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/mockllm"
)

// Agent is what [Conformance] needs to know of one agent CLI: how to point
// it at the mock server, and what it truly reports differently from the
// others. The zero value of a field is the common case where there is one.
type Agent struct {
	// Name is the adapter's registered name and the CLI binary's (Bin).
	Name string
	// Model is Request.Model of every run ("": the model the CLI's config
	// names).
	Model string
	// Configure points a fresh Env's CLI at e.Server, as e.Retries asks:
	// it writes the CLI's config files under e.Dir and appends to e.Env.
	Configure func(t testing.TB, e *Env)
	// Shell is how the CLI's shell tool starts bash.
	Shell Shell
	// Slots, if not nil, bounds how many runs of the CLI go at once: a run
	// holds one of its cap(Slots) places (see TakeSlot).
	Slots chan struct{}
	// Skip names the scenarios of Scenarios the agent cannot play, each
	// with the reason, which the subtest skips with; and, as
	// "Session/<name>", LiveSessions' Interrupt, InterruptAtOnce and
	// TurnTimeout.
	Skip map[string]string

	// SessionID is the shape of the CLI's session ids (nil: any non-empty).
	SessionID *regexp.Regexp
	// SessionModel is the model session.started reports ("": unchecked).
	SessionModel string
	// CallModel is the model the mock server must be asked for ("":
	// unchecked).
	CallModel string
	// Prompt is where the prompt must arrive, byte for byte.
	Prompt PromptCheck
	// TextDeltas says the CLI streams its answer (text.delta events that
	// join to it); without it there must be none.
	TextDeltas bool
	// Reasoning says the wire API streams the mock's reasoning summary
	// (Responses), which must come out as a reasoning event.
	Reasoning bool
	// TextEvents are the types of the events of a plain answer, without
	// text.delta (nil: run.started, session.started, message, usage,
	// run.finished).
	TextEvents []events.Type
	// Cost is how the CLI's cost is known and checked.
	Cost Cost
	// Tool is how the CLI reports the mock's shell tool call.
	Tool ToolReport
	// Compaction is what the CLI does after a call whose usage is far over
	// the model's context window (BigUsage).
	Compaction Compaction
	// ErrorStatus is the HTTP status each error scenario's run.finished
	// must carry where it differs from the mock's (Unauthorized 401,
	// RateLimited 429, ServerError 500, Overloaded 503); 0 is none. An
	// overflow carries none unless given here.
	ErrorStatus map[mockllm.Scenario]int
	// ErrorExit, if not nil, is the exit status the CLI ends every error
	// scenario with.
	ErrorExit *int
	// OneCallPerError says that with RetriesFew the CLI makes exactly one
	// model call per error scenario (at least one after an overflow, which
	// may start a compaction).
	OneCallPerError bool
	// IdleTimeout is the idle timeout of the Idle scenario's first attempt:
	// about the CLI's start-up time. An attempt whose limit ran out before
	// the CLI called the model runs again with twice the limit ([Retry]).
	IdleTimeout time.Duration
	// ToolKilledTimeout is the wall timeout that stops the ToolKilled
	// scenario's hung tool in its first attempt: after the tool started,
	// and before anything of the CLI's own would end it. An attempt whose
	// timeout ran out before the tool ran runs again with twice the limit.
	ToolKilledTimeout time.Duration
	// HubCountsRetries says hub cannot pass the CLI a retry count (pi): for
	// --agent-retries N it stops the run at retry notice N+1 and says so in
	// the error; otherwise the CLI retries N times and fails by itself.
	HubCountsRetries bool
	// RetryStatusUnknown says the CLI's retry notices carry no HTTP status
	// (OpenCode logs only the error's text): a run stopped by
	// --agent-retries has none either.
	RetryStatusUnknown bool
	// Session, when not nil, edits the request of each session the
	// session tests start (LiveSessions, SessionLatency), after Name's
	// binary, Model and the Env are set: an ACP adapter of the CLI driven
	// through --agent acp sets Agent, Bin and its environment there.
	Session func(req *hub.Request)
	// DefaultSystem is a phrase of the CLI's own system prompt, which a
	// replaced one (Request.SystemPrompt) removes ([SystemPrompts]).
	DefaultSystem string
}

// PromptCheck is where the prompt must arrive in the first model call.
type PromptCheck int

const (
	// PromptFirstUser: the first user message's text is the prompt.
	PromptFirstUser PromptCheck = iota
	// PromptLastUser: the last user message's text is the prompt; the CLI
	// sends context messages before it (Codex).
	PromptLastUser
	// PromptInFirstUser: the first user message's text holds the prompt;
	// the CLI adds context around it in the same message (Claude Code).
	PromptInFirstUser
)

// Cost is how an agent's cost is known.
type Cost struct {
	// Source is run.finished's cost_source on success.
	Source events.CostSource
	// Prices, if set, are the prices cost must be computed at, by hand:
	// the agent's config (MockPrices) or hub's price table. nil: the CLI
	// prices it and the test cannot; a success must then cost more than 0,
	// and BigUsage at least $1.
	Prices *Prices
	// AtEnd says the CLI reports cost only in its final result (Claude
	// Code): per-call cost is unknown (one cost_unknown notice) and a cost
	// budget is crossed at the result.
	AtEnd bool
	// Text and Big are the costs of one Text and one BigUsage call worked
	// out by hand in USD (0: unchecked), checked to 1e-12 and 1e-9 USD.
	Text, Big float64
}

// ToolReport is how an agent reports the mock's shell tool call
// ([mockllm.Tool]).
type ToolReport struct {
	// Name is tool.started's name ("": unchecked).
	Name string
	// CallIDKept says the call id is the mock model's
	// ([mockllm.ToolCallID]), not one of the CLI's own.
	CallIDKept bool
	// CommandField is the input field that holds exactly the mock's
	// command; "": the CLI wraps the command (Codex: bash -lc '…'), which
	// the input need only contain.
	CommandField string
	// ExitCode says tool.finished carries the command's exit code.
	ExitCode bool
	// OutputWrapped says the CLI adds text of its own to the tool's output
	// before the model sees it, so the answer quotes the output but is not
	// exactly [mockllm.ToolAnswerPrefix] + [mockllm.ToolOutput].
	OutputWrapped bool
	// Turns is run.finished's turns after the tool call and the answer
	// (0: 2, one per model call; Codex counts its one turn).
	Turns int64
	// AfterRun says the CLI reports a tool call only once it has run
	// (OpenCode): a tool stopped while it runs leaves no tool.started.
	AfterRun bool
}

// Compaction is what an agent does after a call over its context window.
type Compaction int

const (
	// CompactNone: nothing; the call is the run's only one.
	CompactNone Compaction = iota
	// CompactCalls: it compacts the session with more model calls, each
	// reported by its own usage event (OpenCode).
	CompactCalls
	// CompactNotice: it starts compacting, which hub reports as a
	// compaction notice, and ends there (pi in print mode).
	CompactNotice
)

// Scenarios are the names of the subtests Conformance runs.
var Scenarios = []string{"Text", "Tool", "BigUsage", "Errors", "Provider", "Idle", "ToolKilled", "MaxCost", "FinalAnswer", "AgentRetries", "FailFast"}

// UUID matches a session id that is a UUID, as Claude Code's, Codex's
// and pi's are (for Agent.SessionID).
var UUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TextPrompt is the prompt of the Text scenario: flags, a lone dash, quotes,
// doubled spaces and a newline, none of which may be read as an option or
// changed on the way to the model.
const TextPrompt = "--help -v \"quoted\"  two  spaces -\nsecond line. Say hello. " + string(mockllm.Text)

// GrantFull is a request edit for [Env.Run]: the run gets
// grant.Full, for a test whose mock model calls a shell tool
// that the default grant (read-only) may not offer. It is what the
// scenarios of Conformance that run a tool (Tool, ToolKilled, FinalAnswer)
// use; hub's own --yes rule is the CLI's, not the library's.
func GrantFull(req *hub.Request) { req.Permission = grant.Full }

// grace is the grace period of the scenarios that stop the CLI.
const grace = 2 * time.Second

// Conformance runs a's real CLI through hub against the mock server in the
// shared scenarios, each a parallel subtest of t named as in Scenarios:
//
//   - Text: a plain answer; the prompt arrives byte for byte; tokens, cost,
//     one turn, one model call, the event types.
//   - Tool: one shell tool call and the answer quoting its output.
//   - BigUsage: a call reporting huge usage, summed and priced right.
//   - Errors: 401 (with and without fail-fast), 429, 500, 503 and context
//     overflow end in their bins.
//   - Provider: the failures CLIs report vaguely end in their bins: quota
//     and payment (the providers' bodies, HTTP 402), an unknown model, a
//     connection refused, dropped before any response or cut mid-stream
//     (unavailable/network, never server), and an error the provider
//     sends inside a stream it began (a model that needs a newer CLI:
//     invalid_input/bad_model; a server error: unavailable/server).
//   - Idle: a provider that never answers (hang) or stops mid-stream
//     (stall) ends by hub's idle timeout, in about that time (WantQuiet).
//   - ToolKilled: a run stopped by its wall timeout while the tool hangs
//     leaves no process behind, and ends on time (WantTook).
//   - MaxCost: the big usage crosses --max-cost $1.
//   - FinalAnswer: a tool loop stopped by --max-tool-steps 2 is resumed
//     for a final answer (CheckFinalAnswer).
//   - AgentRetries: --agent-retries 1 bounds the CLI's retries of a 500.
//   - FailFast: with the CLI's default retries, hub stops a 401 at its
//     first retry notice.
//
// The runs that call a tool (Tool, ToolKilled, FinalAnswer) are granted
// grant.Full ([GrantFull]); the others run at the default
// level. Every run is checked by RunChecked (a valid stream, nothing left
// running). A scenario in a.Skip is skipped with its reason. Conformance
// fails t at once if a.Skip names an unknown scenario or a.Configure is
// nil, and fails the scenario that needs a setting left unset (Idle:
// IdleTimeout; ToolKilled: ToolKilledTimeout). The adapter must be
// registered. Call it once per agent, from a test that may run in parallel
// with others.
func Conformance(t *testing.T, a Agent) {
	t.Helper()
	for name := range a.Skip {
		if !slices.Contains(Scenarios, name) {
			t.Fatalf("Agent.Skip names %q, not one of %v", name, Scenarios)
		}
	}
	if a.Configure == nil {
		t.Fatal("Agent.Configure is nil: nothing points the CLI at the mock server")
	}
	runScenarios(t, a, []scenario{
		{"Text", conformText},
		{"Tool", conformTool},
		{"BigUsage", conformBigUsage},
		{"Errors", conformErrors},
		{"Provider", conformProvider},
		{"Idle", conformIdle},
		{"ToolKilled", conformToolKilled},
		{"MaxCost", conformMaxCost},
		{"FinalAnswer", conformFinalAnswer},
		{"AgentRetries", conformAgentRetries},
		{"FailFast", conformFailFast},
	})
}

// scenario is one of Conformance's subtests.
type scenario struct {
	name string
	run  func(*testing.T, Agent)
}

// runScenarios runs each scenario as a parallel subtest of its name,
// skipping those a.Skip names.
func runScenarios(t *testing.T, a Agent, scs []scenario) {
	for _, sc := range scs {
		t.Run(sc.name, func(t *testing.T) {
			if why, ok := a.Skip[sc.name]; ok {
				t.Skip(why)
			}
			t.Parallel()
			sc.run(t, a)
		})
	}
}

// ConformanceTTY runs Conformance's Text and Tool scenarios (subtests of
// those names) with the CLI on a pseudo-terminal ([Env.TTY],
// Request.TTY, `hub run --tty`, SPEC §6.4): the same answer, usage, cost,
// tool events and event types as without — a CLI that drew a spinner,
// coloured its JSON or printed a prompt on a terminal would fail them —
// and the CLI's stdout and stderr really were terminals and its stdin not
// (read from /proc while it ran). A scenario in a.Skip is skipped as in
// Conformance.
func ConformanceTTY(t *testing.T, a Agent) {
	t.Helper()
	if a.Configure == nil {
		t.Fatal("Agent.Configure is nil: nothing points the CLI at the mock server")
	}
	configure := a.Configure
	a.Configure = func(t testing.TB, e *Env) {
		configure(t, e)
		e.TTY = true
	}
	runScenarios(t, a, []scenario{{"Text", conformText}, {"Tool", conformTool}})
}

// WantOK fails t unless r is a success (fatally) with text (unless ""), a
// session id of a's shape (SessionID), exit status 0, and a cost of
// a.Cost.Source: above 0, or null if the source is unknown.
func (a Agent) WantOK(t testing.TB, r Result, text string) {
	t.Helper()
	if !r.Fin.OK {
		t.Fatalf("run.finished not ok: %v", r.Fin.Error)
	}
	if text != "" && r.Fin.Text != text {
		t.Errorf("text = %q, want %q", r.Fin.Text, text)
	}
	if id := r.Fin.SessionID; id == nil || *id == "" || a.SessionID != nil && !a.SessionID.MatchString(*id) {
		t.Errorf("session_id = %v, want one matching %v", id, a.SessionID)
	}
	if r.Fin.ExitCode == nil || *r.Fin.ExitCode != 0 {
		t.Errorf("exit_code = %v, want 0", r.Fin.ExitCode)
	}
	if c := r.Fin.CostUSD; r.Fin.CostSource != a.Cost.Source || (a.Cost.Source == events.CostUnknown) != (c == nil) || c != nil && *c <= 0 {
		t.Errorf("cost = %v %s, want %s (null if unknown, else above 0)", c, r.Fin.CostSource, a.Cost.Source)
	}
}

// wantTotals: run.finished's tokens are these, priced at the agent's
// prices if it has them, and the sum of the usage events' steps (each
// model call counted once).
func wantTotals(t *testing.T, a Agent, r Result, in, out, cacheRead int64) {
	t.Helper()
	if a.Cost.Prices != nil {
		CheckUsage(t, r.Fin.Usage, *a.Cost.Prices, in, out, cacheRead)
	} else {
		CheckTokens(t, r.Fin.Usage, in, out, cacheRead)
	}
	var sum events.Tokens
	for _, u := range r.Usages() {
		sum = sum.Add(u.Step)
	}
	if u := r.Fin.Usage; sum.Input != u.Input || sum.Output != u.Output || sum.CacheRead != u.CacheRead || sum.CacheWrite != u.CacheWrite {
		t.Errorf("usage events sum to %+v, run.finished says %+v: a model call counted twice or missed", sum, u)
	}
}

// wantCost: cost is want (hand-computed; 0 skips the check) within tol USD.
func wantCost(t *testing.T, what string, got *float64, want, tol float64) {
	t.Helper()
	if want != 0 && (got == nil || math.Abs(*got-want) > tol) {
		t.Errorf("%s cost = %v, want %v", what, got, want)
	}
}

func conformText(t *testing.T, a Agent) {
	e := a.Prepare(t, Setup{})
	r := e.Run(t, TextPrompt, budget.Limits{})
	a.WantOK(t, r, mockllm.TextAnswer)
	wantTotals(t, a, r, mockllm.PromptTokens-mockllm.CachedTokens, mockllm.CompletionTokens, mockllm.CachedTokens)
	wantCost(t, "run.finished", r.Fin.CostUSD, a.Cost.Text, 1e-12)
	if r.Fin.Turns != 1 || r.Fin.ToolCalls != 0 {
		t.Errorf("turns=%d tool_calls=%d, want 1, 0", r.Fin.Turns, r.Fin.ToolCalls)
	}
	calls := ModelCalls(e.Server)
	if len(calls) != 1 {
		t.Fatalf("model calls = %+v, want 1 (no hidden call)", calls)
	}
	if a.CallModel != "" && calls[0].Model != a.CallModel {
		t.Errorf("model call asked for %q, want %q", calls[0].Model, a.CallModel)
	}
	switch a.Prompt {
	case PromptFirstUser:
		if calls[0].UserText != TextPrompt {
			t.Errorf("model got user text %q, want the prompt %q byte for byte", calls[0].UserText, TextPrompt)
		}
	case PromptLastUser:
		if calls[0].LastUserText != TextPrompt {
			t.Errorf("model got last user text %q, want the prompt %q byte for byte", calls[0].LastUserText, TextPrompt)
		}
	case PromptInFirstUser:
		if !strings.Contains(calls[0].UserText, TextPrompt) {
			t.Errorf("model got user text %q, want it to hold the prompt %q byte for byte", calls[0].UserText, TextPrompt)
		}
	}
	if d := r.Deltas(); a.TextDeltas && d != mockllm.TextAnswer {
		t.Errorf("text.delta events = %q, want the answer streamed", d)
	} else if !a.TextDeltas && d != "" {
		t.Errorf("text.delta events = %q, want none (Agent.TextDeltas is false)", d)
	}
	want := a.TextEvents
	if want == nil {
		want = []events.Type{events.TypeRunStarted, events.TypeSessionStarted, events.TypeMessage, events.TypeUsage, events.TypeRunFinished}
	}
	// What the CLI writes on stderr is its own (Codex warns when its home
	// is under /tmp, as a test's is): stderr notices are not the shape of
	// an answer's events.
	var got []events.Type
	for _, ev := range r.Events {
		if n, ok := ev.Body.(events.Notice); ok && n.Kind == events.NoticeStderr {
			continue
		}
		if ev.Type() != events.TypeTextDelta {
			got = append(got, ev.Type())
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("event types (without text.delta and stderr notices) = %v, want %v", got, want)
	}
	reasoning := false
	for _, ev := range r.Events {
		switch b := ev.Body.(type) {
		case events.Reasoning:
			reasoning = reasoning || b.Text == mockllm.ReasoningSummary
		case events.SessionStarted:
			if a.SessionModel != "" && (b.Model == nil || *b.Model != a.SessionModel) {
				t.Errorf("session.started model = %v, want %s", b.Model, a.SessionModel)
			}
		}
	}
	if a.Reasoning && !reasoning {
		t.Errorf("no reasoning event with the model's summary %q", mockllm.ReasoningSummary)
	}
	t.Logf("text in %s", r.Took.Round(time.Millisecond))
}

func conformTool(t *testing.T, a Agent) {
	e := a.Prepare(t, Setup{})
	r := e.Run(t, "Run the marker command. "+string(mockllm.Tool), budget.Limits{}, GrantFull)
	if a.Tool.OutputWrapped {
		a.WantOK(t, r, "")
		if !strings.HasPrefix(r.Fin.Text, mockllm.ToolAnswerPrefix) || !strings.Contains(r.Fin.Text, mockllm.ToolOutput) {
			t.Errorf("text = %q, want the model's answer quoting the tool output", r.Fin.Text)
		}
	} else {
		a.WantOK(t, r, mockllm.ToolAnswerPrefix+mockllm.ToolOutput)
	}
	started, finished := r.Tool()
	if started == nil || started.Kind != events.ToolShell || a.Tool.Name != "" && started.Name != a.Tool.Name ||
		a.Tool.CallIDKept && started.CallID != mockllm.ToolCallID {
		got := "none"
		if started != nil {
			got = fmt.Sprintf("%s %s/%s input %s", started.CallID, started.Name, started.Kind, started.Input)
		}
		t.Fatalf("tool.started = %s, want %s/shell (the mock's call id %s: %v)", got, a.Tool.Name, mockllm.ToolCallID, a.Tool.CallIDKept)
	}
	if f := a.Tool.CommandField; f != "" && jsonField(started.Input, f) != mockllm.ToolCommand ||
		f == "" && !strings.Contains(string(started.Input), mockllm.ToolCommand) {
		t.Errorf("tool input = %s, want the command %q (in field %q)", started.Input, mockllm.ToolCommand, f)
	}
	if finished == nil || finished.Status != events.ToolOK || strings.TrimSpace(finished.Output) != mockllm.ToolOutput ||
		finished.CallID != started.CallID || finished.OutputBytes != int64(len(finished.Output)) ||
		a.Tool.ExitCode && (finished.ExitCode == nil || *finished.ExitCode != 0) {
		t.Errorf("tool.finished = %+v, want ok, output %q (all of it), for %s (exit 0: %v)", finished, mockllm.ToolOutput, started.CallID, a.Tool.ExitCode)
	}
	turns := a.Tool.Turns
	if turns == 0 {
		turns = 2
	}
	if r.Fin.Turns != turns || r.Fin.ToolCalls != 1 {
		t.Errorf("turns=%d tool_calls=%d, want %d, 1", r.Fin.Turns, r.Fin.ToolCalls, turns)
	}
	wantTotals(t, a, r, 2*(mockllm.PromptTokens-mockllm.CachedTokens), 2*mockllm.CompletionTokens, 2*mockllm.CachedTokens)
	if calls := ModelCalls(e.Server); len(calls) != 2 || !calls[1].ToolResult {
		t.Errorf("model calls = %+v, want 2, the second carrying the tool result", calls)
	}
}

func conformBigUsage(t *testing.T, a Agent) {
	e := a.Prepare(t, Setup{})
	r := e.Run(t, "Big. "+string(mockllm.BigUsage), budget.Limits{})
	a.WantOK(t, r, mockllm.TextAnswer)
	in, out, cached := int64(mockllm.BigPromptTokens-mockllm.BigCachedTokens), int64(mockllm.BigCompletionTokens), int64(mockllm.BigCachedTokens)
	steps := r.Usages()
	if len(steps) == 0 {
		t.Fatal("no usage events")
	}
	// The first call is the big one.
	if a.Cost.Prices != nil {
		CheckUsage(t, steps[0].Step, *a.Cost.Prices, in, out, cached)
	} else {
		CheckTokens(t, steps[0].Step, in, out, cached)
	}
	wantCost(t, "first usage step's", steps[0].Step.CostUSD, a.Cost.Big, 1e-9)
	calls := len(ModelCalls(e.Server))
	if a.Compaction == CompactCalls {
		// More model calls follow the first, each reported by its own
		// step; the run's total is the sum of every step.
		var sum events.Tokens
		for _, u := range steps {
			sum = sum.Add(u.Step)
		}
		wantTotals(t, a, r, sum.Input, sum.Output, sum.CacheRead)
		if r.Fin.Turns != int64(len(steps)) || int64(calls) != r.Fin.Turns {
			t.Errorf("turns = %d, usage events %d, model calls %d: want all equal", r.Fin.Turns, len(steps), calls)
		}
	} else {
		wantTotals(t, a, r, in, out, cached)
		wantCost(t, "run.finished", r.Fin.CostUSD, a.Cost.Big, 1e-9)
		if r.Fin.Turns != 1 {
			t.Errorf("turns = %d, want 1", r.Fin.Turns)
		}
	}
	if a.Cost.Prices == nil && (r.Fin.CostUSD == nil || math.IsNaN(*r.Fin.CostUSD) || *r.Fin.CostUSD < 1) {
		t.Errorf("cost = %v, want the large reported cost (at least $1)", r.Fin.CostUSD)
	}
	if n := len(r.Notices(events.NoticeCompaction)); a.Compaction == CompactNotice && n == 0 {
		t.Errorf("no compaction notice: the CLI compacts after a call over its context window")
	}
}

func conformErrors(t *testing.T, a Agent) {
	status := map[mockllm.Scenario]int{mockllm.Unauthorized: 401, mockllm.RateLimited: 429, mockllm.ServerError: 500, mockllm.Overloaded: 503}
	for sc, s := range a.ErrorStatus {
		status[sc] = s
	}
	// RetryAfter makes the retries a CLI still makes quick (OpenCode
	// honours retry-after-ms).
	fast := mockllm.Options{RetryAfter: 100 * time.Millisecond}
	tests := []struct {
		scenario   mockllm.Scenario
		noFailFast bool
		bin        events.Bin
		reason     events.Reason
	}{
		{mockllm.Unauthorized, false, events.BinUnavailable, events.ReasonAuth},
		{mockllm.Unauthorized, true, events.BinUnavailable, events.ReasonAuth},
		{mockllm.RateLimited, false, events.BinUnavailable, events.ReasonRateLimit},
		{mockllm.ServerError, false, events.BinUnavailable, events.ReasonServer},
		{mockllm.Overloaded, false, events.BinUnavailable, events.ReasonOverloaded},
		{mockllm.Overflow, false, events.BinInvalidInput, events.ReasonContextOverflow},
	}
	for _, tt := range tests {
		name := string(tt.scenario)
		if tt.noFailFast {
			name += "-no-fail-fast"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := a.Prepare(t, Setup{Server: fast})
			r := e.Run(t, "Fail please. "+string(tt.scenario), budget.Limits{},
				func(req *hub.Request) { req.NoFailFast = tt.noFailFast })
			WantErr(t, r.Fin, tt.bin, tt.reason, status[tt.scenario])
			if r.Fin.SessionID == nil {
				t.Errorf("session_id null: the CLI gave a session id before failing")
			}
			if a.ErrorExit != nil && (r.Fin.ExitCode == nil || *r.Fin.ExitCode != *a.ErrorExit) {
				t.Errorf("exit_code = %v, want %d", r.Fin.ExitCode, *a.ErrorExit)
			}
			if n := len(ModelCalls(e.Server)); a.OneCallPerError && (n != 1 && tt.scenario != mockllm.Overflow || n < 1) {
				t.Errorf("model calls = %d, want 1 (retries are off)", n)
			}
			t.Logf("%s: %s in %s", name, r.Fin.Error.Message, r.Took.Round(time.Millisecond))
		})
	}
}

// conformProvider: what providers send, and connections that fail, each
// in its bin. A CLI that retries with no setting to stop it (OpenCode)
// gets --agent-retries 1 from hub (HubCountsRetries): the verdict is then
// hub's, from the retried failure's class.
func conformProvider(t *testing.T, a Agent) {
	tests := []struct {
		name     string
		scenario mockllm.Scenario // "" for a refused connection
		bin      events.Bin
		reason   events.Reason
	}{
		{"quota", mockllm.Quota, events.BinUnavailable, events.ReasonQuota},
		{"402", mockllm.PaymentRequired, events.BinUnavailable, events.ReasonQuota},
		{"nomodel", mockllm.NoModel, events.BinInvalidInput, events.ReasonBadModel},
		{"refused", "", events.BinUnavailable, events.ReasonNetwork},
		{"drop", mockllm.Drop, events.BinUnavailable, events.ReasonNetwork},
		{"reset", mockllm.Reset, events.BinUnavailable, events.ReasonNetwork},
		{"cut", mockllm.Cut, events.BinUnavailable, events.ReasonNetwork},
		{"streammodel", mockllm.StreamModel, events.BinInvalidInput, events.ReasonBadModel},
		{"streamerror", mockllm.StreamError, events.BinUnavailable, events.ReasonServer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := a.Prepare(t, Setup{Server: mockllm.Options{RetryAfter: 100 * time.Millisecond}, Refused: tt.scenario == ""})
			one := 1
			prompt := "Fail please. " + string(tt.scenario)
			if tt.scenario == "" {
				prompt = "Say hello. " + string(mockllm.Text)
			}
			r := e.Run(t, prompt, budget.Limits{Grace: grace, Timeout: 3 * time.Minute}, func(req *hub.Request) {
				if a.HubCountsRetries {
					req.AgentRetries = &one
				}
			})
			WantErr(t, r.Fin, tt.bin, tt.reason, 0)
			if tt.scenario == "" && len(ModelCalls(e.Server)) != 0 {
				t.Errorf("the refused run reached the server")
			}
			t.Logf("%s: %s in %s", tt.name, r.Fin.Error.Message, r.Took.Round(time.Millisecond))
		})
	}
}

// conformIdle: the idle limit counts the CLI's start-up too, until its
// first line, and some CLIs are silent until the model answers: an attempt
// whose limit ran out before the model was called (or, stalled, before the
// CLI streamed the start of the answer) tested nothing, and runs again with
// a longer one (Retry), each in a fresh Env so that its model calls are its
// own.
func conformIdle(t *testing.T, a Agent) {
	if a.IdleTimeout <= 0 {
		t.Fatal("Agent.IdleTimeout is not set")
	}
	for _, sc := range []mockllm.Scenario{mockllm.Hang, mockllm.Stall} {
		t.Run(string(sc), func(t *testing.T) {
			t.Parallel()
			Retry(t, a.IdleTimeout, func(idle time.Duration) bool {
				lim := budget.Limits{IdleTimeout: idle, Grace: grace}
				e := a.Prepare(t, Setup{})
				r := e.Run(t, "Wait. "+string(sc), lim)
				WantErr(t, r.Fin, events.BinTimeout, events.ReasonIdle, 0)
				d := r.Deltas()
				if len(ModelCalls(e.Server)) == 0 || sc == mockllm.Stall && a.TextDeltas && d == "" {
					return false
				}
				// From the agent's last output (or the start) to the end.
				WantQuiet(t, r, lim)
				if sc == mockllm.Stall && a.TextDeltas && !strings.HasPrefix(mockllm.TextAnswer, d) {
					t.Errorf("streamed text before the stall = %q, want a prefix of %q", d, mockllm.TextAnswer)
				}
				t.Logf("%s: ended in %s", sc, r.Took.Round(time.Millisecond))
				return true
			})
		})
	}
}

// conformToolKilled: the tool's echo marks that the tool runs, then hangs
// (SlowEcho). An attempt whose timeout ran out before the tool ran (the
// version probe and the CLI's start-up, stretched by load) tested nothing,
// and runs again with a longer one (Retry). The tool ran if it left its
// mark, or (a sandbox may refuse the tool that write) the CLI reported it
// started; a CLI that reports a tool only once it has run (Tool.AfterRun)
// must also have asked the model for it.
func conformToolKilled(t *testing.T, a Agent) {
	if a.ToolKilledTimeout <= 0 {
		t.Fatal("Agent.ToolKilledTimeout is not set")
	}
	Retry(t, a.ToolKilledTimeout, func(timeout time.Duration) bool {
		e := a.Prepare(t, Setup{})
		mark := filepath.Join(e.Dir, "tool-ran")
		e.ShellInit(t, "echo() { : > "+mark+"; sleep 300; builtin echo \"$@\"; }\n")
		lim := budget.Limits{Timeout: timeout, Grace: grace}
		r := e.Run(t, "Run it. "+string(mockllm.Tool), lim, GrantFull)
		WantErr(t, r.Fin, events.BinTimeout, events.ReasonWall, 0)
		WantTook(t, r, lim)
		if n := len(r.Notices(events.NoticeRetry)); n != 0 {
			t.Logf("%d retry notices", n)
		}
		if a.Tool.AfterRun {
			if n := len(ModelCalls(e.Server)); n < 1 {
				return false // the CLI never asked for the tool
			}
		}
		_, err := os.Stat(mark)
		started, _ := r.Tool()
		return err == nil || started != nil
	})
}

func conformMaxCost(t *testing.T, a Agent) {
	r := a.Prepare(t, Setup{}).Run(t, "Big. "+string(mockllm.BigUsage), budget.Limits{MaxCostUSD: 1, Grace: grace})
	WantErr(t, r.Fin, events.BinBudgetExceeded, events.ReasonCost, 0)
	if r.Fin.CostUSD == nil || *r.Fin.CostUSD <= 1 || r.Fin.CostSource != a.Cost.Source {
		t.Errorf("cost = %v %s, want the %s total above $1", r.Fin.CostUSD, r.Fin.CostSource, a.Cost.Source)
	}
	unknown := len(r.Notices(events.NoticeCostUnknown))
	if a.Cost.AtEnd {
		// The cost is crossed at the final result, with its totals.
		if unknown != 1 {
			t.Errorf("%d cost_unknown notices, want 1 (per-call cost is unknown until the result)", unknown)
		}
	} else {
		// The crossing usage event is the last one forwarded, and the CLI
		// makes no call after it.
		if unknown != 0 {
			t.Errorf("%d cost_unknown notices, want none (the cost of each call is known)", unknown)
		}
		if n := len(r.Events); r.Events[n-2].Type() != events.TypeUsage {
			t.Errorf("last forwarded event = %s, want the crossing usage", r.Events[n-2].Type())
		}
		wantCost(t, "run.finished", r.Fin.CostUSD, a.Cost.Big, 1e-9)
	}
	if r.Fin.Turns != 1 {
		t.Errorf("turns = %d, want 1 (the big call's only)", r.Fin.Turns)
	}
}

func conformFinalAnswer(t *testing.T, a Agent) {
	e := a.Prepare(t, Setup{})
	r := e.Run(t, "Loop. "+string(mockllm.ToolLoop), budget.Limits{MaxToolSteps: 2, Grace: grace}, GrantFull)
	CheckFinalAnswer(t, r.Fin, e.Server)
}

func conformAgentRetries(t *testing.T, a Agent) {
	one := 1
	e := a.Prepare(t, Setup{Server: mockllm.Options{RetryAfter: 100 * time.Millisecond}, Retries: RetriesDefault})
	r := e.Run(t, "Fail please. "+string(mockllm.ServerError), budget.Limits{Grace: grace},
		func(req *hub.Request) { req.AgentRetries = &one })
	status := 500
	if s, ok := a.ErrorStatus[mockllm.ServerError]; ok {
		status = s
	}
	if a.RetryStatusUnknown {
		status = 0
	}
	WantErr(t, r.Fin, events.BinUnavailable, events.ReasonServer, status)
	retries, calls := len(r.Notices(events.NoticeRetry)), len(ModelCalls(e.Server))
	if a.HubCountsRetries {
		// The CLI retries more; hub stops it at its second retry notice,
		// before the third model call.
		if !strings.Contains(r.Fin.Error.Message, "--agent-retries 1") {
			t.Errorf("error = %q, want it to name --agent-retries 1", r.Fin.Error.Message)
		}
		if retries != 2 || calls != 2 {
			t.Errorf("%d retry notices, %d model calls; want 2 and 2 (stopped at the second retry)", retries, calls)
		}
	} else if retries != 1 || calls != 2 {
		t.Errorf("%d retry notices, %d model calls; want 1 and 2 (one retry)", retries, calls)
	}
}

func conformFailFast(t *testing.T, a Agent) {
	e := a.Prepare(t, Setup{Retries: RetriesDefault})
	r := e.Run(t, "Bad key. "+string(mockllm.Unauthorized), budget.Limits{Grace: grace})
	WantErr(t, r.Fin, events.BinUnavailable, events.ReasonAuth, 401)
	var retryAt, endAt time.Time
	retries := 0
	for _, ev := range r.Events {
		if n, ok := ev.Body.(events.Notice); ok && n.Kind == events.NoticeRetry {
			retries++
			if retryAt.IsZero() {
				retryAt = ev.TS
			}
		}
		if ev.Type() == events.TypeRunFinished {
			endAt = ev.TS
		}
	}
	if retries == 0 {
		t.Fatal("no retry notice: nothing to fail fast on")
	}
	if retries != 1 {
		t.Errorf("%d retry notices, want exactly 1 (hub stops at the first)", retries)
	}
	// hub signals the CLI at the notice: it ends within the grace and
	// hub's own bounded waits.
	if d, max := endAt.Sub(retryAt), grace+hub.StopWait; d > max {
		t.Errorf("run.finished %s after the first retry notice, want within %s (grace + hub.StopWait)", d, max)
	}
	if n := len(ModelCalls(e.Server)); n > 3 {
		t.Errorf("%d model calls: hub let the CLI keep retrying", n)
	}
}
