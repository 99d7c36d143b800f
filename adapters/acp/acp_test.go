package acp_test

// Tests of the ACP client against the scripted fake ACP agent
// (hubtest/fakeacp), played by this test binary: what a real agent
// cannot be made to do (permission requests of each kind, a hang that
// heeds or ignores session/cancel, a crash, malformed messages). Each run
// goes through hubtest.RunChecked: the event stream is valid against
// the schema and no process of the run is left.

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hubcli/hub"
	_ "github.com/hubcli/hub/adapters/acp"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/hubtest/fakeacp"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeacp.EnvScenario) != "" {
		fakeacp.Main()
	}
	os.Exit(m.Run())
}

// fake is one run's world: a home (whose path marks the run's processes)
// and a working directory.
type fake struct {
	dir, work string
	env       []string
}

func newFake(t *testing.T) *fake {
	dir, env := hubtest.Home(t)
	f := &fake{dir: dir, work: filepath.Join(dir, "work"), env: env}
	if err := os.MkdirAll(f.work, 0o755); err != nil {
		t.Fatal(err)
	}
	return f
}

// run runs the fake ACP agent (this test binary) on prompt, whose words
// choose the scenario, with limits and the edits to the request.
func (f *fake) run(t *testing.T, prompt string, lim budget.Limits, edit ...func(*hub.Request)) hubtest.Result {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if lim.Timeout == 0 {
		lim.Timeout = 5 * time.Minute // a net against a hang
	}
	req := hub.Request{Agent: "acp", Bin: exe, Prompt: prompt, Cwd: f.work, Limits: lim,
		Env: append(f.env, fakeacp.EnvScenario+"=prompt", "GORACE=atexit_sleep_ms=0",
			fakeacp.EnvPIDFile+"="+filepath.Join(f.dir, "pid"))}
	for _, e := range edit {
		e(&req)
	}
	return hubtest.RunChecked(t, req, f.dir)
}

func wantOK(t *testing.T, fin events.RunFinished) {
	t.Helper()
	if !fin.OK {
		t.Fatalf("run.finished not ok: %+v", fin.Error)
	}
}

func perm(p grant.Level) func(*hub.Request) {
	return func(r *hub.Request) { r.Permission = p }
}

func TestText(t *testing.T) {
	t.Parallel()
	r := newFake(t).run(t, "text", budget.Limits{})
	wantOK(t, r.Fin)
	if r.Fin.Text != fakeacp.Answer || r.Deltas() != fakeacp.Answer {
		t.Errorf("text = %q, deltas %q, want %q", r.Fin.Text, r.Deltas(), fakeacp.Answer)
	}
	if r.Fin.SessionID == nil || *r.Fin.SessionID != "fake-session" {
		t.Errorf("session_id = %v, want fake-session", r.Fin.SessionID)
	}
	var reasoning []string
	var usage []events.Usage
	for _, ev := range r.Events {
		switch b := ev.Body.(type) {
		case events.Reasoning:
			reasoning = append(reasoning, b.Text)
		case events.Usage:
			usage = append(usage, b)
		case events.SessionStarted:
			if b.Model == nil || *b.Model != "fake/model" {
				t.Errorf("session.started model = %v, want the agent's current model", b.Model)
			}
		}
	}
	if len(reasoning) != 2 || reasoning[0] != "Thinking it over." || !strings.Contains(reasoning[1], "[in_progress] answer") {
		t.Errorf("reasoning = %q, want the thought and the plan", reasoning)
	}
	want := events.Tokens{Input: 800, Output: 50, CacheRead: 200, Reasoning: 5}
	if len(usage) != 1 {
		t.Fatalf("%d usage events, want 1 (the prompt's)", len(usage))
	}
	u := usage[0]
	if u.Total.CostUSD == nil || *u.Total.CostUSD != 0.0125 || u.CostSource != events.CostReported {
		t.Errorf("usage cost = %v %s, want 0.0125 reported", u.Total.CostUSD, u.CostSource)
	}
	u.Total.CostUSD = nil
	if u.Total != want {
		t.Errorf("usage total = %+v, want %+v", u.Total, want)
	}
	if r.Fin.ExitCode == nil || *r.Fin.ExitCode != 0 || r.Fin.Signal != nil {
		t.Errorf("exit = %v %v, want 0: the agent ends when hub closes its stdin", r.Fin.ExitCode, r.Fin.Signal)
	}
}

