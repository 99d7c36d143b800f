package codex_test

import (
	"testing"
	"time"

	"github.com/hubcli/hub"
	_ "github.com/hubcli/hub/adapters/acp"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/mockllm"
)

// codexACP returns the edit that makes a request for Codex one for hub's
// ACP client driving Zed's codex-acp (pinned in tools/npm, installed by
// scripts/install-agents.sh): `hub run --agent acp --acp-command
// codex-acp`, with the same environment (CODEX_HOME's config.toml names the
// mock provider).
// codex-acp has Codex built in and does not run the pinned codex CLI. Its
// command is the npm wrapper, a Node process whose child is the native
// binary: SIGTERM to the wrapper alone leaves the native one running
// (testdata/acp/README.md), so every run here also checks that hub stops
// the whole tree (RunChecked's leftovers). It skips t (or fails it, with
// HUB_REQUIRE_REAL_CLIS) when codex-acp is not installed.
//
// No tool scenarios: codex-acp runs commands in a bubblewrap sandbox in its
// read-only and auto modes, and with no bwrap on the machine the command
// panics without a tool_call update (testdata/acp/README.md); only its
// full-access mode runs them, which hub does not select.
func codexACP(t *testing.T) func(*hub.Request) {
	t.Helper()
	bin := hubtest.Bin(t, "codex-acp")
	return func(req *hub.Request) {
		req.Agent, req.Bin, req.Args = "acp", bin, nil
		req.Limits.Linger = acpLinger
	}
}

// acpLinger is the --linger of every codex-acp run: how long hub waits
// after the prompt's answer before its SIGTERM. codex-acp never exits when
// its stdin closes (testdata/acp/README.md), and hub 94d8b8d does not stop
// it at the answer: it waits the whole --linger (5 s by default), then
// sends SIGTERM and a linger_kill notice, in every run. Left to
// hubtest's Run, the linger would be the time the test has left, so it
// is set here to the default a user gets; when hub stops an ACP agent at
// its answer this can go.
const acpLinger = budget.DefaultLinger

// TestRealACP: codex-acp 0.16.0 through hub's ACP client, against the mock
// server, beside the same scenarios through --agent codex.
func TestRealACP(t *testing.T) {
	t.Parallel()
	asACP := codexACP(t)
	tests := []struct {
		name   string
		prompt string
		bin    events.Bin // "" for ok
		reason events.Reason
	}{
		{"text", "Say hello. " + string(mockllm.Text), "", ""},
		{"401", "Fail please. " + string(mockllm.Unauthorized), events.BinUnavailable, events.ReasonAuth},
		{"overflow", "Fail please. " + string(mockllm.Overflow), events.BinInvalidInput, events.ReasonContextOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var fins [2]events.RunFinished
			for i, edit := range []func(*hub.Request){func(*hub.Request) {}, asACP} {
				e := agent.Prepare(t, hubtest.Setup{})
				r := e.Run(t, tt.prompt, budget.Limits{Grace: 2 * time.Second}, edit)
				fins[i] = r.Fin
				if tt.bin == "" {
					if !r.Fin.OK {
						t.Fatalf("run %d: %+v", i, r.Fin.Error)
					}
				} else {
					hubtest.WantErr(t, r.Fin, tt.bin, tt.reason, 0)
				}
			}
			native, acp := fins[0], fins[1]
			if acp.Text != native.Text {
				t.Errorf("acp text %q, codex %q", acp.Text, native.Text)
			}
			if tt.bin != "" {
				return
			}
			if acp.Text != mockllm.TextAnswer {
				t.Errorf("acp text %q, want %q", acp.Text, mockllm.TextAnswer)
			}
			// codex-acp's prompt answer has no usage and its
			// usage_update no cost (only the context's size): hub has
			// no tokens to count and no cost to report, and must not
			// invent one. (--agent codex gets Codex's tokens and
			// estimates the cost from hub's prices.)
			if acp.CostSource != events.CostUnknown || acp.CostUSD != nil || acp.Usage.CostUSD != nil {
				t.Errorf("acp cost %v (usage %v) %s, want none, unknown", acp.CostUSD, acp.Usage.CostUSD, acp.CostSource)
			}
			if native.CostSource != events.CostEstimated {
				t.Errorf("codex cost_source %s, want estimated", native.CostSource)
			}
		})
	}
	// A hung model call: the idle limit stops it (session/cancel, then the
	// whole process tree, wrapper and native binary), and nothing of the
	// run is left (RunChecked). The stop takes at most a grace for the
	// cancel and the supervisor's own bound (wantACPQuiet).
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
