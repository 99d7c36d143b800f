package pi_test

import (
	"encoding/json"
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestRealSandbox: pi in --sandbox copy and worktree
// (hubtest.Sandboxed), changing files by paths relative to its
// working directory, checked on the disk. write and edit take a relative
// path, which pi resolves against its working directory (process.cwd(),
// the sandbox), as hub's extension (confine.ts) and watch do. No Shell:
// workspace-write offers pi no bash (TestRealPermissions, shell-inside).
func TestRealSandbox(t *testing.T) {
	t.Parallel()
	hubtest.Sandboxed(t, hubtest.SandboxAgent{
		Agent: agent,
		Add: func(path, content string) string {
			return hubtest.JSONCall("write", map[string]string{"path": path, "content": content + "\n"})
		},
		// pi 0.73.1's edit: a list of exact replacements.
		Edit: func(path, old, content string) string {
			b, err := json.Marshal(map[string]any{"path": path, "edits": []map[string]string{{"oldText": old, "newText": content + "\n"}}})
			if err != nil {
				panic(err) // strings always encode
			}
			return "edit " + string(b)
		},
	})
}
