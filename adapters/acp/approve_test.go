package acp_test

// Live sessions with an approver (hub.WithApprover) against the fake ACP
// agent: its session/request_permission is put to the approver, and the
// answer is the request's outcome.

import (
	"context"
	"fmt"
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
	"github.com/hubcli/hub/hubtest/fakeacp"
)

// approvingSession starts a read-only live session with the fake agent
// (the scenario each prompt's) and approver ap.
func (f *fake) approvingSession(t *testing.T, ap *hubtest.Approver) *session {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	req := hub.Request{Agent: "acp", Bin: exe, Cwd: f.work, Permission: grant.ReadOnly, Limits: budget.Limits{Timeout: 5 * time.Minute},
		Env: append(f.env, fakeacp.EnvScenario+"=prompt", "GORACE=atexit_sleep_ms=0")}
	s, err := hub.NewSession(t.Context(), req, hub.WithApprover(ap.Approve))
	if err != nil {
		t.Fatalf("NewSession: %v", err)
	}
	r := &session{t: t, f: f, s: s}
	r.enc = events.NewEncoder(&r.stream)
	t.Cleanup(func() {
		if !r.closed {
			r.close()
		}
		if t.Failed() {
			t.Logf("session events:\n%s", r.stream.Bytes())
		}
	})
	return r
}

// toolFinished is the session's tool.finished events.
func (r *session) toolFinished() []events.ToolFinished {
	var out []events.ToolFinished
	for _, ev := range r.events {
		if f, ok := ev.Body.(events.ToolFinished); ok {
			out = append(out, f)
		}
	}
	return out
}

