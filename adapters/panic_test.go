package adapters_test

import (
	"testing"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/proc"
)

// TestSinkPanicStopsAgent: a sink that panics mid-run (a caller's bug) gets
// its panic back from Run, and the agent's tree is gone by then: killed and
// waited for, not left running.
func TestSinkPanicStopsAgent(t *testing.T) {
	t.Parallel()
	req := adapters.Request{Agent: "opencode", Prompt: "x", Bin: fakeBin(t, "ignore-term")}
	pid := 0
	got := func() (p any) {
		defer func() { p = recover() }()
		adapters.Run(t.Context(), req, func(ev events.Event) error {
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
