package claude_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hubcli/hub"
	_ "github.com/hubcli/hub/adapters/acp"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/mockllm"
)

// claudeACP returns the edit that makes a request for Claude Code one for
// hub's ACP client driving Zed's claude-agent-acp (pinned in tools/npm,
// installed by scripts/install-agents.sh): `hub run --agent acp
// --acp-command claude-agent-acp`, with the same environment. The adapter
// runs its own bundled Claude Code unless CLAUDE_CODE_EXECUTABLE names
// another (testdata/acp/README.md): it names the pinned native claude, the
// request's Bin before the edit, so that both sides of a comparison run
// the same Claude Code. It skips t (or fails it, with HUB_REQUIRE_REAL_CLIS)
// when claude-agent-acp is not installed.
//
// The edit also sets the run's Linger (hubtest's Run would make it the
// test's deadline): see acpLinger.
func claudeACP(t *testing.T) func(*hub.Request) {
	t.Helper()
	bin := hubtest.Bin(t, "claude-agent-acp")
	return func(req *hub.Request) {
		req.Env = append(req.Env, "CLAUDE_CODE_EXECUTABLE="+req.Bin)
		req.Agent, req.Bin, req.Args = "acp", bin, nil
		req.Limits.Linger = acpLinger
	}
}

// acpLinger is the --linger of every claude-agent-acp run: how long hub
// waits after the prompt's answer before its SIGTERM. claude-agent-acp
// never exits when its stdin closes (testdata/acp/README.md), and hub
// 94d8b8d does not stop it at the answer: it waits the whole --linger
// (5 s by default), then sends SIGTERM and a linger_kill notice, in every
// run. Left to hubtest's Run, the linger would be the time the test
// has left (every run then waited until near the test's deadline), so it
// is set here to the default a user gets; when hub stops an ACP agent at
// its answer this can go.
const acpLinger = budget.DefaultLinger

