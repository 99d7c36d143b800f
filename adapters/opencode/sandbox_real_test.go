package opencode_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestRealSandbox: OpenCode in --sandbox copy and worktree
// (hubtest.Sandboxed), changing files by paths relative to its
// working directory, checked on the disk. write and edit take a relative
// filePath: OpenCode joins it to its project directory, which it takes
// from PWD (hub sets it to the sandbox). edit did not ask for a read of
// README.md first. No Shell: workspace-write offers OpenCode no bash
// (TestRealPermissions, shell-inside).
//
// In worktree mode OpenCode writes .git/opencode (its project id, the id
// of the repository's root commit) in the git directory the worktree
// shares with the original (it does the same in a run without a sandbox,
// in --cwd's own .git); hub puts it back as it was after the run
// (sandbox.agentGitCaches), so the original's .git is checked as
// unchanged here like every agent's.
func TestRealSandbox(t *testing.T) {
	t.Parallel()
	hubtest.Sandboxed(t, hubtest.SandboxAgent{
		Agent: agent,
		Add: func(path, content string) string {
			return hubtest.JSONCall("write", map[string]string{"filePath": path, "content": content + "\n"})
		},
		Edit: func(path, old, content string) string {
			return hubtest.JSONCall("edit", map[string]string{"filePath": path, "oldString": old, "newString": content + "\n"})
		},
	})
}
