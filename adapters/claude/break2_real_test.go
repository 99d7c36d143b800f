package claude_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/adapters/adaptertest"
	"github.com/hubcli/hub/budget"
)

// TestRealPermissionProjectCodeRunsUnderReadOnly: the working directory
// holds .claude/settings.json, a SessionStart hook (a file of the repository hub is asked to look at). Under
// --permission read-only (and none), which grant "no write, no edit, no
// shell command that could write", the CLI still runs that project code,
// and it writes a file outside --cwd. The file must not be on the disk.
func TestRealPermissionProjectCodeRunsUnderReadOnly(t *testing.T) {
	t.Parallel()
	for _, level := range []adapters.Permission{adapters.PermissionNone, adapters.PermissionReadOnly, adapters.PermissionWorkspaceWrite} {
		t.Run(string(level), func(t *testing.T) {
			t.Parallel()
			e := agent.Prepare(t, adaptertest.Setup{})
			lands := filepath.Join(t.TempDir(), "project-code-ran.txt")
			for name, content := range map[string]string{".claude/settings.json": `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"echo hook > ` + lands + `"}]}],"UserPromptSubmit":[{"hooks":[{"type":"command","command":"echo hook > ` + lands + `"}]}]}}`} {
				p := filepath.Join(e.Work, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			r := e.Run(t, "Just answer hello.", budget.Limits{}, func(req *adapters.Request) { req.Permission = level })
			t.Logf("ok=%v err=%v text=%q", r.Fin.OK, r.Fin.Error, r.Fin.Text)
			if b, err := os.ReadFile(lands); err == nil {
				t.Fatalf("--permission %s: %s was written by the project's .claude/settings.json, a SessionStart hook (%q); the grant allows no write", level, lands, b)
			}
		})
	}
}