// TestRealACP: claude-agent-acp 0.23.1 through hub's ACP client, against
// the mock server with the pinned Claude Code.
func TestRealACP(t *testing.T) {
	t.Parallel()
	asACP := claudeACP(t)

	// The text scenario gives the same answer, tokens and cost as
	// --agent claude: claude-agent-acp's prompt answer sums the turn's
	// tokens (one call here: 800 in, 50 out, 200 cache read) and its
	// usage_update's cost is the session's, both from the same Claude
	// Code's result, which prices the call itself ($0.00424 for both).
	// What differs: session.started's model is claude-agent-acp's
	// "default" (native: Claude Code's own name), the run ends by hub's
	// SIGTERM (exit_code null, with a linger_kill notice: acpLinger), and
	// Claude Code 2.1.328 sends claude-agent-acp 0.23.1 messages it does
	// not know ("Unexpected case: {type: command_lifecycle…}" stderr
	// notices). The stop after the answer sends no session/cancel (no
	// prompt is out) and waits no grace: with a grace far longer than the
	// run, a wrong wait would show.
	t.Run("text", func(t *testing.T) {
		t.Parallel()
		const grace = 90 * time.Second
		var fins [2]events.RunFinished
		var took [2]time.Duration
		for i, edit := range []func(*hub.Request){func(*hub.Request) {}, asACP} {
			e := agent.Prepare(t, hubtest.Setup{})
			r := e.Run(t, "Say hello. "+string(mockllm.Text), budget.Limits{Grace: grace}, edit)
			if !r.Fin.OK {
				t.Fatalf("run %d: %+v", i, r.Fin.Error)
			}
			fins[i], took[i] = r.Fin, r.Took
		}
		native, acp := fins[0], fins[1]
		if acp.Text != mockllm.TextAnswer || acp.Text != native.Text {
			t.Errorf("acp text %q, claude %q, want %q", acp.Text, native.Text, mockllm.TextAnswer)
		}
		nu, au := native.Usage, acp.Usage
		nc, ac := nu.CostUSD, au.CostUSD
		nu.CostUSD, au.CostUSD = nil, nil
		if nu != au {
			t.Errorf("acp tokens %+v, claude %+v", au, nu)
		}
		hubtest.CheckTokens(t, au, mockllm.PromptTokens-mockllm.CachedTokens, mockllm.CompletionTokens, mockllm.CachedTokens)
		if nc == nil || ac == nil || math.Abs(*nc-*ac) > 1e-9 || acp.CostSource != events.CostReported || native.CostSource != events.CostReported {
			t.Errorf("acp cost %v %s, claude %v %s; want the same, reported", ac, acp.CostSource, nc, native.CostSource)
		}
		if took[1] >= grace {
			t.Errorf("acp run took %s, want less than the grace %s: hub waited for an agent that outlives its stdin", took[1], grace)
		}
	})

	// claude-agent-acp asks before a Write (testdata/acp/README.md): hub
	// rejects it under read-only (claude-agent-acp then calls the model
	// again and answers, so the run is ok with the call denied) and allows
	// it inside --cwd under workspace-write. The disk tells which.
	t.Run("asks", func(t *testing.T) {
		t.Parallel()
		for _, level := range []grant.Level{grant.ReadOnly, grant.WorkspaceWrite} {
			t.Run(string(level), func(t *testing.T) {
				t.Parallel()
				e := agent.Prepare(t, hubtest.Setup{})
				path := filepath.Join(e.Work, "asked.txt")
				call := hubtest.JSONCall("Write", map[string]string{"file_path": path, "content": "hello\n"})
				r := e.Run(t, "Write it. "+string(mockllm.Call)+" "+call, budget.Limits{Grace: 2 * time.Second}, asACP,
					func(req *hub.Request) { req.Permission = level })
				_, err := os.Stat(path)
				if !r.Fin.OK {
					t.Fatalf("run: %+v", r.Fin.Error)
				}
				if level == grant.ReadOnly {
					if err == nil || r.Fin.ToolCallsDenied != 1 {
						t.Errorf("file written: %v, %d calls denied; want none and 1", err == nil, r.Fin.ToolCallsDenied)
					}
					return
				}
				if err != nil || r.Fin.ToolCallsDenied != 0 || r.Fin.ToolCalls != 1 {
					t.Errorf("file: %v, %d calls, %d denied; want the write done, 1 call, none denied", err, r.Fin.ToolCalls, r.Fin.ToolCallsDenied)
				}
			})
		}
	})

	// A rejected key: claude-agent-acp's error answer carries only
	// Claude Code's text ("Invalid API key"), no data.
	t.Run("401", func(t *testing.T) {
		t.Parallel()
		e := agent.Prepare(t, hubtest.Setup{})
		r := e.Run(t, "Fail please. "+string(mockllm.Unauthorized), budget.Limits{Grace: 2 * time.Second}, asACP)
		hubtest.WantErr(t, r.Fin, events.BinUnavailable, events.ReasonAuth, 0)
	})

	// A hung model call: the idle limit stops it (session/cancel, then the
	// process tree), and nothing of the run is left (RunChecked). The stop
	// takes at most a grace for the cancel and the supervisor's own bound.
	t.Run("hang", func(t *testing.T) {
		t.Parallel()
		hubtest.Retry(t, agent.IdleTimeout, func(idle time.Duration) bool {
			e := agent.Prepare(t, hubtest.Setup{})
			lim := budget.Limits{IdleTimeout: idle, Grace: 2 * time.Second}
			r := e.Run(t, "Wait. "+string(mockllm.Hang), lim, asACP)
			hubtest.WantErr(t, r.Fin, events.BinTimeout, events.ReasonIdle, 0)
			if len(hubtest.ModelCalls(e.Server)) == 0 {
				return false
			}
			wantACPQuiet(t, r, lim)
			return true
		})
	})
}

// wantACPQuiet fails t unless the run's silence before run.finished (the
// agent's, then hub's stop) is at least its idle timeout and at most that
// plus hub's bound on an ACP stop: a grace for the answer to
// session/cancel, then the supervisor's SIGTERM, grace and
// hub.StopWait.
func wantACPQuiet(t testing.TB, r hubtest.Result, lim budget.Limits) {
	t.Helper()
	max := lim.IdleTimeout + 2*lim.GraceOrDefault() + hub.StopWait
	if q := r.Quiet(); q < lim.IdleTimeout || q > max {
		t.Errorf("last output to run.finished = %s, want between the idle timeout %s and %s", q, lim.IdleTimeout, max)
	}
}
