package codex_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestRealSession: Codex has no live session through hub yet (its
// app-server is not driven), so hub.NewSession holds one by resuming, and
// says so (session.started mode "resume").
func TestRealSession(t *testing.T) {
	t.Parallel()
	hubtest.ResumedSessions(t, agent)
}
