package hubtest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	hub "github.com/hubcli/hub"
	"github.com/hubcli/hub/acpserver"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
)

// ApprovalCase is how to make a's CLI ask before a write: Prompt(dir,
// name) is a prompt whose model call writes the file name in dir (the
// working directory) with the content "approved" in a way the run's grant
// (read-only) does not allow, so that the CLI asks hub.
type ApprovalCase struct {
	Prompt func(dir, name string) string
}

// approvals records what an approver was asked, and answers with answer.
// Approver is a test's hub.Approver (its Approve method): it records the
// calls it is asked about and answers each with Answer.
type Approver struct {
	Answer func(context.Context, hub.ToolCall) hub.Decision

	mu    sync.Mutex
	calls []hub.ToolCall
}

// Approve is the hub.Approver.
func (a *Approver) Approve(ctx context.Context, c hub.ToolCall) hub.Decision {
	a.mu.Lock()
	a.calls = append(a.calls, c)
	a.mu.Unlock()
	return a.Answer(ctx, c)
}

// Asked is the calls asked about so far, in order.
func (a *Approver) Asked() []hub.ToolCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]hub.ToolCall(nil), a.calls...)
}

// Verdict answers every call with v, and a message that names it.
func Verdict(v hub.Verdict) func(context.Context, hub.ToolCall) hub.Decision {
	return func(context.Context, hub.ToolCall) hub.Decision {
		return hub.Decision{Verdict: v, Message: "the test says " + string(v)}
	}
}

