package opencode_test

import (
	"testing"

	"github.com/hubcli/hub/adapters/adaptertest"
)

// TestRealSandbox: OpenCode in --sandbox copy and worktree, creating a
// file with its write tool by a path relative to its working directory,
// checked on the disk (adaptertest.Sandboxed).
func TestRealSandbox(t *testing.T) {
	t.Parallel()
	adaptertest.Sandboxed(t, adaptertest.SandboxAgent{
		Agent: agent,
		Add: func(path, content string) string {
			return adaptertest.JSONCall("write", map[string]string{"filePath": path, "content": content + "\n"})
		},
		Edit: func(path, old, content string) string {
			return adaptertest.JSONCall("write", map[string]string{"filePath": path, "content": content + "\n"})
		},
	})
}
