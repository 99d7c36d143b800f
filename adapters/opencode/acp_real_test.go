package opencode_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
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

// asACP makes a request for OpenCode one for hub's ACP client driving
// OpenCode's own ACP server (`hub run --agent acp --acp-command "opencode
// acp"`): the same binary, environment and config.
func asACP(req *hub.Request) {
	req.Agent, req.Args = "acp", []string{"acp"}
}

// TestRealACP: the real `opencode acp` through hub's ACP client gives the
// same answer, usage, cost and bin as `--agent opencode` on the same mock
// scenarios, each pair of runs in fresh environments of its own; and
// limits stop it: the idle limit ends a hung model call (session/cancel
// first), leaving nothing running (RunChecked).
func TestRealACP(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		prompt string
		grant  func(*hub.Request)
		bin    events.Bin // "" for ok
		reason events.Reason
	}{
		{"text", "Say hello. " + string(mockllm.Text), nil, "", ""},
		{"tool", "Run it. " + string(mockllm.Tool), hubtest.GrantFull, "", ""},
		{"401", "Fail please. " + string(mockllm.Unauthorized), nil, events.BinUnavailable, events.ReasonAuth},
		{"overflow", "Fail please. " + string(mockllm.Overflow), nil, events.BinInvalidInput, events.ReasonContextOverflow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var fins [2]events.RunFinished
			var usage [2]events.Tokens
			var lastStep events.Tokens // the native run's last model call
			for i, edit := range []func(*hub.Request){func(*hub.Request) {}, asACP} {
				e := agent.Prepare(t, hubtest.Setup{})
				edits := []func(*hub.Request){edit}
				if tt.grant != nil {
					edits = append(edits, tt.grant)
				}
				r := e.Run(t, tt.prompt, budget.Limits{Grace: 2 * time.Second}, edits...)
				fins[i] = r.Fin
				if tt.bin == "" {
					if !r.Fin.OK {
						t.Fatalf("run %d: %+v", i, r.Fin.Error)
					}
				} else {
					hubtest.WantErr(t, r.Fin, tt.bin, tt.reason, 0)
				}
				usage[i] = r.Fin.Usage
				if u := r.Usages(); i == 0 && len(u) > 0 {
					lastStep = u[len(u)-1].Step
					lastStep.CostUSD = nil
				}
			}
			native, acp := fins[0], fins[1]
			if acp.Text != native.Text {
				t.Errorf("acp text %q, opencode %q", acp.Text, native.Text)
			}
			if tt.bin != "" {
				return
			}
			nc, ac := usage[0].CostUSD, usage[1].CostUSD
			usage[0].CostUSD, usage[1].CostUSD = nil, nil
			// OpenCode's session/prompt answer gives the tokens of the
			// turn's last model call, not the turn's: the same as the
			// native run's with one call, its last step's with more. Its
			// usage_update's cost is the session's, all calls.
			if native.Turns == 1 && usage[0] != usage[1] || usage[1] != lastStep {
				t.Errorf("acp usage %+v, opencode %+v (last call %+v)", usage[1], usage[0], lastStep)
			}
			if nc == nil || ac == nil || math.Abs(*nc-*ac) > 1e-9 || acp.CostSource != native.CostSource {
				t.Errorf("acp cost %v %s, opencode %v %s", ac, acp.CostSource, nc, native.CostSource)
			}
			if acp.ToolCalls != native.ToolCalls {
				t.Errorf("acp tool calls %d, opencode %d", acp.ToolCalls, native.ToolCalls)
			}
		})
	}
	// OpenCode runs its shell without asking by default: under read-only
	// hub's watch stops the run at the call (natively hub's OpenCode
	// config denies the shell, so the model is never offered one).
	t.Run("unasked shell, read-only", func(t *testing.T) {
		t.Parallel()
		e := agent.Prepare(t, hubtest.Setup{})
		r := e.Run(t, "Run it. "+string(mockllm.Tool), budget.Limits{Grace: 2 * time.Second}, asACP)
		hubtest.WantErr(t, r.Fin, events.BinPermissionDenied, events.ReasonEffectNotGranted, 0)
	})
	// With OpenCode's edit and bash at "ask", every call comes to hub
	// first: refused under read-only (OpenCode then ends the turn without
	// an answer: tool_denied), allowed inside --cwd under workspace-write;
	// the disk tells which.
	t.Run("asks", func(t *testing.T) {
		t.Parallel()
		for _, level := range []grant.Level{grant.ReadOnly, grant.WorkspaceWrite} {
			t.Run(string(level), func(t *testing.T) {
				t.Parallel()
				e := agent.Prepare(t, hubtest.Setup{})
				cfg := e.Write(t, "ask.json", strings.Replace(config(e.Server.URL()), `"autoupdate": false,`,
					`"autoupdate": false, "permission": {"edit": "ask", "bash": "ask"},`, 1))
				e.Env = append(e.Env, "OPENCODE_CONFIG="+cfg)
				path := filepath.Join(e.Work, "asked.txt")
				call := hubtest.JSONCall("write", map[string]string{"filePath": path, "content": "hello"})
				r := e.Run(t, "Write it. "+string(mockllm.Call)+" "+call, budget.Limits{Grace: 2 * time.Second}, asACP,
					func(req *hub.Request) { req.Permission = level })
				_, err := os.Stat(path)
				if level == grant.ReadOnly {
					hubtest.WantErr(t, r.Fin, events.BinPermissionDenied, events.ReasonToolDenied, 0)
					if err == nil || r.Fin.ToolCallsDenied != 1 {
						t.Errorf("file written: %v, %d calls denied; want none and 1", err == nil, r.Fin.ToolCallsDenied)
					}
					return
				}
				if !r.Fin.OK || err != nil {
					t.Errorf("ok %v (%+v), file: %v; want the write allowed and done", r.Fin.OK, r.Fin.Error, err)
				}
			})
		}
	})
	t.Run("hang", func(t *testing.T) {
		t.Parallel()
		hubtest.Retry(t, agent.IdleTimeout, func(idle time.Duration) bool {
			e := agent.Prepare(t, hubtest.Setup{})
			lim := budget.Limits{IdleTimeout: idle, Grace: 2 * time.Second}
			r := e.Run(t, "Wait. "+string(mockllm.Hang), lim, asACP)
			hubtest.WantErr(t, r.Fin, events.BinTimeout, events.ReasonIdle, 0)
			return len(hubtest.ModelCalls(e.Server)) > 0
		})
	})
}