// TestSessionApprovals: with an approver, the fake agent's permission
// requests are put to it and its answers are the requests' outcomes: an
// allow selects allow_once (the write on disk), allow for the session
// selects allow_once too and hub answers the next call of the same title
// itself, a deny selects reject_once (nothing on disk, the call denied,
// the turn ends ok though the agent says no more, as OpenCode), a stop
// ends the session permission_denied/tool_denied, and a request that names
// no call is refused without asking.
func TestSessionApprovals(t *testing.T) {
	t.Parallel()
	t.Run("allow once", func(t *testing.T) {
		t.Parallel()
		f := newFake(t)
		ap := &hubtest.Approver{Answer: hubtest.Verdict(hub.AllowOnce)}
		r := f.approvingSession(t, ap)
		target := filepath.Join(f.work, "once.txt")
		if tf := r.turn("ask: "+target, nil); !tf.OK || tf.Text != "option: once" {
			t.Errorf("turn: %+v, want ok, the agent told once", tf)
		}
		if b, err := os.ReadFile(target); err != nil || string(b) != "approved\n" {
			t.Errorf("%s: %q, %v, want the approved write", target, b, err)
		}
		calls := ap.Asked()
		if len(calls) != 1 {
			t.Fatalf("the approver was asked %d times, want once", len(calls))
		}
		c := calls[0]
		if c.Agent != "acp" || c.CallID != "call-1" || c.Name != target || c.Kind != events.ToolEdit ||
			!slices.Equal(c.Paths, []string{target}) || !strings.Contains(string(c.Input), `"filepath"`) ||
			!strings.Contains(c.Diff, "+approved") {
			t.Errorf("asked about %+v (diff %q), want the request's call: its title, kind edit, location, raw input and diff", c, c.Diff)
		}
		if fins := r.toolFinished(); len(fins) != 1 || fins[0].Status != events.ToolOK {
			t.Errorf("tool.finished %+v, want the write ok", fins)
		}
		if fin := r.close(); !fin.OK {
			t.Errorf("run.finished %+v, want ok", fin.Error)
		}
	})
	t.Run("allow session", func(t *testing.T) {
		t.Parallel()
		f := newFake(t)
		ap := &hubtest.Approver{Answer: hubtest.Verdict(hub.AllowSession)}
		r := f.approvingSession(t, ap)
		if tf := r.turn("ask-twice", nil); !tf.OK || tf.Text != "first: once, second: once" {
			t.Errorf("turn: %+v, want ok, both calls allowed once (hub remembers the session's allow itself)", tf)
		}
		if n := len(ap.Asked()); n != 1 {
			t.Errorf("the approver was asked %d times, want once: the second call has the first's title", n)
		}
		for _, name := range []string{"twice-1.txt", "twice-2.txt"} {
			if _, err := os.Stat(filepath.Join(f.work, name)); err != nil {
				t.Errorf("%s: %v, want it written", name, err)
			}
		}
		r.close()
	})
	t.Run("deny", func(t *testing.T) {
		t.Parallel()
		f := newFake(t)
		ap := &hubtest.Approver{Answer: hubtest.Verdict(hub.Deny)}
		r := f.approvingSession(t, ap)
		target := filepath.Join(f.work, "denied.txt")
		if tf := r.turn("ask: "+target, nil); !tf.OK || tf.Text != "" {
			t.Errorf("turn: %+v, want ok: the agent ended its turn after the refusal, which is the approver's", tf)
		}
		if _, err := os.Stat(target); err == nil {
			t.Errorf("%s is on disk: the denied write ran", target)
		}
		if fins := r.toolFinished(); len(fins) != 1 || fins[0].Status != events.ToolDenied || !strings.Contains(fins[0].Output, "rejected") {
			t.Errorf("tool.finished %+v, want the write denied with the agent's words", fins)
		}
		for _, ev := range r.events {
			if st, ok := ev.Body.(events.ToolStarted); ok {
				t.Errorf("%+v: the denied call never ran", st)
			}
		}
		if tf := r.turn("text", nil); !tf.OK {
			t.Errorf("turn after the denial: %+v, want ok", tf)
		}
		if fin := r.close(); !fin.OK || fin.ToolCallsDenied != 1 {
			t.Errorf("run.finished %+v (denied %d), want ok with one call denied", fin.Error, fin.ToolCallsDenied)
		}
	})
	t.Run("stop", func(t *testing.T) {
		t.Parallel()
		f := newFake(t)
		ap := &hubtest.Approver{Answer: hubtest.Verdict(hub.Stop)}
		r := f.approvingSession(t, ap)
		target := filepath.Join(f.work, "stopped.txt")
		tf := r.turn("ask: "+target, nil)
		if tf.OK || tf.Error == nil || tf.Error.Bin != events.BinPermissionDenied || tf.Error.Reason != events.ReasonToolDenied {
			t.Errorf("turn: %+v, want permission_denied/tool_denied", tf)
		}
		pid := r.pid()
		if fin := r.close(); fin.OK || fin.Error == nil || fin.Error.Reason != events.ReasonToolDenied {
			t.Errorf("run.finished %+v, want permission_denied/tool_denied", fin.Error)
		}
		if _, err := os.Stat(target); err == nil {
			t.Errorf("%s is on disk", target)
		}
		if pid != 0 && alive(pid) {
			t.Errorf("agent pid %d alive after the stop", pid)
		}
	})
	t.Run("no call", func(t *testing.T) {
		t.Parallel()
		f := newFake(t)
		ap := &hubtest.Approver{Answer: hubtest.Verdict(hub.AllowOnce)}
		r := f.approvingSession(t, ap)
		if tf := r.turn("ask-bare", nil); !tf.OK || tf.Text != "outcome: selected reject" {
			t.Errorf("turn: %+v, want the request refused (reject)", tf)
		}
		if n := len(ap.Asked()); n != 0 {
			t.Errorf("the approver was asked %d times about a request that names no call", n)
		}
		r.close()
	})
}

// TestSessionApprovalInterrupted: an interrupt while the approver thinks
// answers the pending request cancelled (after session/cancel, as ACP
// asks), the turn ends interrupted without waiting for the approver, and
// the approver's late allow is never sent (OpenCode 1.18.33 would still
// run the call). The session goes on.
func TestSessionApprovalInterrupted(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	release := make(chan struct{})
	answered := make(chan struct{})
	var r *session
	first := true
	ap := &hubtest.Approver{}
	ap.Answer = func(ctx context.Context, _ hub.ToolCall) hub.Decision {
		if !first {
			return hub.Decision{Verdict: hub.AllowOnce}
		}
		first = false
		defer close(answered)
		go func() { _ = r.s.Interrupt() }()
		select {
		case <-release:
		case <-ctx.Done():
		}
		return hub.Decision{Verdict: hub.AllowOnce}
	}
	r = f.approvingSession(t, ap)
	target := filepath.Join(f.work, "cancelled.txt")
	tf := r.turn("ask: "+target, nil)
	select {
	case <-answered:
		t.Errorf("the turn ended only after the approver answered")
	default:
	}
	close(release)
	<-answered
	if tf.OK || !tf.Interrupted {
		t.Errorf("turn: %+v, want interrupted", tf)
	}
	if fins := r.toolFinished(); len(fins) != 1 || fins[0].Status != events.ToolDenied {
		t.Errorf("tool.finished %+v, want the cancelled call denied", fins)
	}
	// The broker asks one call at a time: this one is asked once it has
	// answered the first, late.
	after := filepath.Join(f.work, "after.txt")
	if tf := r.turn("ask: "+after, nil); !tf.OK || tf.Text != "option: once" {
		t.Errorf("turn after the interrupt: %+v, want the write allowed", tf)
	}
	if tf := r.turn("late", nil); !tf.OK || !strings.HasPrefix(tf.Text, "late answers: 0") {
		t.Errorf("the agent got answers to requests already answered: %q", tf.Text)
	}
	if _, err := os.Stat(target); err == nil {
		t.Errorf("%s is on disk: the late allow ran the cancelled call", target)
	}
	if n := len(ap.Asked()); n != 2 {
		t.Errorf("the approver was asked %d times, want 2", n)
	}
	r.close()
}

