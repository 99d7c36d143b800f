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
