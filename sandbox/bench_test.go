package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hubcli/hub/sandbox"
)

// benchTree writes files files of size bytes each, 50 to a directory,
// and makes it a git repository with one commit when repo is set.
func benchTree(b *testing.B, files, size int, repo bool) string {
	b.Helper()
	root := b.TempDir()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte('a' + i%26)
		if i%80 == 79 {
			data[i] = '\n'
		}
	}
	for i := 0; i < files; i++ {
		p := filepath.Join(root, fmt.Sprintf("d%03d", i/50), fmt.Sprintf("f%04d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if repo {
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "b"}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git %v: %v %s", args, err, out)
			}
		}
	}
	return root
}

// BenchmarkSandbox measures a whole sandbox's life on a tree of 2,000
// files of 4 KiB (8 MiB): Open, one file changed, Changes (the diff) and
// Remove, in each mode.
//
//	go test -run '^$' -bench Sandbox -benchtime 20x ./sandbox/
func BenchmarkSandbox(b *testing.B) {
	for _, tc := range []struct {
		name string
		mode sandbox.Mode
		repo bool
	}{{"copy", sandbox.Copy, false}, {"copy-in-repo", sandbox.Copy, true}, {"worktree", sandbox.Worktree, true}} {
		b.Run(tc.name, func(b *testing.B) {
			root := benchTree(b, 2000, 4096, tc.repo)
			b.SetBytes(2000 * 4096)
			for b.Loop() {
				sb, err := sandbox.Open(context.Background(), root, sandbox.Options{Mode: tc.mode})
				if err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(sb.Dir, "d000", "f0000.txt"), []byte("changed\n"), 0o644); err != nil {
					b.Fatal(err)
				}
				res, err := sb.Changes(context.Background())
				if err != nil || len(res.Files) != 1 {
					b.Fatalf("Changes = %v, %v; want one file", res, err)
				}
				if err := sb.Remove(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
