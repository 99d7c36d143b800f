package sandbox_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/hubcli/hub/sandbox"
)

// makeApplyBase fills root with the tree the Apply tests change.
func makeApplyBase(t *testing.T, root string) {
	writeFile(t, root, "a.txt", "alpha\nbeta\ngamma\n", 0o644)
	writeFile(t, root, "b.txt", "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n", 0o644)
	writeFile(t, root, "dir/c.txt", "c\n", 0o644)
	writeFile(t, root, "run.sh", "#!/bin/sh\necho hi\n", 0o755)
	writeFile(t, root, "private.txt", "mine\n", 0o600)
	writeFile(t, root, "bin.dat", "\x00\x01\x02binary\n", 0o644)
	writeFile(t, root, "crlf.txt", "one\r\ntwo\r\n", 0o644)
	writeFile(t, root, "with space.txt", "space\n", 0o644)
	writeFile(t, root, "ünï/cødé.txt", "unicode\n", 0o644)
	symlink(t, root, "link.txt", "a.txt")
}

// TestApplyGitDiff: Apply takes git's own diffs, in each of the forms git
// writes them, and makes the tree git would.
func TestApplyGitDiff(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// refused: Apply must refuse the diff (and write nothing); git
		// apply too takes hunks without context only with --unidiff-zero,
		// and go-gitdiff puts an insertion with none a line too early:
		// the blob id on the index line is what tells.
		refused bool
	}{
		{"full index, binary", []string{"--full-index", "--binary"}, false},
		{"abbreviated index, binary", []string{"--binary"}, false},
		{"no renames", []string{"--full-index", "--binary", "--no-renames"}, false},
		{"one line of context", []string{"--full-index", "--binary", "-U1"}, false},
		{"quoted names off", []string{"-c", "core.quotePath=false", "--full-index", "--binary"}, false},
		{"no context, full index", []string{"--full-index", "--binary", "-U0"}, true},
		{"no context, abbreviated index", []string{"--binary", "-U0"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			repo := newRepo(t, "proj")
			makeApplyBase(t, repo)
			commitAll(t, repo)
			original := listTree(t, repo, true)

			writeFile(t, repo, "a.txt", "alpha\nBETA\ngamma\ndelta\n", 0o644)
			writeFile(t, repo, "private.txt", "mine, edited\n", 0o600)
			writeFile(t, repo, "new.txt", "new\n", 0o644)
			writeFile(t, repo, "new dir/ünï nëw.txt", "new\n", 0o644)
			writeFile(t, repo, "empty.txt", "", 0o644)
			writeFile(t, repo, "tool.sh", "#!/bin/sh\n", 0o755)
			remove(t, repo, "dir/c.txt")
			remove(t, repo, "dir") // as git apply leaves it
			b := readFile(t, repo, "b.txt")
			remove(t, repo, "b.txt")
			writeFile(t, repo, "moved/b.txt", strings.Replace(b, "five", "FIVE", 1), 0o644) // a rename with an edit
			if err := os.Rename(filepath.Join(repo, "with space.txt"), filepath.Join(repo, "ws renamed.txt")); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(filepath.Join(repo, "run.sh"), 0o644); err != nil {
				t.Fatal(err)
			}
			writeFile(t, repo, "bin.dat", "\x00\x01\x03binary changed\n", 0o644)
			writeFile(t, repo, "new.bin", "\x00\xff\xfe", 0o644)
			writeFile(t, repo, "crlf.txt", "one\r\nTWO\r\nthree", 0o644)
			remove(t, repo, "link.txt")
			symlink(t, repo, "link.txt", "b.txt")
			symlink(t, repo, "newlink", "dir")
			remove(t, repo, "ünï/cødé.txt")
			symlink(t, repo, "ünï/cødé.txt", "../a.txt") // a type change
			want := gitView(t, repo)

			runGit(t, repo, "add", "-A")
			var args []string
			diffArgs := tc.args
			if diffArgs[0] == "-c" {
				args, diffArgs = []string{diffArgs[0], diffArgs[1]}, diffArgs[2:]
			}
			args = append(append(args, "diff", "--cached"), diffArgs...)
			diff := runGit(t, repo, args...)
			runGit(t, repo, "reset", "-q", "--hard")
			runGit(t, repo, "clean", "-q", "-fd")
			os.Chmod(filepath.Join(repo, "private.txt"), 0o600) // git keeps no permissions but x
			if d := mapDiff(original, listTree(t, repo, true)); d != "" {
				t.Fatalf("reset did not restore the tree:\n%s", d)
			}

			applied, err := sandbox.Apply(context.Background(), repo, []byte(diff), sandbox.ApplyOptions{})
			if tc.refused {
				var ce *sandbox.ConflictError
				if !errors.As(err, &ce) {
					t.Errorf("Apply: %v, want a *ConflictError", err)
				}
				if d := mapDiff(original, listTree(t, repo, true)); d != "" {
					t.Errorf("a refused Apply changed the tree:\n%s", d)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v\n%s", err, diff)
			}
			if len(applied) != strings.Count(diff, "\ndiff --git ")+1 {
				t.Errorf("Apply applied %d paths, the diff has %d:\n%+v", len(applied), strings.Count(diff, "\ndiff --git ")+1, applied)
			}
			if d := mapDiff(want, gitView(t, repo)); d != "" {
				t.Errorf("after Apply the tree differs from the one git diffed:\n%s\n%s", d, diff)
			}
			if fi, err := os.Stat(filepath.Join(repo, "private.txt")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("private.txt: %v %v, want mode 0600 kept", fi, err)
			}
			if st := runGit(t, repo, "status", "--porcelain"); st == "" {
				t.Errorf("git status shows no change after Apply")
			}
			runGit(t, repo, "add", "-A")
			if again := runGit(t, repo, args...); again != diff {
				t.Errorf("git diffs the applied tree differently:\n%s\nwas:\n%s", again, diff)
			}
		})
	}
}

