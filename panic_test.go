package hub_test

import (
	"path/filepath"
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/internal/proc"
)

// TestSinkPanicStopsAgent: a sink that panics mid-run (a caller's bug) gets
// its panic back from Run, and the agent's tree is gone by then: killed and
// waited for, not left running.
func TestSinkPanicStopsAgent(t *testing.T) {
	t.Parallel()
	req := hub.Request{Agent: "opencode", Prompt: "x", Bin: fakeBin(t, "ignore-term")}
	pid := 0
	got := func() (p any) {
		defer func() { p = recover() }()
		hub.Run(t.Context(), req, func(ev events.Event) error {
			if rs, ok := ev.Body.(events.RunStarted); ok && rs.PID != nil {
				pid = *rs.PID
			}
			if ev.Type() == events.TypeSessionStarted {
				panic("sink bug")
			}
			return nil
		})
		return nil
	}()
	if got != "sink bug" {
		t.Fatalf("recovered %v, want the sink's panic", got)
	}
	if pid == 0 {
		t.Fatal("run.started had no pid")
	}
	if live := proc.LiveInGroup(pid); len(live) > 0 || proc.Running(pid) {
		t.Errorf("agent %d (group: %v) still running after Run panicked", pid, live)
	}
}

// A sink that panics at a stderr notice, which the stderr goroutine sends:
// Run still stops the agent, waits for it and hands the panic back on the
// caller's goroutine (not a crash of the program from another goroutine).
func TestSinkPanicAtStderrNoticeStopsAgent(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "opencode")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 1.18.33; exit 0; fi\necho 'oops on stderr' >&2\nexec sleep 30\n"
	if err := hubtest.WriteScript(bin, []byte(script)); err != nil {
		t.Fatal(err)
	}
	req := hub.Request{Agent: "opencode", Prompt: "x", Bin: bin}
	pid := 0
	got := func() (p any) {
		defer func() { p = recover() }()
		hub.Run(t.Context(), req, func(ev events.Event) error {
			if rs, ok := ev.Body.(events.RunStarted); ok && rs.PID != nil {
				pid = *rs.PID
			}
			if n, ok := ev.Body.(events.Notice); ok && n.Kind == events.NoticeStderr {
				panic("sink bug at stderr")
			}
			return nil
		})
		return nil
	}()
	if got != "sink bug at stderr" {
		t.Fatalf("recovered %v, want the sink's panic", got)
	}
	if live := proc.LiveInGroup(pid); pid == 0 || len(live) > 0 || proc.Running(pid) {
		t.Errorf("agent %d (group: %v) still running after Run panicked", pid, live)
	}
}