// TestPermission: each permission request is answered from the grant, at
// once, and the disk shows the answer: the file is written only when the
// grant allows it.
func TestPermission(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "outside.txt")
	tests := []struct {
		name, prompt string
		level        grant.Level
		path         string // "" for the working directory's out.txt
		written      bool
	}{
		{"write inside, workspace-write", "write", grant.WorkspaceWrite, "", true},
		{"write inside, read-only", "write", grant.ReadOnly, "", false},
		{"write inside, none", "write", grant.None, "", false},
		{"write outside, workspace-write", "write: " + outside, grant.WorkspaceWrite, outside, false},
		{"shell, workspace-write", "shell", grant.WorkspaceWrite, "", false},
		{"write outside, full", "write: " + outside + "-full", grant.Full, outside + "-full", true},
		// A request of kind other (OpenCode's external_directory) is an
		// effect the agent asks about: only full grants it.
		{"other kind, workspace-write", "other: " + outside + "-other", grant.WorkspaceWrite, outside + "-other", false},
		{"other kind, full", "other: " + outside + "-other-full", grant.Full, outside + "-other-full", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t)
			path := tt.path
			if path == "" {
				path = filepath.Join(f.work, "out.txt")
			}
			r := f.run(t, tt.prompt, budget.Limits{}, perm(tt.level))
			wantOK(t, r.Fin)
			_, err := os.Stat(path)
			if written := err == nil; written != tt.written {
				t.Errorf("file written = %v, want %v", written, tt.written)
			}
			started, fin := r.Tool()
			switch {
			case fin == nil:
				t.Fatal("no tool.finished")
			case tt.written && (started == nil || fin.Status != events.ToolOK):
				t.Errorf("allowed call: started %v, status %s, want a tool.started and ok", started, fin.Status)
			case !tt.written && (started != nil || fin.Status != events.ToolDenied || r.Fin.ToolCallsDenied != 1):
				t.Errorf("refused call: started %v, status %s, %d denied, want no tool.started, denied, 1",
					started, fin.Status, r.Fin.ToolCallsDenied)
			}
		})
	}
}

// TestGiveUp: an agent that ends its turn without an answer after hub
// rejected its request (codex-acp cancels the turn) is
// permission_denied/tool_denied, and nothing ran.
func TestGiveUp(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	r := f.run(t, "giveup", budget.Limits{})
	hubtest.WantErr(t, r.Fin, events.BinPermissionDenied, events.ReasonToolDenied, 0)
	if _, err := os.Stat(filepath.Join(f.work, "out.txt")); err == nil {
		t.Error("the rejected command ran")
	}
}

// TestUnasked: a tool the agent runs without asking, outside the grant,
// stops the run once it shows it runs (its output; hub's watch), and the
// agent is gone.
func TestUnasked(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	r := f.run(t, "unasked", budget.Limits{Grace: 100 * time.Millisecond})
	hubtest.WantErr(t, r.Fin, events.BinPermissionDenied, events.ReasonEffectNotGranted, 0)
}

// TestCancel: a limit sends session/cancel first; an agent that heeds it
// ends the turn (stopReason cancelled) and exits on its own, before any
// signal; one that does not is SIGTERMed a grace period later and
// SIGKILLed after another, and the child it hid in a session of its own
// is gone too.
func TestCancel(t *testing.T) {
	t.Parallel()
	t.Run("heeded", func(t *testing.T) {
		t.Parallel()
		lim := budget.Limits{IdleTimeout: 2 * time.Second, Grace: time.Hour}
		r := newFake(t).run(t, "hang", lim)
		hubtest.WantErr(t, r.Fin, events.BinTimeout, events.ReasonIdle, 0)
		if r.Fin.Signal != nil || r.Fin.ExitCode == nil || *r.Fin.ExitCode != 0 {
			t.Errorf("exit = %v, signal %v, want 0 and none: the agent heeded session/cancel", r.Fin.ExitCode, r.Fin.Signal)
		}
	})
	t.Run("ignored", func(t *testing.T) {
		t.Parallel()
		grace := 200 * time.Millisecond
		f := newFake(t)
		lim := budget.Limits{IdleTimeout: 2 * time.Second, Grace: grace}
		r := f.run(t, "grandchild", lim)
		hubtest.WantErr(t, r.Fin, events.BinTimeout, events.ReasonIdle, 0)
		if r.Fin.Signal == nil || *r.Fin.Signal != "SIGKILL" {
			t.Errorf("signal = %v, want SIGKILL (it ignores session/cancel and SIGTERM)", r.Fin.Signal)
		}
		if r.Took < lim.IdleTimeout+2*grace {
			t.Errorf("took %v, want at least the idle limit and two grace periods (%v)", r.Took, lim.IdleTimeout+2*grace)
		}
		b, err := os.ReadFile(filepath.Join(f.dir, "pid"))
		if err != nil {
			t.Fatal(err)
		}
		pid, _ := strconv.Atoi(string(b))
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("the agent's child %d is still alive", pid)
		}
	})
	t.Run("wall", func(t *testing.T) {
		t.Parallel()
		r := newFake(t).run(t, "hang", budget.Limits{Timeout: 2 * time.Second, Grace: time.Hour})
		hubtest.WantErr(t, r.Fin, events.BinTimeout, events.ReasonWall, 0)
	})
}