// sandboxDiff makes a plain tree with makeApplyBase, opens a copy sandbox
// of it, lets act change the sandbox and returns the original and the
// change.
func sandboxDiff(t *testing.T, act func(dir string)) (string, *sandbox.Result) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "proj")
	makeApplyBase(t, root)
	sb := open(t, root, sandbox.Options{Mode: sandbox.Copy})
	act(sb.Dir)
	res, err := sb.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return root, res
}

// TestApplyConflict: Apply refuses a diff when a path it touches is not as
// the snapshot had it, naming the path, and writes nothing at all.
func TestApplyConflict(t *testing.T) {
	act := func(dir string) {
		writeFile(t, dir, "a.txt", "alpha\nBETA\ngamma\n", 0o644)
		writeFile(t, dir, "new.txt", "new\n", 0o644)
		remove(t, dir, "dir/c.txt")
		if err := os.MkdirAll(filepath.Join(dir, "moved"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "b.txt"), filepath.Join(dir, "moved", "b.txt")); err != nil {
			t.Fatal(err)
		}
		remove(t, dir, "link.txt")
		symlink(t, dir, "link.txt", "b.txt")
		writeFile(t, dir, "bin.dat", "\x00changed", 0o644)
		writeFile(t, dir, "private.txt", "mine\nmore\n", 0o600)
	}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, root string) // the original, after the snapshot
		paths  []string                        // the paths the error names
	}{
		{"edited since the snapshot", func(t *testing.T, root string) {
			writeFile(t, root, "a.txt", "alpha\nbeta\ngamma\nuser\n", 0o644)
		}, []string{"a.txt"}},
		{"edited elsewhere, hunks would still apply", func(t *testing.T, root string) {
			writeFile(t, root, "private.txt", "user\nmine\n", 0o600)
		}, []string{"private.txt"}},
		{"added path already there", func(t *testing.T, root string) {
			writeFile(t, root, "new.txt", "the user's\n", 0o644)
		}, []string{"new.txt"}},
		{"added path already there, same content", func(t *testing.T, root string) {
			writeFile(t, root, "new.txt", "new\n", 0o644)
		}, []string{"new.txt"}},
		{"added path is a directory now", func(t *testing.T, root string) {
			writeFile(t, root, "new.txt/x", "x\n", 0o644)
		}, []string{"new.txt"}},
		{"deleted file gone", func(t *testing.T, root string) {
			remove(t, root, "dir/c.txt")
		}, []string{"dir/c.txt"}},
		{"deleted file edited", func(t *testing.T, root string) {
			writeFile(t, root, "dir/c.txt", "c edited\n", 0o644)
		}, []string{"dir/c.txt"}},
		{"mode changed", func(t *testing.T, root string) {
			os.Chmod(filepath.Join(root, "a.txt"), 0o755)
		}, []string{"a.txt"}},
		{"rename source gone", func(t *testing.T, root string) {
			remove(t, root, "b.txt")
		}, []string{"b.txt"}},
		{"rename source edited", func(t *testing.T, root string) {
			writeFile(t, root, "b.txt", "other\n", 0o644)
		}, []string{"b.txt"}},
		{"rename target there", func(t *testing.T, root string) {
			writeFile(t, root, "moved/b.txt", "x\n", 0o644)
		}, []string{"moved/b.txt"}},
		{"link retargeted", func(t *testing.T, root string) {
			remove(t, root, "link.txt")
			symlink(t, root, "link.txt", "run.sh")
		}, []string{"link.txt"}},
		{"link now a file", func(t *testing.T, root string) {
			remove(t, root, "link.txt")
			writeFile(t, root, "link.txt", "a.txt", 0o644)
		}, []string{"link.txt"}},
		{"binary edited", func(t *testing.T, root string) {
			writeFile(t, root, "bin.dat", "\x00other", 0o644)
		}, []string{"bin.dat"}},
		{"several", func(t *testing.T, root string) {
			writeFile(t, root, "a.txt", "x\n", 0o644)
			writeFile(t, root, "new.txt", "x\n", 0o644)
			remove(t, root, "dir/c.txt")
		}, []string{"a.txt", "dir/c.txt", "new.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root, res := sandboxDiff(t, act)
			tc.change(t, root)
			before := listTree(t, root, false)
			applied, err := sandbox.Apply(context.Background(), root, res.Diff, sandbox.ApplyOptions{})
			var ce *sandbox.ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("Apply: %v (applied %+v), want a *ConflictError", err, applied)
			}
			if applied != nil {
				t.Errorf("Apply returned %+v with its error", applied)
			}
			assertNames(t, ce.Paths, tc.paths)
			if !strings.Contains(err.Error(), tc.paths[0]) {
				t.Errorf("the error does not name %s: %v", tc.paths[0], err)
			}
			if d := mapDiff(before, listTree(t, root, false)); d != "" {
				t.Errorf("a refused Apply changed the tree:\n%s", d)
			}
		})
	}
}

