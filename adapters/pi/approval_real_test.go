package pi_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
)

// TestRealApproval: a live pi session with an approver, read-only: hub's
// gate (approve.ts) asks about the model's write over RPC (an
// extension_ui_request), and hub puts it to the approver.
func TestRealApproval(t *testing.T) {
	t.Parallel()
	hubtest.ApprovalSessions(t, agent, hubtest.ApprovalCase{Prompt: func(dir, name string) string {
		return "write it MOCK_CALL " + hubtest.JSONCall("write", map[string]string{"path": filepath.Join(dir, name), "content": "approved"})
	}})
}

// approvalSession starts a live pi session with approver ap under level.
func approvalSession(t *testing.T, level grant.Level, ap *hubtest.Approver) (*hubtest.Env, *hubtest.SessionRun) {
	a := agent
	a.Session = func(req *hub.Request) { req.Permission = level }
	e := a.Prepare(t, hubtest.Setup{})
	return e, e.StartSession(t, budget.Limits{IdleTimeout: time.Minute}, hub.WithApprover(ap.Approve))
}

// toolFinished is the session's tool.finished of its one call.
func toolFinished(t *testing.T, r *hubtest.SessionRun) events.ToolFinished {
	t.Helper()
	for _, ev := range r.Events {
		if f, ok := ev.Body.(events.ToolFinished); ok {
			return f
		}
	}
	t.Fatalf("no tool.finished")
	return events.ToolFinished{}
}

// TestRealApprovalGrant: pi's gate asks hub about every call, and hub
// answers what --permission workspace-write allows itself: a write inside
// --cwd runs unasked; a write whose path pi reads as outside it ("@/abs",
// which pi's tools take as /abs: the gate sends the path resolved as pi
// resolves it) and a bash command (pi has no sandbox: never granted below
// full) are put to the approver, and its refusal reaches the model as
// the call's error ("hub: " and its message, counted denied).
func TestRealApprovalGrant(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	for _, tt := range []struct {
		name string
		call func(work string) string
		file func(work string) string // where the call would write
		ask  bool
	}{
		{"inside", func(w string) string {
			return hubtest.JSONCall("write", map[string]string{"path": filepath.Join(w, "in.txt"), "content": "x"})
		}, func(w string) string { return filepath.Join(w, "in.txt") }, false},
		{"at-outside", func(string) string {
			return hubtest.JSONCall("write", map[string]string{"path": "@" + outside, "content": "x"})
		}, func(string) string { return outside }, true},
		{"bash", func(w string) string {
			return hubtest.JSONCall("bash", map[string]string{"command": "printf x > b.txt"})
		}, func(w string) string { return filepath.Join(w, "b.txt") }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ap := &hubtest.Approver{Answer: func(context.Context, hub.ToolCall) hub.Decision {
				return hub.Decision{Verdict: hub.Deny, Message: "not today"}
			}}
			e, r := approvalSession(t, grant.WorkspaceWrite, ap)
			if tf := r.Turn("do it MOCK_CALL "+tt.call(e.Work), nil); !tf.OK {
				t.Errorf("turn: %+v, want ok", tf)
			}
			asked := ap.Asked()
			_, err := os.Stat(tt.file(e.Work))
			fin := toolFinished(t, r)
			switch {
			case !tt.ask && (len(asked) != 0 || err != nil || fin.Status != events.ToolOK):
				t.Errorf("asked %+v, written: %v, %s %s; want it written unasked", asked, err, fin.Status, fin.Output)
			case tt.ask && (len(asked) != 1 || err == nil || fin.Status != events.ToolDenied || fin.Output != "hub: not today"):
				t.Errorf("asked %+v, written: %v, %s %q; want it asked, refused, and the model told %q", asked, err == nil, fin.Status, fin.Output, "hub: not today")
			case tt.name == "at-outside" && !slices.Equal(asked[0].Paths, []string{outside}):
				t.Errorf("asked about paths %q, want %q (the gate resolves as pi does)", asked[0].Paths, outside)
			case tt.name == "bash" && (asked[0].Kind != events.ToolShell || asked[0].Name != "bash" || !strings.Contains(string(asked[0].Input), "printf x > b.txt")):
				t.Errorf("asked about %+v, want pi's bash call", asked[0])
			}
			if fin := r.Close(); !fin.OK {
				t.Errorf("run.finished %+v, want ok", fin.Error)
			}
		})
	}
}