// TestStuckStdin: an agent that stops reading its stdin (a prompt larger
// than the pipe holds is never taken) cannot hold up the stop: the
// session/cancel that cannot be written is given up after a bounded wait
// and the SIGTERM follows, whatever the grace.
func TestStuckStdin(t *testing.T) {
	t.Parallel()
	lim := budget.Limits{IdleTimeout: time.Second, Grace: time.Hour}
	r := newFake(t).run(t, "text "+strings.Repeat("x", 1<<20), lim, func(r *hub.Request) {
		r.Env = append(r.Env, fakeacp.EnvScenario+"=stuck")
	})
	hubtest.WantErr(t, r.Fin, events.BinTimeout, events.ReasonIdle, 0)
	if r.Fin.Signal == nil || *r.Fin.Signal != "SIGTERM" {
		t.Errorf("signal = %v, want SIGTERM (not the SIGKILL after the hour's grace)", r.Fin.Signal)
	}
}

// TestFailures: how each way an ACP agent fails is binned.
func TestFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		prompt string
		bin    events.Bin
		reason events.Reason
	}{
		{"crash", events.BinAgentFailed, events.ReasonExitStatus},
		{"error", events.BinUnavailable, events.ReasonRateLimit},
		{"auth", events.BinUnavailable, events.ReasonAuth},
		{"max_tokens", events.BinBudgetExceeded, events.ReasonTokens},
		{"refusal", events.BinAgentFailed, events.ReasonErrorEvent},
		{"nothing-known", events.BinInvalidInput, events.ReasonBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.prompt, func(t *testing.T) {
			t.Parallel()
			r := newFake(t).run(t, tt.prompt, budget.Limits{Grace: 100 * time.Millisecond}, func(r *hub.Request) {
				if tt.prompt == "auth" { // before the prompt
					r.Env = append(r.Env, fakeacp.EnvScenario+"=auth")
				}
			})
			hubtest.WantErr(t, r.Fin, tt.bin, tt.reason, 0)
			if tt.prompt == "crash" && !strings.Contains(r.Fin.Error.Message, "segmentation fault") {
				t.Errorf("message = %q, want the agent's last stderr line", r.Fin.Error.Message)
			}
			if tt.prompt == "error" && (r.Fin.Error.RetryAfterS == nil || *r.Fin.Error.RetryAfterS != 20) {
				t.Errorf("retry_after_s = %v, want 20 (the provider's)", r.Fin.Error.RetryAfterS)
			}
		})
	}
}

// TestStray: responses to no request of hub's (id null, an unknown id, a
// repeat) are notices; the answers to hub's own requests, paired by id,
// decide.
func TestStray(t *testing.T) {
	t.Parallel()
	r := newFake(t).run(t, "text", budget.Limits{}, func(r *hub.Request) {
		r.Env = append(r.Env, fakeacp.EnvScenario+"=stray")
	})
	wantOK(t, r.Fin)
	if r.Fin.Text != fakeacp.Answer || r.Fin.SessionID == nil || *r.Fin.SessionID != "fake-session" {
		t.Errorf("text %q, session %v; want the answer and the session", r.Fin.Text, r.Fin.SessionID)
	}
	if n := len(r.Notices(events.NoticeUnknownEvent)); n != 4 {
		t.Errorf("%d unknown_event notices, want 4 (null id, unknown id, id 7, the repeat)", n)
	}
}

// TestPermissionBurst: 200 permission requests at once, alternately inside
// and outside --cwd, are each answered from their own content (the
// agent counts the answers that are not the grant's), and the events say
// the same.
func TestPermissionBurst(t *testing.T) {
	t.Parallel()
	r := newFake(t).run(t, "burst", budget.Limits{}, perm(grant.WorkspaceWrite))
	wantOK(t, r.Fin)
	if r.Fin.Text != "wrong answers: 0" || r.Fin.ToolCallsDenied != 100 {
		t.Errorf("text %q, %d calls denied; want no wrong answer and the 100 outside denied", r.Fin.Text, r.Fin.ToolCallsDenied)
	}
}