// assertNames checks that the "path: why" entries of an error name
// exactly paths, sorted.
func assertNames(t *testing.T, entries, paths []string) {
	t.Helper()
	var got []string
	for _, e := range entries {
		p, why, ok := strings.Cut(e, ": ")
		if !ok || why == "" {
			t.Errorf("entry %q is not \"path: why\"", e)
		}
		got = append(got, p)
	}
	if !reflect.DeepEqual(got, paths) {
		t.Errorf("the error names %q (%q), want %q", got, entries, paths)
	}
}

// TestApplyAgain: a diff applied once is refused the second time, and the
// tree stays as the first Apply left it.
func TestApplyAgain(t *testing.T) {
	root, res := sandboxDiff(t, func(dir string) {
		writeFile(t, dir, "a.txt", "edited\n", 0o644)
		writeFile(t, dir, "new.txt", "new\n", 0o644)
		remove(t, dir, "dir/c.txt")
	})
	applied, err := sandbox.Apply(context.Background(), root, res.Diff, sandbox.ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []sandbox.Applied{{Path: "a.txt", Kind: sandbox.Modified}, {Path: "dir/c.txt", Kind: sandbox.Deleted}, {Path: "new.txt", Kind: sandbox.Added}}
	if !reflect.DeepEqual(applied, want) {
		t.Errorf("Apply: %+v, want %+v", applied, want)
	}
	if got := readFile(t, root, "a.txt"); got != "edited\n" {
		t.Errorf("a.txt: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(root, "dir")); !os.IsNotExist(err) {
		t.Errorf("dir, emptied by the deletion, is still there: %v", err)
	}
	before := listTree(t, root, false)
	_, err = sandbox.Apply(context.Background(), root, res.Diff, sandbox.ApplyOptions{})
	var ce *sandbox.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("second Apply: %v, want a *ConflictError", err)
	}
	assertNames(t, ce.Paths, []string{"a.txt", "dir/c.txt", "new.txt"})
	if d := mapDiff(before, listTree(t, root, false)); d != "" {
		t.Errorf("the refused second Apply changed the tree:\n%s", d)
	}
}

// TestApplyProtected: Apply refuses, before writing anything, a diff that
// touches a path that is protected or resolves outside the root.
func TestApplyProtected(t *testing.T) {
	newFile := func(name, content string) string {
		return "diff --git a/" + name + " b/" + name + "\nnew file mode 100644\n--- /dev/null\n+++ b/" + name +
			"\n@@ -0,0 +1 @@\n+" + content + "\n"
	}
	newLink := func(name, target string) string {
		return "diff --git a/" + name + " b/" + name + "\nnew file mode 120000\n--- /dev/null\n+++ b/" + name +
			"\n@@ -0,0 +1 @@\n+" + target + "\n\\ No newline at end of file\n"
	}
	modify := func(name, from, to string) string {
		return "diff --git a/" + name + " b/" + name + "\n--- a/" + name + "\n+++ b/" + name +
			"\n@@ -1 +1 @@\n-" + from + "\n+" + to + "\n"
	}
	fine := modify("a.txt", "alpha", "ALPHA")
	for _, tc := range []struct {
		name    string
		diff    string
		protect []string
		paths   []string
	}{
		{"parent directory", fine + newFile("../x", "x"), nil, []string{"../x"}},
		{"parent directory in the middle", newFile("sub/../../x", "x") + fine, nil, []string{"sub/../../x"}},
		{"absolute name, traditional diff", "--- /dev/null\n+++ /etc/hub-x\n@@ -0,0 +1 @@\n+x\n", nil, []string{"/etc/hub-x"}},
		{"absolute name, git rename", "diff --git a/a.txt b/etc/hub-x\nsimilarity index 100%\nrename from a.txt\nrename to /etc/hub-x\n", nil, []string{"/etc/hub-x"}},
		{".git", fine + newFile(".git/config", "[core]"), nil, []string{".git/config"}},
		{".git below", newFile("sub/.git/hooks/pre-commit", "#!/bin/sh"), nil, []string{"sub/.git/hooks/pre-commit"}},
		{"below a link, modified", modify("l/f.txt", "f", "F"), nil, []string{"l/f.txt"}},
		{"below a link, added", newFile("l/new.txt", "n"), nil, []string{"l/new.txt"}},
		{"below a link to outside", newFile("hop/new.txt", "n"), nil, []string{"hop/new.txt"}},
		{"new link to outside", fine + newLink("esc", "../outside"), nil, []string{"esc"}},
		{"new link below, to outside", newLink("sub/deep/esc", "../../../x"), nil, []string{"sub/deep/esc"}},
		{"new link to an absolute path", newLink("abs", "/etc"), nil, []string{"abs"}},
		{"new link through a link of the tree", newLink("via", "hop/x"), nil, []string{"via"}},
		{"new links escaping together", newLink("self2", ".") + newLink("dot", "self2/.."), nil, []string{"dot", "self2"}}, // self2 -> . is a way to every protected path too
		{"new link escaping through a link of the tree", newLink("dot", "self/.."), nil, []string{"dot"}},
		{"rename out of the root", "diff --git a/a.txt b/../a.txt\nsimilarity index 100%\nrename from a.txt\nrename to ../a.txt\n", nil, []string{"../a.txt"}},
		{"protect glob", fine + modify("secret/k.txt", "k", "K"), []string{"secret/**"}, []string{"secret/k.txt"}},
		{"protect glob of a directory", newFile("secret/new.txt", "n"), []string{"secret"}, []string{"secret/new.txt"}},
		{"protect glob, rename source", "diff --git a/secret/k.txt b/k.txt\nsimilarity index 100%\nrename from secret/k.txt\nrename to k.txt\n", []string{"secret/**"}, []string{"secret/k.txt"}},
		{"several", newFile(".git/x", "x") + fine + modify("l/f.txt", "f", "F"), nil, []string{".git/x", "l/f.txt"}},
		{"several links", newLink("abs", "/") + fine + newLink("up", ".."), nil, []string{"abs", "up"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "proj")
			writeFile(t, root, "a.txt", "alpha\n", 0o644)
			writeFile(t, root, "sub/f.txt", "f\n", 0o644)
			writeFile(t, root, "secret/k.txt", "k\n", 0o644)
			symlink(t, root, "l", "sub")
			symlink(t, root, "hop", "../outside")
			symlink(t, root, "self", ".")
			before := listTree(t, root, false)
			beforeParent := listTree(t, filepath.Dir(root), false)
			applied, err := sandbox.Apply(context.Background(), root, []byte(tc.diff), sandbox.ApplyOptions{Protect: tc.protect})
			var pe *sandbox.ProtectedError
			if !errors.As(err, &pe) {
				t.Fatalf("Apply: %v (applied %+v), want a *ProtectedError\n%s", err, applied, tc.diff)
			}
			assertNames(t, pe.Paths, tc.paths)
			if d := mapDiff(before, listTree(t, root, false)); d != "" {
				t.Errorf("a refused Apply changed the tree:\n%s", d)
			}
			if d := mapDiff(beforeParent, listTree(t, filepath.Dir(root), false)); d != "" {
				t.Errorf("a refused Apply changed the tree's parent:\n%s", d)
			}
		})
	}
}

