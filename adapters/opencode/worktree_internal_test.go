package opencode

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckWorktree checks which working directories workspace-write is
// refused for OpenCode: below the top of a git worktree, or the top of a
// repository whose config sets core.worktree; not a repository's own top,
// nor a directory outside git, nor a repository nested in another.
func TestCheckWorktree(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	mk := func(p string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(root, p)
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mk("plain/dir")
	mk("repo/.git")
	mk("repo/sub/deeper")
	mk("repo/nested/.git")
	mk("wt/.git")
	write("wt/.git/config", "[core]\n\tbare = false\n\tworktree = "+root+"\n")
	mk("linked")
	mk("gitdirs/linked")
	write("linked/.git", "gitdir: ../gitdirs/linked\n")
	write("gitdirs/linked/config", "[core]\n worktree = /\n")
	for _, tt := range []struct {
		dir     string
		refused bool
	}{
		{"plain/dir", false},
		{"repo", false},
		{"repo/sub", true},
		{"repo/sub/deeper", true},
		{"repo/nested", false},
		{"wt", true},
		{"linked", true},
	} {
		if err := checkWorktree(filepath.Join(root, tt.dir)); (err != nil) != tt.refused {
			t.Errorf("%s: checkWorktree = %v, want refused %v", tt.dir, err, tt.refused)
		}
	}
}

// TestCheckPlugins checks that a project's OpenCode plugins, in --cwd or
// above it up to the top of its git worktree, are found, and that nothing
// above the worktree's top is looked at.
func TestCheckPlugins(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for _, d := range []string{"a/.opencode/plugins", "a/repo/.git", "a/repo/sub", "b/.opencode/plugin", "b/c", "clean/.opencode/agent"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		dir     string
		refused bool
	}{
		{"a", true},
		{"a/repo/sub", false}, // a/.opencode is above the worktree's top
		{"b/c", true},
		{"clean", false},
	} {
		if err := checkPlugins(filepath.Join(root, tt.dir)); (err != nil) != tt.refused {
			t.Errorf("%s: checkPlugins = %v, want refused %v", tt.dir, err, tt.refused)
		}
	}
}
