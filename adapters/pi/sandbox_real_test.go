package pi_test

import (
	"encoding/json"
	"testing"

	"github.com/hubcli/hub/adapters/adaptertest"
)

// TestRealSandbox: pi in --sandbox copy and worktree, creating a file with
// its write tool and rewriting one with its edit tool by paths relative to
// its working directory, checked on the disk (adaptertest.Sandboxed).
func TestRealSandbox(t *testing.T) {
	t.Parallel()
	adaptertest.Sandboxed(t, adaptertest.SandboxAgent{
		Agent: agent,
		Add: func(path, content string) string {
			return adaptertest.JSONCall("write", map[string]string{"path": path, "content": content + "\n"})
		},
		Edit: func(path, old, content string) string {
			b, err := json.Marshal(map[string]any{"path": path, "edits": []map[string]string{{"oldText": old, "newText": content + "\n"}}})
			if err != nil {
				panic(err)
			}
			return "edit " + string(b)
		},
	})
}
