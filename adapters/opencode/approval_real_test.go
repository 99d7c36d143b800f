package opencode_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/mockllm"
)

// TestRealApproval: a live OpenCode session with an approver, read-only:
// hub's agent asks where it would deny, OpenCode puts the model's write to
// hub's ACP client as session/request_permission, and hub puts it to the
// approver.
func TestRealApproval(t *testing.T) {
	t.Parallel()
	hubtest.ApprovalSessions(t, agent, hubtest.ApprovalCase{Prompt: func(dir, name string) string {
		return "Write it. " + string(mockllm.Call) + " " + hubtest.JSONCall("write", map[string]string{"filePath": filepath.Join(dir, name), "content": "approved"})
	}})
}

// TestRealApprovalChangedEdit: OpenCode 1.18.33 writes the content it
// computed when it asked, over a change made while the approver thought
// (testdata/approvals/opencode, timing: e-changed.txt); hub's broker
// refuses an approval whose target changed since the request, so the
// other writer's change stays and the call is denied.
func TestRealApprovalChangedEdit(t *testing.T) {
	t.Parallel()
	e := agent.Prepare(t, hubtest.Setup{})
	target := filepath.Join(e.Work, "e.txt")
	if err := os.WriteFile(target, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ap := &hubtest.Approver{Answer: func(context.Context, hub.ToolCall) hub.Decision {
		_ = os.WriteFile(target, []byte("one\nSOMEONE ELSE\nthree\n"), 0o644)
		return hub.Decision{Verdict: hub.AllowOnce}
	}}
	r := e.StartSession(t, budget.Limits{IdleTimeout: time.Minute}, hub.WithApprover(ap.Approve))
	tf := r.Turn("Edit it. "+string(mockllm.Call)+" "+hubtest.JSONCall("edit", map[string]string{"filePath": target, "oldString": "two", "newString": "TWO"}), nil)
	if !tf.OK {
		t.Errorf("turn: %+v, want ok (the refusal ends OpenCode's turn)", tf)
	}
	calls := ap.Asked()
	if len(calls) != 1 || calls[0].Kind != events.ToolEdit || len(calls[0].Paths) != 1 || calls[0].Paths[0] != target || calls[0].Diff == "" {
		t.Fatalf("asked about %+v, want the edit of %s with its diff", calls, target)
	}
	if b, _ := os.ReadFile(target); string(b) != "one\nSOMEONE ELSE\nthree\n" {
		t.Errorf("e.txt holds %q, want the other writer's change kept", b)
	}
	denied := false
	for _, ev := range r.Events {
		if f, ok := ev.Body.(events.ToolFinished); ok && f.Status == events.ToolDenied {
			denied = true
		}
	}
	if !denied {
		t.Errorf("no tool.finished denied for the refused edit")
	}
	if fin := r.Close(); !fin.OK {
		t.Errorf("run.finished %+v, want ok", fin.Error)
	}
}

// TestRealApprovalInterrupt: an interrupt while the approver thinks ends
// the turn without waiting for the answer: hub answers OpenCode's pending
// request cancelled after session/cancel, and drops the approver's late
// allow, which OpenCode 1.18.33 would still run (testdata/approvals/
// opencode, timing). The file never lands and the session goes on.
func TestRealApprovalInterrupt(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	answered := make(chan struct{})
	var r *hubtest.SessionRun
	var once sync.Once
	ap := &hubtest.Approver{Answer: func(ctx context.Context, _ hub.ToolCall) hub.Decision {
		first := false
		once.Do(func() { first = true })
		if !first {
			return hub.Decision{Verdict: hub.Deny} // nothing more is to be asked
		}
		defer close(answered)
		go func() { _ = r.S.Interrupt() }()
		select {
		case <-release:
		case <-ctx.Done():
		}
		return hub.Decision{Verdict: hub.AllowOnce}
	}}
	e := agent.Prepare(t, hubtest.Setup{})
	r = e.StartSession(t, budget.Limits{IdleTimeout: time.Minute}, hub.WithApprover(ap.Approve))
	target := filepath.Join(e.Work, "cancelled.txt")
	tf := r.Turn("Write it. "+string(mockllm.Call)+" "+hubtest.JSONCall("write", map[string]string{"filePath": target, "content": "x"}), nil)
	select {
	case <-answered:
		t.Errorf("the turn ended only after the approver answered")
	default:
	}
	close(release)
	<-answered
	if !tf.Interrupted {
		t.Errorf("turn: %+v, want interrupted", tf)
	}
	// The session goes on; had the late allow reached OpenCode, the file
	// would be written by now (it writes at once: timing's cancel.txt).
	if tf := r.Turn("And now? "+string(mockllm.Text), nil); !tf.OK {
		t.Errorf("turn after the interrupt: %+v, want ok", tf)
	}
	if _, err := os.Stat(target); err == nil {
		t.Errorf("%s is on disk: the late allow ran the cancelled call", target)
	}
	r.Close()
	if _, err := os.Stat(target); err == nil {
		t.Errorf("%s is on disk after the session: the late allow ran the cancelled call", target)
	}
}

// TestRealApprovalGrant: under workspace-write with an approver, what the
// level allows runs unasked (a write inside --cwd: hub's agent allows
// edits), and what it does not is asked and, refused, never runs: a write
// outside --cwd (OpenCode's external_directory request, kind other, naming
// the file) and a bash command (no bash below full without an approver).
func TestRealApprovalGrant(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	for _, tt := range []struct {
		name string
		call func(work string) string
		file func(work string) string // where the call would write
		ask  events.ToolKind          // "" when not asked
	}{
		{"inside", func(w string) string {
			return hubtest.JSONCall("write", map[string]string{"filePath": filepath.Join(w, "in.txt"), "content": "x"})
		}, func(w string) string { return filepath.Join(w, "in.txt") }, ""},
		{"outside", func(string) string {
			return hubtest.JSONCall("write", map[string]string{"filePath": outside, "content": "x"})
		}, func(string) string { return outside }, events.ToolOther},
		{"bash", func(string) string {
			return hubtest.JSONCall("bash", map[string]string{"command": "printf x > b.txt", "description": "write b.txt"})
		}, func(w string) string { return filepath.Join(w, "b.txt") }, events.ToolShell},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ap := &hubtest.Approver{Answer: func(context.Context, hub.ToolCall) hub.Decision {
				return hub.Decision{Verdict: hub.Deny, Message: "not today"}
			}}
			a := agent
			a.Session = func(req *hub.Request) { req.Permission = "workspace-write" }
			e := a.Prepare(t, hubtest.Setup{})
			r := e.StartSession(t, budget.Limits{IdleTimeout: time.Minute}, hub.WithApprover(ap.Approve))
			if tf := r.Turn("Do it. "+string(mockllm.Call)+" "+tt.call(e.Work), nil); !tf.OK {
				t.Errorf("turn: %+v, want ok", tf)
			}
			asked := ap.Asked()
			_, err := os.Stat(tt.file(e.Work))
			switch {
			case tt.ask == "" && (len(asked) != 0 || err != nil):
				t.Errorf("asked %+v, written: %v; want it written unasked", asked, err)
			case tt.ask != "" && (len(asked) != 1 || asked[0].Kind != tt.ask || err == nil):
				t.Errorf("asked %+v, written: %v; want one question of kind %s, refused, nothing written", asked, err == nil, tt.ask)
			case tt.name == "outside" && !slices.Contains(asked[0].Paths, outside):
				t.Errorf("asked about paths %q, want %s among them", asked[0].Paths, outside)
			}
			if fin := r.Close(); !fin.OK {
				t.Errorf("run.finished %+v, want ok", fin.Error)
			}
		})
	}
}