// TestRealApprovalAbort: an interrupt while the approver thinks ends the
// turn without waiting for the answer (the gate passes pi's abort signal
// to its dialog: without it pi holds the abort until the dialog is
// answered, testdata/approvals/pi/abort-pending); the call does not run,
// the late answer changes nothing, and the session goes on.
func TestRealApprovalAbort(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var mu sync.Mutex
	answered := false
	var r *hubtest.SessionRun
	ap := &hubtest.Approver{Answer: func(ctx context.Context, _ hub.ToolCall) hub.Decision {
		go func() { _ = r.S.Interrupt() }()
		select {
		case <-release:
		case <-ctx.Done():
		case <-time.After(2 * time.Minute): // a gate that holds the abort: the turn ends only now, and the test fails
		}
		mu.Lock()
		answered = true
		mu.Unlock()
		return hub.Decision{Verdict: hub.AllowOnce}
	}}
	e, sr := approvalSession(t, grant.ReadOnly, ap)
	r = sr
	target := filepath.Join(e.Work, "aborted.txt")
	tf := r.Turn("write it MOCK_CALL "+hubtest.JSONCall("write", map[string]string{"path": target, "content": "x"}), nil)
	mu.Lock()
	early := !answered
	mu.Unlock()
	close(release)
	if !early {
		t.Errorf("the turn ended only after the approver answered: the abort waited for the dialog")
	}
	if !tf.Interrupted {
		t.Errorf("turn: %+v, want interrupted", tf)
	}
	if tf := r.Turn("and now MOCK_TEXT", nil); !tf.OK {
		t.Errorf("turn after the interrupt: %+v, want ok", tf)
	}
	if _, err := os.Stat(target); err == nil {
		t.Errorf("%s is on disk: the withdrawn call ran", target)
	}
	if n := len(ap.Asked()); n != 1 {
		t.Errorf("the approver was asked %d times, want 1", n)
	}
	r.Close()
}

// TestRealForeignDialog: under full, the project's extensions load, and
// one that asks the user (ctx.ui.confirm) before each call is answered
// cancelled at once, in a session with no approver: nothing waits on hub,
// and the extension's own refusal reaches the model.
func TestRealForeignDialog(t *testing.T) {
	t.Parallel()
	a := agent
	a.Session = func(req *hub.Request) { req.Permission = grant.Full }
	e := a.Prepare(t, hubtest.Setup{})
	ext := `export default function (pi: any) {
  pi.on("tool_call", async (_event: any, ctx: any) => {
    const ok = await ctx.ui.confirm("Proceed?", "the project's own question");
    return ok ? undefined : { block: true, reason: "project: not confirmed" };
  });
}
`
	if err := os.MkdirAll(filepath.Join(e.Work, ".pi", "extensions"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.Work, ".pi", "extensions", "ask.ts"), []byte(ext), 0o644); err != nil {
		t.Fatal(err)
	}
	r := e.StartSession(t, budget.Limits{IdleTimeout: time.Minute})
	target := filepath.Join(e.Work, "foreign.txt")
	if tf := r.Turn("write it MOCK_CALL "+hubtest.JSONCall("write", map[string]string{"path": target, "content": "x"}), nil); !tf.OK {
		t.Errorf("turn: %+v, want ok", tf)
	}
	if fin := toolFinished(t, r); fin.Output != "project: not confirmed" {
		t.Errorf("tool.finished %s %q, want the extension's refusal", fin.Status, fin.Output)
	}
	if _, err := os.Stat(target); err == nil {
		t.Errorf("%s is on disk", target)
	}
	r.Close()
}
