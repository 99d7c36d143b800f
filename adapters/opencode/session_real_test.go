package opencode_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/mockllm"
)

// TestRealSession runs OpenCode as a live session (hub.NewSession: one
// `opencode acp` process, hub's ACP client sending each turn as a
// session/prompt): three turns in one process, an interrupt
// (session/cancel) and a turn after it, a --max-cost crossed in the second
// turn, and hub killed mid-session leaving nothing behind.
func TestRealSession(t *testing.T) {
	t.Parallel()
	hubtest.LiveSessions(t, agent)
}

// TestRealSessionGrant: a live session holds --permission exactly as a
// one-shot run does (hub's agent hub-LEVEL, its rules OpenCode's own, made
// the ACP session's agent by default_agent): at each level the model is
// offered the same tools in a session's turn as in a one-shot run, and a
// write the level does not grant never lands on the disk (read-only: the
// write tool is not offered; workspace-write: a write outside --cwd is
// refused by external_directory, one inside lands; full: outside lands).
func TestRealSessionGrant(t *testing.T) {
	t.Parallel()
	write := func(path string) string {
		return "Write it. " + string(mockllm.Call) + " " + hubtest.JSONCall("write", map[string]string{"filePath": path, "content": "hello"})
	}
	tests := []struct {
		level   grant.Level
		outside bool // the write goes outside --cwd
		lands   bool
	}{
		{grant.None, false, false},
		{grant.ReadOnly, false, false},
		{grant.WorkspaceWrite, false, true},
		{grant.WorkspaceWrite, true, false},
		{grant.Full, true, true},
	}
	for _, tt := range tests {
		name := string(tt.level)
		if tt.outside {
			name += "/outside"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			level := func(req *hub.Request) { req.Permission = tt.level }
			one := agent.Prepare(t, hubtest.Setup{})
			r := one.Run(t, "Say hello. "+string(mockllm.Text), budget.Limits{Grace: 2 * time.Second}, level)
			if !r.Fin.OK {
				t.Fatalf("one-shot run: %+v", r.Fin.Error)
			}
			oneShot := offered(t, one)

			e := agent.Prepare(t, hubtest.Setup{})
			dir := e.Work
			if tt.outside {
				dir = e.Dir
			}
			path := filepath.Join(dir, "written.txt")
			s, err := hub.NewSession(t.Context(), hub.Request{Agent: agent.Name, Model: agent.Model, Bin: hubtest.Bin(t, agent.Name),
				Cwd: e.Work, Env: e.Env, Permission: tt.level, Limits: budget.Limits{Timeout: 5 * time.Minute, Grace: 2 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			var turns []events.TurnFinished
			for _, p := range []string{"Say hello. " + string(mockllm.Text), write(path)} {
				for ev, err := range s.Send(t.Context(), p) {
					if err != nil {
						t.Fatalf("Send: %v", err)
					}
					if tf, ok := ev.Body.(events.TurnFinished); ok {
						turns = append(turns, tf)
					}
				}
			}
			fin := s.Close()
			if left := hubtest.Leftovers(e.Dir); len(left) > 0 {
				t.Errorf("processes left after Close: %v", left)
			}
			calls := hubtest.ModelCalls(e.Server)
			if len(calls) == 0 || len(turns) != 2 || !turns[0].OK {
				t.Fatalf("session: %d model calls, turns %+v, run.finished %+v", len(calls), turns, fin)
			}
			live := slices.Sorted(slices.Values(calls[0].Tools))
			t.Logf("tools offered: %q; the write's turn: %+v", live, turns[1])
			if !slices.Equal(live, oneShot) {
				t.Errorf("tools offered in a session's turn %q, in a one-shot run %q: want the same", live, oneShot)
			}
			_, err = os.Stat(path)
			if lands := err == nil; lands != tt.lands {
				t.Errorf("the write to %s landed: %v, want %v (turn %+v)", path, lands, tt.lands, turns[1])
			}
		})
	}
}

// offered is the sorted tools the first model call of e's mock server
// offered.
func offered(t *testing.T, e *hubtest.Env) []string {
	t.Helper()
	calls := hubtest.ModelCalls(e.Server)
	if len(calls) == 0 {
		t.Fatal("no model call")
	}
	return slices.Sorted(slices.Values(calls[0].Tools))
}
