package claude_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestRealSession runs Claude Code as a live session (hub.NewSession, its
// stream-json input): three turns in one process, an interrupt and a turn
// after it, a --max-cost crossed in the second turn (at its result: Claude
// Code reports cost only there).
func TestRealSession(t *testing.T) {
	t.Parallel()
	hubtest.LiveSessions(t, agent)
}

// TestSessionLatency is a measurement (HUB_BENCH_SESSION=<pairs>): a
// follow-up turn in a live session against a fresh run resuming it.
func TestSessionLatency(t *testing.T) { hubtest.SessionLatency(t, agent) }

// TestACPLatency is a measurement (HUB_BENCH_ACP=<prompts>): hub acp's
// follow-up prompts in one ACP session.
func TestACPLatency(t *testing.T) { hubtest.ACPLatency(t, agent) }
