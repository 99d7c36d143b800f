package codex_test

import (
	"strings"
	"testing"

	"github.com/hubcli/hub/adapters/adaptertest"
)

// TestRealSandbox: Codex in --sandbox copy and worktree, creating and
// rewriting a file with apply_patch by paths relative to its working
// directory, checked on the disk (adaptertest.Sandboxed).
func TestRealSandbox(t *testing.T) {
	t.Parallel()
	adaptertest.Sandboxed(t, adaptertest.SandboxAgent{
		Agent: agent,
		Add: func(path, content string) string {
			return `apply_patch *** Begin Patch\n*** Add File: ` + path + `\n+` + content + `\n*** End Patch`
		},
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
	})
}