// ApprovalSessions runs a's CLI as a live session with an approver
// (hub.WithApprover) under --permission read-only, against the mock
// server: a write the grant does not allow is asked about, and the file
// is on disk only when the approver allowed it; a target that changed
// while the approver thought is refused and left as it was; Stop ends the
// session permission_denied/tool_denied with the agent's process gone.
func ApprovalSessions(t *testing.T, a Agent, c ApprovalCase) {
	read := func(t *testing.T, p string) (string, bool) {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	start := func(t *testing.T, ap *Approver) (*Env, *SessionRun) {
		e := a.Prepare(t, Setup{})
		return e, e.StartSession(t, budget.Limits{IdleTimeout: time.Minute}, hub.WithApprover(ap.Approve))
	}
	// decided is the session's approval.decided events, each checked to
	// follow an approval.requested of its call.
	decided := func(t *testing.T, r *SessionRun) []events.ApprovalDecided {
		t.Helper()
		var out []events.ApprovalDecided
		requested := map[string]bool{}
		for _, ev := range r.Events {
			switch b := ev.Body.(type) {
			case events.ApprovalRequested:
				requested[b.CallID] = true
			case events.ApprovalDecided:
				if !requested[b.CallID] {
					t.Errorf("approval.decided of %s with no approval.requested before it", b.CallID)
				}
				delete(requested, b.CallID)
				out = append(out, b)
			}
		}
		for id := range requested {
			t.Errorf("approval.requested of %s never decided", id)
		}
		return out
	}
	// by reports whether ds hold a decision verdict by who.
	by := func(ds []events.ApprovalDecided, verdict, who string) bool {
		return slices.ContainsFunc(ds, func(d events.ApprovalDecided) bool { return d.Verdict == verdict && d.By == who })
	}
	t.Run("Allowed", func(t *testing.T) {
		t.Parallel()
		ap := &Approver{Answer: func(context.Context, hub.ToolCall) hub.Decision { return hub.Decision{Verdict: hub.AllowOnce} }}
		e, r := start(t, ap)
		tf := r.Turn(c.Prompt(e.Work, "allowed.txt"), nil)
		if !tf.OK {
			t.Errorf("turn: %+v, want ok", tf)
		}
		calls := ap.Asked()
		if len(calls) == 0 {
			t.Fatalf("the approver was never asked about the write")
		}
		if calls[0].Agent != a.Name || calls[0].CallID == "" || calls[0].Name == "" || calls[0].Kind == "" {
			t.Errorf("the call asked about: %+v, want the agent, call id, name and kind", calls[0])
		}
		if got, ok := read(t, filepath.Join(e.Work, "allowed.txt")); !ok || strings.TrimSpace(got) != "approved" {
			t.Errorf("allowed.txt: %q (exists %v), want the approved write on disk", got, ok)
		}
		if ds := decided(t, r); !by(ds, "allow", "callback") {
			t.Errorf("approval.decided %+v: want an allow by the callback", ds)
		}
		fin := r.Close()
		if !fin.OK {
			t.Errorf("run.finished %+v, want ok", fin.Error)
		}
		if ap := fin.Approvals; ap == nil || ap.Asked < 1 || ap.Allowed < 1 || ap.Requested < ap.Asked {
			t.Errorf("run.finished approvals %+v, want the asked and allowed write counted", ap)
		}
	})
	t.Run("Denied", func(t *testing.T) {
		t.Parallel()
		ap := &Approver{Answer: func(context.Context, hub.ToolCall) hub.Decision {
			return hub.Decision{Verdict: hub.Deny, Message: "not this file"}
		}}
		e, r := start(t, ap)
		tf := r.Turn(c.Prompt(e.Work, "denied.txt"), nil)
		if len(ap.Asked()) == 0 {
			t.Fatalf("the approver was never asked about the write")
		}
		if _, ok := read(t, filepath.Join(e.Work, "denied.txt")); ok {
			t.Errorf("denied.txt is on disk: the denied write ran")
		}
		if !tf.OK {
			t.Errorf("turn: %+v, want ok (the agent is told and goes on)", tf)
		}
		// The session goes on.
		if tf := r.Turn("and now MOCK_TEXT", nil); !tf.OK {
			t.Errorf("turn after the denial: %+v, want ok", tf)
		}
		if ds := decided(t, r); !by(ds, "deny", "callback") {
			t.Errorf("approval.decided %+v: want a deny by the callback", ds)
		}
		fin := r.Close()
		if !fin.OK {
			t.Errorf("run.finished %+v, want ok", fin.Error)
		}
		if ap := fin.Approvals; ap == nil || ap.Denied < 1 {
			t.Errorf("run.finished approvals %+v, want the denied write counted", ap)
		}
	})
	t.Run("ChangedWhileAsked", func(t *testing.T) {
		t.Parallel()
		var work string
		ap := &Approver{}
		ap.Answer = func(context.Context, hub.ToolCall) hub.Decision {
			// The target changes while the person thinks, then the
			// answer is yes.
			_ = os.WriteFile(filepath.Join(work, "changed.txt"), []byte("changed meanwhile"), 0o644)
			return hub.Decision{Verdict: hub.AllowOnce}
		}
		e, r := start(t, ap)
		work = e.Work
		calls := ap.Asked
		r.Turn(c.Prompt(e.Work, "changed.txt"), nil)
		if len(calls()) == 0 {
			t.Fatalf("the approver was never asked about the write")
		}
		if len(calls()[0].Paths) == 0 {
			t.Skipf("%s's request names no path (a shell command): hub cannot tell a changed target", a.Name)
		}
		if got, _ := read(t, filepath.Join(e.Work, "changed.txt")); got != "changed meanwhile" {
			t.Errorf("changed.txt holds %q, want the content it had when the late approval came (hub refuses it)", got)
		}
		ds := decided(t, r)
		if !slices.ContainsFunc(ds, func(d events.ApprovalDecided) bool {
			return d.Verdict == "deny" && d.By == "policy" && strings.Contains(d.Message, "changed while it waited")
		}) {
			t.Errorf("approval.decided %+v: want the late approval refused by hub (policy) for the change", ds)
		}
		r.Close()
	})
	t.Run("OneShotRun", func(t *testing.T) {
		t.Parallel()
		// hub.Run with an approver: one turn of a live session, its
		// stream a run's.
		ap := &Approver{Answer: func(_ context.Context, c hub.ToolCall) hub.Decision {
			if strings.Contains(string(c.Input)+strings.Join(c.Paths, " "), "run-denied.txt") {
				return hub.Decision{Verdict: hub.Deny}
			}
			return hub.Decision{Verdict: hub.AllowOnce}
		}}
		e := a.Prepare(t, Setup{})
		for _, name := range []string{"run-allowed.txt", "run-denied.txt"} {
			req := hub.Request{Agent: a.Name, Model: a.Model, Bin: Bin(t, a.Name), Cwd: e.Work, Env: slices.Clone(e.Env), Prompt: c.Prompt(e.Work, name)}
			Unbounded(t, &req.Limits)
			var evs []events.Event
			fin := hub.Run(t.Context(), req, func(ev events.Event) error { evs = append(evs, ev); return nil }, hub.WithApprover(ap.Approve))
			if !fin.OK {
				t.Errorf("%s: run.finished %+v, want ok", name, fin.Error)
			}
			for _, ev := range evs {
				switch b := ev.Body.(type) {
				case events.TurnStarted, events.TurnFinished:
					t.Errorf("%s: a %T in a run's stream", name, b)
				case events.SessionStarted:
					if b.Mode != "" {
						t.Errorf("%s: session.started mode %q in a run", name, b.Mode)
					}
				}
			}
			if fin.Approvals == nil || fin.Approvals.Asked != 1 {
				t.Errorf("%s: run.finished approvals %+v, want the one call asked about", name, fin.Approvals)
			}
			got, ok := read(t, filepath.Join(e.Work, name))
			if want := name == "run-allowed.txt"; ok != want || want && strings.TrimSpace(got) != "approved" {
				t.Errorf("%s on disk: %v (%q), want %v", name, ok, got, want)
			}
		}
		if n := len(ap.Asked()); n != 2 {
			t.Errorf("the approver was asked %d times, want 2 (once a run)", n)
		}
	})
	t.Run("HubACP", func(t *testing.T) {
		t.Parallel()
		acpApprovals(t, a, c)
	})
	t.Run("Stop", func(t *testing.T) {
		t.Parallel()
		ap := &Approver{Answer: func(context.Context, hub.ToolCall) hub.Decision {
			return hub.Decision{Verdict: hub.Stop, Message: "no writes today"}
		}}
		e, r := start(t, ap)
		tf := r.Turn(c.Prompt(e.Work, "stopped.txt"), nil)
		pid := r.PID()
		if tf.OK || tf.Error == nil || tf.Error.Bin != events.BinPermissionDenied || tf.Error.Reason != events.ReasonToolDenied {
			t.Errorf("turn: %+v, want permission_denied/tool_denied", tf)
		}
		fin := r.Close()
		if fin.OK || fin.Error == nil || fin.Error.Reason != events.ReasonToolDenied {
			t.Errorf("run.finished %+v, want permission_denied/tool_denied", fin.Error)
		}
		if _, ok := read(t, filepath.Join(e.Work, "stopped.txt")); ok {
			t.Errorf("stopped.txt is on disk")
		}
		if pid != 0 && alive(pid) {
			t.Errorf("agent pid %d alive after the stop", pid)
		}
	})
}

// acpApprovals drives hub acp (acpserver.Serve with ForwardApprovals) as an
// editor would: the agent's question about a write comes to the client as
// session/request_permission, and the client's answer decides whether the
// file is on disk.
func acpApprovals(t *testing.T, a Agent, c ApprovalCase) {
	e := a.Prepare(t, Setup{})
	var mu sync.Mutex
	var asked []acp.RequestPermissionRequest
	cl := &latencyClient{permission: func(r acp.RequestPermissionRequest) acp.RequestPermissionResponse {
		mu.Lock()
		asked = append(asked, r)
		mu.Unlock()
		answer := acp.PermissionOptionId("")
		for _, o := range r.Options {
			if want := acp.PermissionOptionKindAllowOnce; strings.Contains(string(mustJSON(r.ToolCall)), "rejected.txt") {
				want = acp.PermissionOptionKindRejectOnce
				if o.Kind == want {
					answer = o.OptionId
				}
			} else if o.Kind == want {
				answer = o.OptionId
			}
		}
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(answer)}
	}}
	conn, end := serveACP(t, a, e, acpserver.Config{ForwardApprovals: true}, cl)
	defer end()
	// A session each: the mock answers a conversation that holds a tool
	// result with text, not with another call.
	var sessions []acp.SessionId
	for _, name := range []string{"accepted.txt", "rejected.txt"} {
		s, err := conn.NewSession(t.Context(), acp.NewSessionRequest{Cwd: e.Work, McpServers: []acp.McpServer{}})
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s.SessionId)
		resp, err := conn.Prompt(t.Context(), acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock(c.Prompt(e.Work, name))}})
		if err != nil || resp.StopReason != acp.StopReasonEndTurn {
			t.Errorf("prompt writing %s: %+v, %v", name, resp, err)
		}
		b, err := os.ReadFile(filepath.Join(e.Work, name))
		if want := name == "accepted.txt"; (err == nil) != want || want && strings.TrimSpace(string(b)) != "approved" {
			t.Errorf("%s on disk: %v (%q), want %v", name, err == nil, b, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 {
		t.Fatalf("the editor was asked %d times, want once a write: %s", len(asked), mustJSON(asked))
	}
	for _, r := range asked {
		if !slices.Contains(sessions, r.SessionId) || r.ToolCall.ToolCallId == "" || r.ToolCall.Title == nil || len(r.Options) != 3 {
			t.Errorf("session/request_permission %s, want the session, the call's id and title, and three options", mustJSON(r))
		}
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