// TestPermissionAskedAgain: a second request under the same tool call id
// is decided on what it asks: a read allowed under read-only does not
// allow the shell command asked for next.
func TestPermissionAskedAgain(t *testing.T) {
	t.Parallel()
	r := newFake(t).run(t, "reuse", budget.Limits{})
	wantOK(t, r.Fin)
	if r.Fin.Text != "first: allow, second: reject" {
		t.Errorf("text %q, want the read allowed and the shell rejected", r.Fin.Text)
	}
}

// TestMalformed: lines that are not ACP messages are notices, and the run
// still ends with the agent's answer.
func TestMalformed(t *testing.T) {
	t.Parallel()
	r := newFake(t).run(t, "malformed", budget.Limits{})
	wantOK(t, r.Fin)
	if r.Fin.Text != fakeacp.Answer {
		t.Errorf("text = %q, want %q", r.Fin.Text, fakeacp.Answer)
	}
	for _, k := range []events.NoticeKind{events.NoticeNonJSONOutput, events.NoticeParseError, events.NoticeUnknownEvent} {
		if len(r.Notices(k)) == 0 {
			t.Errorf("no %s notice", k)
		}
	}
}

// TestReadFile: fs/read_text_file is served inside --cwd and refused
// outside it.
func TestReadFile(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("outside text"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFake(t)
	inside := filepath.Join(f.work, "in.txt")
	if err := os.WriteFile(inside, []byte("inside text"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := f.run(t, "read: "+inside, budget.Limits{})
	wantOK(t, r.Fin)
	if !strings.Contains(r.Fin.Text, "inside text") {
		t.Errorf("text = %q, want the file's text", r.Fin.Text)
	}
	r = f.run(t, "read: "+outside, budget.Limits{})
	wantOK(t, r.Fin)
	if strings.Contains(r.Fin.Text, "outside text") || !strings.Contains(r.Fin.Text, "outside the working directory") {
		t.Errorf("text = %q, want hub's refusal, not the file", r.Fin.Text)
	}
}

// TestResume: --resume loads the session; the history the agent replays
// is not the run's.
func TestResume(t *testing.T) {
	t.Parallel()
	r := newFake(t).run(t, "load", budget.Limits{}, func(r *hub.Request) { r.Resume = "fake-session" })
	wantOK(t, r.Fin)
	if r.Fin.Text != fakeacp.Answer || strings.Contains(r.Deltas(), "old") {
		t.Errorf("text = %q, deltas %q, want only this turn's", r.Fin.Text, r.Deltas())
	}
}

// TestModel: --model is set with session/set_model; one the agent refuses
// is invalid_input/bad_model.
func TestModel(t *testing.T) {
	t.Parallel()
	r := newFake(t).run(t, "text", budget.Limits{}, func(r *hub.Request) { r.Model = "fake/model" })
	wantOK(t, r.Fin)
	r = newFake(t).run(t, "text", budget.Limits{}, func(r *hub.Request) { r.Model = "nope/x" })
	hubtest.WantErr(t, r.Fin, events.BinInvalidInput, events.ReasonBadModel, 0)
}

// TestRefused: what an ACP run cannot do is refused before anything starts.
func TestRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		edit   func(*hub.Request)
		bin    events.Bin
		reason events.Reason
	}{
		{"no command", func(r *hub.Request) { r.Bin = "" }, events.BinInvalidInput, events.ReasonBadRequest},
		{"missing command", func(r *hub.Request) { r.Bin = "no-such-acp-agent" }, events.BinNotInstalled, events.ReasonNotFound},
		{"tty", func(r *hub.Request) { r.TTY = true }, events.BinInvalidInput, events.ReasonBadRequest},
		{"args for another agent", func(r *hub.Request) { r.Agent, r.Args = "opencode", []string{"acp"} }, events.BinInvalidInput, events.ReasonBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newFake(t).run(t, "text", budget.Limits{}, tt.edit)
			hubtest.WantErr(t, r.Fin, tt.bin, tt.reason, 0)
			for _, ev := range r.Events {
				if st, ok := ev.Body.(events.RunStarted); ok && st.PID != nil {
					t.Errorf("run.started has pid %d: something started", *st.PID)
				}
			}
		})
	}
}
