package claude_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestRealSandbox: Claude Code in --sandbox copy and worktree
// (hubtest.Sandboxed), changing files by paths relative to its
// working directory, checked on the disk. Write and Edit take a relative
// file_path although their descriptions ask for an absolute one: Claude
// Code 2.1.328 resolves it against its working directory, the sandbox
// (and hub's watch joins it to the same directory). Neither asked for a
// Read of README.md before changing it. Bash runs in the working
// directory, so `echo … > src/shell.txt` lands there too.
func TestRealSandbox(t *testing.T) {
	t.Parallel()
	hubtest.Sandboxed(t, hubtest.SandboxAgent{
		Agent: agent,
		Add: func(path, content string) string {
			return hubtest.JSONCall("Write", map[string]string{"file_path": path, "content": content + "\n"})
		},
		Edit: func(path, old, content string) string {
			return hubtest.JSONCall("Edit", map[string]string{"file_path": path, "old_string": old, "new_string": content + "\n"})
		},
		Shell: func(path, content string) string {
			return hubtest.JSONCall("Bash", map[string]string{"command": "echo " + content + " > " + path, "description": "w"})
		},
	})
}