// TestSessionApprovalFlood: a hostile agent that asks 1,000 permissions at
// once is bounded and never hangs hub. With the approver holding its first
// question, hub queues 64 requests (that one included) and refuses the
// other 936 at once, unasked; once the approver answers, the 64 are
// answered one at a time, each exactly once. With an approver that stops
// at the first question, every other request is refused unasked and the
// session ends permission_denied/tool_denied with its agent gone.
func TestSessionApprovalFlood(t *testing.T) {
	t.Parallel()
	const flood, queued = 1000, 64
	t.Run("bounded", func(t *testing.T) {
		t.Parallel()
		f := newFake(t)
		release := make(chan struct{})
		var mu sync.Mutex
		busy, most := 0, 0
		ap := &hubtest.Approver{Answer: func(ctx context.Context, _ hub.ToolCall) hub.Decision {
			mu.Lock()
			busy++
			most = max(most, busy)
			mu.Unlock()
			defer func() { mu.Lock(); busy--; mu.Unlock() }()
			select {
			case <-release:
			case <-ctx.Done():
			}
			return hub.Decision{Verdict: hub.AllowOnce}
		}}
		r := f.approvingSession(t, ap)
		refused := 0
		tf := r.turn("flood", func(ev events.Event) {
			if d, ok := ev.Body.(events.ApprovalDecided); ok && d.By == "policy" && strings.Contains(d.Message, "already wait") {
				if refused++; refused == flood-queued {
					close(release) // every request is in: let the approver answer
				}
			}
		})
		if want := fmt.Sprintf("once %d, reject %d, cancelled 0", queued, flood-queued); !tf.OK || tf.Text != want {
			t.Errorf("turn: %+v, want ok with %q", tf, want)
		}
		if n := len(ap.Asked()); n != queued || most != 1 {
			t.Errorf("the approver was asked %d times, at most %d at once; want %d, one at a time", n, most, queued)
		}
		fin := r.close()
		if a := fin.Approvals; a == nil || a.Requested != flood || a.Asked != queued || a.Allowed != queued || a.Denied != flood-queued {
			t.Errorf("run.finished approvals %+v, want %d requested, %d asked and allowed, %d denied", a, flood, queued, flood-queued)
		}
	})
	t.Run("stop", func(t *testing.T) {
		t.Parallel()
		f := newFake(t)
		ap := &hubtest.Approver{Answer: hubtest.Verdict(hub.Stop)}
		r := f.approvingSession(t, ap)
		tf := r.turn("flood", nil)
		if tf.OK || tf.Error == nil || tf.Error.Bin != events.BinPermissionDenied || tf.Error.Reason != events.ReasonToolDenied {
			t.Errorf("turn: %+v, want permission_denied/tool_denied", tf)
		}
		pid := r.pid()
		if fin := r.close(); fin.OK || fin.Error == nil || fin.Error.Reason != events.ReasonToolDenied {
			t.Errorf("run.finished %+v, want permission_denied/tool_denied", fin.Error)
		}
		if n := len(ap.Asked()); n != 1 {
			t.Errorf("the approver was asked %d times, want once: after its stop every request is refused unasked", n)
		}
		if pid != 0 && alive(pid) {
			t.Errorf("agent pid %d alive after the stop", pid)
		}
	})
}