// TestApplyAllOrNothing: when a write fails half way, Apply puts the tree
// back exactly as it was.
func TestApplyAllOrNothing(t *testing.T) {
	for _, tc := range []struct {
		name   string
		root   bool // works as root too
		prep   func(t *testing.T, root string)
		change func(t *testing.T, dir string) // in the sandbox
	}{
		{"a new file below a file the user made", true, func(t *testing.T, root string) {
			writeFile(t, root, "blocker", "a file\n", 0o644)
		}, func(t *testing.T, dir string) {
			writeFile(t, dir, "a.txt", "edited\n", 0o644)
			remove(t, dir, "b.txt")
			writeFile(t, dir, "blocker/new.txt", "new\n", 0o644)
			writeFile(t, dir, "z.txt", "new\n", 0o644)
		}},
		{"a directory the diff empties holds a file of the user's", true, func(t *testing.T, root string) {
			writeFile(t, root, "dir/user.txt", "the user's\n", 0o600)
		}, func(t *testing.T, dir string) {
			writeFile(t, dir, "a.txt", "edited\n", 0o644)
			if err := os.RemoveAll(filepath.Join(dir, "dir")); err != nil {
				t.Fatal(err)
			}
			writeFile(t, dir, "dir", "a file in the directory's place\n", 0o644)
			writeFile(t, dir, "z.txt", "new\n", 0o644)
		}},
		{"a read-only directory", false, func(t *testing.T, root string) {
			os.Chmod(filepath.Join(root, "dir"), 0o555)
			t.Cleanup(func() { os.Chmod(filepath.Join(root, "dir"), 0o755) })
		}, func(t *testing.T, dir string) {
			writeFile(t, dir, "a.txt", "edited\n", 0o644)
			remove(t, dir, "b.txt")
			writeFile(t, dir, "dir/c.txt", "edited\n", 0o644)
		}},
		{"a read-only directory, deletion", false, func(t *testing.T, root string) {
			os.Chmod(filepath.Join(root, "dir"), 0o555)
			t.Cleanup(func() { os.Chmod(filepath.Join(root, "dir"), 0o755) })
		}, func(t *testing.T, dir string) {
			writeFile(t, dir, "a.txt", "edited\n", 0o644)
			remove(t, dir, "dir/c.txt")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.root && os.Geteuid() == 0 {
				t.Skip("as root, permissions do not stop a write")
			}
			root, res := sandboxDiff(t, func(dir string) { tc.change(t, dir) })
			if len(res.Diff) == 0 {
				t.Fatal("no diff")
			}
			tc.prep(t, root)
			before := listTree(t, root, false)
			applied, err := sandbox.Apply(context.Background(), root, res.Diff, sandbox.ApplyOptions{})
			if err == nil {
				t.Fatalf("Apply: no error (%+v)\n%s", applied, res.Diff)
			}
			var ce *sandbox.ConflictError
			var pe *sandbox.ProtectedError
			if errors.As(err, &pe) || errors.As(err, &ce) {
				t.Errorf("Apply: %v, want a failed write", err)
			}
			if d := mapDiff(before, listTree(t, root, false)); d != "" {
				t.Errorf("a failed Apply changed the tree:\n%s", d)
			}
		})
	}
	// A failure among the renames, once others are in place: a new
	// file x and a new file x/y in one diff (no tree can hold both).
	t.Run("a failure after the first renames", func(t *testing.T) {
		root := filepath.Join(t.TempDir(), "proj")
		makeApplyBase(t, root)
		diff := "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n+BETA\n gamma\n" +
			"diff --git a/dir/c.txt b/dir/c.txt\ndeleted file mode 100644\n--- a/dir/c.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-c\n" +
			"diff --git a/x b/x\nnew file mode 100644\n--- /dev/null\n+++ b/x\n@@ -0,0 +1 @@\n+x\n" +
			"diff --git a/x/y b/x/y\nnew file mode 100644\n--- /dev/null\n+++ b/x/y\n@@ -0,0 +1 @@\n+y\n"
		before := listTree(t, root, false)
		if _, err := sandbox.Apply(context.Background(), root, []byte(diff), sandbox.ApplyOptions{}); err == nil {
			t.Fatal("Apply: no error")
		}
		if d := mapDiff(before, listTree(t, root, false)); d != "" {
			t.Errorf("a failed Apply changed the tree:\n%s", d)
		}
	})
}

