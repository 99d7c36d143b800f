package codex_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestRealApproval: a live Codex session with an approver, read-only: the
// model's apply_patch adding a file is a write outside the sandbox, which
// Codex's app-server asks about (item/fileChange/requestApproval, under
// approvalPolicy "on-request"), and hub puts it to the approver.
func TestRealApproval(t *testing.T) {
	t.Parallel()
	hubtest.ApprovalSessions(t, agent, hubtest.ApprovalCase{Prompt: func(_, name string) string {
		return `write it MOCK_CALL apply_patch *** Begin Patch\n*** Add File: ` + name + `\n+approved\n*** End Patch`
	}})
}
