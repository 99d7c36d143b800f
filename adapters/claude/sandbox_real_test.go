package claude_test

import (
	"testing"

	"github.com/hubcli/hub/adapters/adaptertest"
)

// TestRealSandbox: Claude Code in --sandbox copy and worktree, creating a
// file with Write and rewriting one with Bash by paths relative to its
// working directory, checked on the disk (adaptertest.Sandboxed).
func TestRealSandbox(t *testing.T) {
	t.Parallel()
	adaptertest.Sandboxed(t, adaptertest.SandboxAgent{
		Agent: agent,
		Add: func(path, content string) string {
			return adaptertest.JSONCall("Write", map[string]string{"file_path": path, "content": content + "\n"})
		},
		Edit: func(path, old, content string) string {
			return adaptertest.JSONCall("Bash", map[string]string{"command": "echo " + content + " > " + path, "description": "w"})
		},
	})
}