// TestApplyModes: a changed file keeps its permission bits, with the
// executable bit as the diff says; new files are 0644 or 0755.
func TestApplyModes(t *testing.T) {
	root := filepath.Join(t.TempDir(), "proj")
	writeFile(t, root, "p600.txt", "a\n", 0o600)
	writeFile(t, root, "p640.sh", "#!/bin/sh\n", 0o640)
	writeFile(t, root, "x755.sh", "#!/bin/sh\n", 0o755)
	writeFile(t, root, "x700.sh", "#!/bin/sh\n", 0o700)
	writeFile(t, root, "r600.txt", "r\n", 0o600)
	writeFile(t, root, "link-src", "l\n", 0o644)
	symlink(t, root, "l", "link-src")
	sb := open(t, root, sandbox.Options{Mode: sandbox.Copy})
	writeFile(t, sb.Dir, "p600.txt", "a\nb\n", 0o600)
	os.Chmod(filepath.Join(sb.Dir, "p640.sh"), 0o750)
	os.Chmod(filepath.Join(sb.Dir, "x755.sh"), 0o644)
	writeFile(t, sb.Dir, "x700.sh", "#!/bin/sh\necho\n", 0o700)
	writeFile(t, sb.Dir, "new.txt", "n\n", 0o600) // new files get git's modes
	writeFile(t, sb.Dir, "new.sh", "n\n", 0o700)
	if err := os.Rename(filepath.Join(sb.Dir, "r600.txt"), filepath.Join(sb.Dir, "r600-moved.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(sb.Dir, "l"), filepath.Join(sb.Dir, "l2")); err != nil {
		t.Fatal(err)
	}
	res, err := sb.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sandbox.Apply(context.Background(), root, res.Diff, sandbox.ApplyOptions{}); err != nil {
		t.Fatalf("Apply: %v\n%s", err, res.Diff)
	}
	for p, want := range map[string]os.FileMode{
		"p600.txt":       0o600,
		"p640.sh":        0o750,
		"x755.sh":        0o644,
		"x700.sh":        0o700,
		"new.txt":        0o644,
		"new.sh":         0o755,
		"r600-moved.txt": 0o600,
		"l2":             os.ModeSymlink,
	} {
		fi, err := os.Lstat(filepath.Join(root, p))
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		got := fi.Mode().Perm()
		if want == os.ModeSymlink {
			got = fi.Mode().Type()
		}
		if got != want {
			t.Errorf("%s: mode %v, want %v", p, got, want)
		}
	}
	if got := readFile(t, root, "p600.txt"); got != "a\nb\n" {
		t.Errorf("p600.txt: %q", got)
	}
	if target, err := os.Readlink(filepath.Join(root, "l2")); err != nil || target != "link-src" {
		t.Errorf("l2: %q %v", target, err)
	}
}

// TestApplyBadDiff: what is no diff hub can apply is ErrBadDiff, and
// changes nothing; an empty diff applies nothing.
func TestApplyBadDiff(t *testing.T) {
	for _, tc := range []struct {
		name string
		diff string
		bad  bool
	}{
		{"empty", "", false},
		{"garbage", "hello\nthis is no diff\n", true},
		{"binary garbage", "\x00\x01\x02\xff", true},
		{"truncated hunk", "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,3 +1,3 @@\n alpha\n-beta\n", true},
		{"miscounted hunk", "--- a/a.txt\n+++ b/a.txt\n@@ -1,1 +1,1 @@\n alpha\n-beta\n+BETA\n gamma\n", true},
		{"bad header", "diff --git a/a.txt b/a.txt\nindex zz\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-alpha\n+x\n", true},
		{"binary without its data", "diff --git a/bin.dat b/bin.dat\nindex 1111111..2222222 100644\nBinary files a/bin.dat and b/bin.dat differ\n", true},
		{"bad binary data", "diff --git a/bin.dat b/bin.dat\nindex 1111111..2222222 100644\nGIT binary patch\nliteral 5\n!!!!!\n\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "proj")
			makeApplyBase(t, root)
			before := listTree(t, root, false)
			applied, err := sandbox.Apply(context.Background(), root, []byte(tc.diff), sandbox.ApplyOptions{})
			if tc.bad && !errors.Is(err, sandbox.ErrBadDiff) {
				t.Errorf("Apply: %v (applied %+v), want ErrBadDiff", err, applied)
			}
			if !tc.bad && (err != nil || len(applied) != 0) {
				t.Errorf("Apply: %v, %+v; want nothing applied and no error", err, applied)
			}
			if d := mapDiff(before, listTree(t, root, false)); d != "" {
				t.Errorf("Apply changed the tree:\n%s", d)
			}
		})
	}
}

