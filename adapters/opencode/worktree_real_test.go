package opencode_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
)

// TestRealPermissionWorkspaceWriteGitWorktree: --cwd is a directory inside
// a git repository (repo/sub), the common case of "work on this package".
// OpenCode's external_directory rule lets through any path inside the
// project's git worktree, not only inside its working directory, so under
// --permission workspace-write a write to repo/outside.txt, outside --cwd,
// is not asked about; no link is involved, so CheckLinks finds nothing. The
// file must not be on the disk.
func TestRealPermissionWorkspaceWriteGitWorktree(t *testing.T) {
	t.Parallel()
	e := agent.Prepare(t, hubtest.Setup{})
	repo := e.Work
	if out, err := exec.Command("git", "init", "-q", repo).CombinedOutput(); err != nil {
		t.Skipf("git init: %v %s", err, out)
	}
	sub := filepath.Join(repo, "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	lands := filepath.Join(repo, "outside.txt")
	prompt := fmt.Sprintf(`Write it. MOCK_CALL write {"filePath":%q,"content":"escaped"}`, lands)
	r := e.Run(t, prompt, budget.Limits{}, func(req *hub.Request) {
		req.Permission = grant.WorkspaceWrite
		req.Cwd = sub
	})
	t.Logf("ok=%v err=%v text=%q", r.Fin.OK, r.Fin.Error, r.Fin.Text)
	if b, err := os.ReadFile(lands); err == nil {
		t.Fatalf("--permission workspace-write --cwd %s: %s, outside --cwd but inside the git worktree, was written (%q); the grant allows writes under --cwd only", sub, lands, b)
	}
}

// TestRealPermissionWorkspaceWriteGitCoreWorktree: --cwd is a git
// repository's own top directory, but the repository's .git/config (a
// file of the directory hub is asked to work on) sets core.worktree to a
// directory above it. OpenCode takes `git rev-parse --show-toplevel` as
// the project's worktree and its external_directory rule lets through any
// path under it, so under --permission workspace-write a write to a
// sibling of --cwd is not asked about. The file must not be on the disk.
func TestRealPermissionWorkspaceWriteGitCoreWorktree(t *testing.T) {
	t.Parallel()
	e := agent.Prepare(t, hubtest.Setup{})
	above := filepath.Dir(e.Work)
	for _, args := range [][]string{{"init", "-q"}, {"config", "core.worktree", above}} {
		if out, err := exec.Command("git", append([]string{"-C", e.Work}, args...)...).CombinedOutput(); err != nil {
			t.Skipf("git %v: %v %s", args, err, out)
		}
	}
	lands := filepath.Join(above, "sibling", "outside.txt")
	prompt := fmt.Sprintf(`Write it. MOCK_CALL write {"filePath":%q,"content":"escaped"}`, lands)
	r := e.Run(t, prompt, budget.Limits{}, func(req *hub.Request) { req.Permission = grant.WorkspaceWrite })
	t.Logf("ok=%v err=%v text=%q", r.Fin.OK, r.Fin.Error, r.Fin.Text)
	if b, err := os.ReadFile(lands); err == nil {
		t.Fatalf("--permission workspace-write --cwd %s (core.worktree %s in its .git/config): %s, outside --cwd, was written (%q); the grant allows writes under --cwd only", e.Work, above, lands, b)
	}
}
