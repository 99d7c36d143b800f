package codex_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestRealSession: Codex holds a live session through its app-server (one
// process for every turn), against the mock server.
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