func TestApplyOtherErrors(t *testing.T) {
	root, res := sandboxDiff(t, func(dir string) { writeFile(t, dir, "a.txt", "x\n", 0o644) })
	before := listTree(t, root, false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sandbox.Apply(ctx, root, res.Diff, sandbox.ApplyOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Apply with a cancelled context: %v", err)
	}
	if _, err := sandbox.Apply(context.Background(), root, res.Diff, sandbox.ApplyOptions{Protect: []string{"/abs"}}); err == nil {
		t.Errorf("Apply with a bad protect glob: no error")
	}
	if _, err := sandbox.Apply(context.Background(), filepath.Join(root, "nope"), res.Diff, sandbox.ApplyOptions{}); err == nil {
		t.Errorf("Apply to no directory: no error")
	}
	twice := string(res.Diff) + string(res.Diff)
	var ce *sandbox.ConflictError
	if _, err := sandbox.Apply(context.Background(), root, []byte(twice), sandbox.ApplyOptions{}); !errors.As(err, &ce) {
		t.Errorf("Apply of a diff changing a path twice: %v", err)
	}
	if d := mapDiff(before, listTree(t, root, false)); d != "" {
		t.Errorf("a refused Apply changed the tree:\n%s", d)
	}
}

func TestCut(t *testing.T) {
	diff := []byte("line one\nline two\nline three\n")
	for _, tc := range []struct {
		max  int
		want string
	}{
		{100, string(diff)},
		{len(diff), string(diff)},
		{len(diff) - 1, "line one\nline two\n"},
		{9, "line one\n"},
		{0, ""},
	} {
		if got := sandbox.Cut(diff, tc.max); got != tc.want {
			t.Errorf("Cut(%d) = %q, want %q", tc.max, got, tc.want)
		}
	}
	// No line's end within max: what Cut keeps is at most max bytes.
	if got := sandbox.Cut(diff, 8); len(got) > 8 {
		t.Errorf("Cut(8) = %q, longer than 8 bytes", got)
	}
}

// TestApplyConflictDuringRun: the original edited while the agent ran
// (before Changes): the change to that path cannot apply to it, and
// Apply says so without writing anything.
func TestApplyConflictDuringRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode sandbox.Mode
		repo bool
	}{
		{"copy", sandbox.Copy, false},
		{"copy of a repository", sandbox.Copy, true},
		{"worktree", sandbox.Worktree, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := filepath.Join(t.TempDir(), "proj")
			if tc.repo {
				root = newRepo(t, "proj")
			}
			makeApplyBase(t, root)
			writeFile(t, root, "untracked.txt", "u\n", 0o644)
			if tc.repo {
				commitAll(t, root)
				writeFile(t, root, "untracked.txt", "u\n", 0o644)
				runGit(t, root, "rm", "-q", "--cached", "untracked.txt")
			}
			sb := open(t, root, sandbox.Options{Mode: tc.mode})
			writeFile(t, sb.Dir, "a.txt", "alpha\nBETA\ngamma\n", 0o644)
			writeFile(t, sb.Dir, "untracked.txt", "u\nagent\n", 0o644)
			writeFile(t, sb.Dir, "new.txt", "new\n", 0o644)
			writeFile(t, root, "a.txt", "alpha\nbeta\ngamma\nuser\n", 0o644)
			writeFile(t, root, "untracked.txt", "user\nu\n", 0o644)
			res, err := sb.Changes(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			want := []sandbox.File{{Path: "a.txt", Kind: sandbox.Modified}, {Path: "new.txt", Kind: sandbox.Added}, {Path: "untracked.txt", Kind: sandbox.Modified}}
			for i := range want {
				if i < len(res.Files) {
					// Whole (as binary) where hub no longer has the old content.
					want[i].Binary = res.Files[i].Binary
				}
			}
			assertFiles(t, res.Files, want)
			if _, err := tryGit(root, res.Diff, "apply", "--check", "-"); err == nil {
				t.Errorf("git apply --check takes the diff in the edited original:\n%s", res.Diff)
			}
			before := listTree(t, root, true)
			_, err = sandbox.Apply(context.Background(), root, res.Diff, sandbox.ApplyOptions{})
			var ce *sandbox.ConflictError
			if !errors.As(err, &ce) {
				t.Fatalf("Apply: %v, want a *ConflictError\n%s", err, res.Diff)
			}
			assertNames(t, ce.Paths, []string{"a.txt", "untracked.txt"})
			if d := mapDiff(before, listTree(t, root, true)); d != "" {
				t.Errorf("a refused Apply changed the tree:\n%s", d)
			}
		})
	}
}

