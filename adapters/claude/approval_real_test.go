package claude_test

import (
	"path/filepath"
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestRealApproval: a live Claude Code session with an approver,
// read-only: the model's Write is asked about (a can_use_tool control
// request) and hub puts it to the approver.
func TestRealApproval(t *testing.T) {
	t.Parallel()
	hubtest.ApprovalSessions(t, agent, hubtest.ApprovalCase{Prompt: func(dir, name string) string {
		return `write it MOCK_CALL Write {"file_path":"` + filepath.Join(dir, name) + `","content":"approved"}`
	}})
}
