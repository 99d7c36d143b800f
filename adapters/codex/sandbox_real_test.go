package codex_test

import (
	"strings"
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestRealSandbox: Codex in --sandbox copy and worktree
// (hubtest.Sandboxed), changing files by paths relative to its
// working directory, checked on the disk. apply_patch takes relative
// paths (its usual form): Codex resolves them against its working
// directory, the sandbox, and reports the file_change with the absolute
// path there. exec_command runs in the working directory, inside Codex's
// own workspace-write sandbox, which has the hub sandbox (under the
// system's temporary directory) as its writable root.
func TestRealSandbox(t *testing.T) {
	t.Parallel()
	hubtest.Sandboxed(t, hubtest.SandboxAgent{
		Agent: agent,
		Add: func(path, content string) string {
			return `apply_patch *** Begin Patch\n*** Add File: ` + path + `\n+` + content + `\n*** End Patch`
		},
		// An Update File hunk that removes every old line and adds one.
		Edit: func(path, old, content string) string {
			var b strings.Builder
			b.WriteString(`apply_patch *** Begin Patch\n*** Update File: ` + path + `\n@@`)
			for _, l := range strings.SplitAfter(old, "\n") {
				if l != "" {
					b.WriteString(`\n-` + strings.TrimSuffix(l, "\n"))
				}
			}
			b.WriteString(`\n+` + content + `\n*** End Patch`)
			return b.String()
		},
		Shell: func(path, content string) string {
			return hubtest.JSONCall("exec_command", map[string]string{"cmd": "echo " + content + " > " + path})
		},
	})
}