// TestApplyConcurrent: of many Applies at once of changes to one line of
// one file, made from the same original, exactly one lands; the others are
// conflicts.
func TestApplyConcurrent(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const n = 12
	diffs := make([][]byte, n)
	for i := range diffs {
		sb, err := sandbox.Open(context.Background(), root, sandbox.Options{Mode: sandbox.Copy, TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sb.Dir, "a.txt"), []byte(fmt.Sprintf("one\ntwo %d\nthree\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := sb.Changes(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		diffs[i] = res.Diff
		if err := sb.Remove(); err != nil {
			t.Fatal(err)
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range diffs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = sandbox.Apply(context.Background(), root, diffs[i], sandbox.ApplyOptions{})
		}()
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		var ce *sandbox.ConflictError
		switch {
		case err == nil:
			ok++
			b, _ := os.ReadFile(filepath.Join(root, "a.txt"))
			if want := fmt.Sprintf("one\ntwo %d\nthree\n", i); string(b) != want {
				t.Errorf("apply %d reported success, but a.txt = %q, want %q", i, b, want)
			}
		case errors.As(err, &ce):
		default:
			t.Errorf("apply %d: %v, want success or a conflict", i, err)
		}
	}
	if ok != 1 {
		t.Errorf("%d of %d applies succeeded, want exactly 1", ok, n)
	}
}
