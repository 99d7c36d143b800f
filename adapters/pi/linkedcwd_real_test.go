package pi_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
)

// TestRealPermissionWorkspaceWriteLegitThroughLinkedCwd: false positives.
// --cwd is a symbolic link to the real directory, and the model writes a
// new file in a new nested directory by a relative path with "./" and
// "//", or names its own directory by its real name ("../work/h.txt":
// pi resolves a relative path from process.cwd(), the real directory, so
// it lands in --cwd): the write is inside --cwd and must land.
func TestRealPermissionWorkspaceWriteLegitThroughLinkedCwd(t *testing.T) {
	t.Parallel()
	for name, p := range map[string]string{"dot-slash": "./new//deep/./f.txt", "dotdot-inside": "new/../g.txt", "up-and-back-by-real-name": "../work/h.txt"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := agent.Prepare(t, hubtest.Setup{})
			link := filepath.Join(t.TempDir(), "linked-cwd")
			if err := os.Symlink(e.Work, link); err != nil {
				t.Fatal(err)
			}
			r := e.Run(t, `Write it. MOCK_CALL write {"path":"`+p+`","content":"ok"}`, budget.Limits{}, func(req *hub.Request) {
				req.Permission = grant.WorkspaceWrite
				req.Cwd = link
			})
			t.Logf("ok=%v err=%v text=%q", r.Fin.OK, r.Fin.Error, r.Fin.Text)
			if _, err := os.Stat(filepath.Join(e.Work, filepath.Clean(p))); err != nil || !r.Fin.OK {
				t.Fatalf("--permission workspace-write --cwd %s (a link): the write of %s, inside --cwd, did not land (%v) or the run failed (%v)", link, p, err, r.Fin.Error)
			}
		})
	}
}
