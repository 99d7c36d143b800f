package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/sandbox"
)

// The three ways a scenario runs: copy mode of a plain directory, copy
// mode of a repository, worktree mode.
const (
	plainCopy = "copy"
	repoCopy  = "repo-copy"
	worktree  = "worktree"
)

var allModes = []string{plainCopy, repoCopy, worktree}

// makeBase fills root with the original tree every scenario starts from.
func makeBase(t *testing.T, root string) {
	writeFile(t, root, ".gitignore", "*.o\nnode_modules/\n", 0o644)
	writeFile(t, root, "a.txt", "alpha\nbeta\ngamma\n", 0o644)
	var b strings.Builder
	for i := 1; i <= 30; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	writeFile(t, root, "b.txt", b.String(), 0o644)
	writeFile(t, root, "dir/c.txt", "c\n", 0o644)
	writeFile(t, root, "run.sh", "#!/bin/sh\necho hi\n", 0o755)
	symlink(t, root, "link.txt", "a.txt")
	writeFile(t, root, "bin.dat", "\x00\x01\x02binary\n", 0o644)
	writeFile(t, root, "private.txt", "mine\n", 0o600)
	writeFile(t, root, "empty.txt", "", 0o644)
	writeFile(t, root, "crlf.txt", "one\r\ntwo\r\nthree\r\n", 0o644)
	writeFile(t, root, "latin1.txt", "caf\xe9\nna\xefve\n", 0o644)
	writeFile(t, root, "nonl.txt", "x\ny", 0o644)
	writeFile(t, root, "with space.txt", "space\n", 0o644)
	writeFile(t, root, "ünï/cødé.txt", "unicode\n", 0o644)
	writeFile(t, root, "secret/key.txt", "k\n", 0o644)
	writeFile(t, root, "config/app.toml", "a = 1\n", 0o644)
	// Ignored in a repository (not committed; copied by copy mode).
	writeFile(t, root, "node_modules/old.js", "old\n", 0o644)
	writeFile(t, root, "old.o", "object\n", 0o644)
}

type scenario struct {
	name    string
	modes   []string // nil: allModes
	setup   func(t *testing.T, root string)
	protect []string
	act     func(t *testing.T, dir string)
	// want are the Files Changes must return, compared on Path, OldPath,
	// Kind, Binary and whether Protected is set ("x": protected).
	want []sandbox.File
}

func TestChanges(t *testing.T) {
	outsideFile := func(t *testing.T, dir string) string {
		// A file outside the sandbox on the same file system (t.TempDir
		// is where the sandbox is), so that a hard link to it can be made.
		out := t.TempDir()
		writeFile(t, out, "outside.txt", "outside\n", 0o644)
		return filepath.Join(out, "outside.txt")
	}
	link := func(t *testing.T, oldname, newname string) {
		t.Helper()
		if err := os.Link(oldname, newname); err != nil {
			t.Fatal(err)
		}
	}
	rename := func(t *testing.T, dir, from, to string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, to)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, from), filepath.Join(dir, to)); err != nil {
			t.Fatal(err)
		}
	}
	chmod := func(t *testing.T, dir, rel string, m os.FileMode) {
		t.Helper()
		if err := os.Chmod(filepath.Join(dir, rel), m); err != nil {
			t.Fatal(err)
		}
	}
	A, M, D, R := sandbox.Added, sandbox.Modified, sandbox.Deleted, sandbox.Renamed
	f := func(p string, k sandbox.Kind) sandbox.File { return sandbox.File{Path: p, Kind: k} }
	bin := func(p string, k sandbox.Kind) sandbox.File { return sandbox.File{Path: p, Kind: k, Binary: true} }
	prot := func(p string, k sandbox.Kind) sandbox.File { return sandbox.File{Path: p, Kind: k, Protected: "x"} }
	ren := func(from, to string) sandbox.File { return sandbox.File{Path: to, OldPath: from, Kind: R} }

	scenarios := []scenario{
		{name: "nothing", act: func(t *testing.T, dir string) {}},
		{name: "modified", act: func(t *testing.T, dir string) {
			writeFile(t, dir, "a.txt", "alpha\nBETA\ngamma\n", 0o644)
			s := readFile(t, dir, "b.txt")
			s = strings.Replace(s, "line 15\n", "line fifteen\n", 1) + "line 31\n"
			writeFile(t, dir, "b.txt", "line 0\n"+s, 0o644)
		}, want: []sandbox.File{f("a.txt", M), f("b.txt", M)}},
		{name: "added", act: func(t *testing.T, dir string) {
			writeFile(t, dir, "new.txt", "new\n", 0o644)
			writeFile(t, dir, "new/deep/f.txt", "deep\n", 0o644)
			writeFile(t, dir, "new/tool.sh", "#!/bin/sh\n", 0o755)
		}, want: []sandbox.File{f("new.txt", A), f("new/deep/f.txt", A), f("new/tool.sh", A)}},
		{name: "deleted", act: func(t *testing.T, dir string) {
			remove(t, dir, "dir/c.txt")
			remove(t, dir, "run.sh")
			remove(t, dir, "link.txt")
		}, want: []sandbox.File{f("dir/c.txt", D), f("link.txt", D), f("run.sh", D)}},
		{name: "directory deleted", act: func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "ünï"))
		}, want: []sandbox.File{f("ünï/cødé.txt", D)}},
		{name: "renamed", act: func(t *testing.T, dir string) {
			rename(t, dir, "a.txt", "moved/a2.txt")
			rename(t, dir, "with space.txt", "ünï/with space moved.txt")
		}, want: []sandbox.File{ren("a.txt", "moved/a2.txt"), ren("with space.txt", "ünï/with space moved.txt")}},
		{name: "renamed with a mode change", act: func(t *testing.T, dir string) {
			rename(t, dir, "run.sh", "tools/run")
			chmod(t, dir, "tools/run", 0o644)
			rename(t, dir, "private.txt", "private2.txt")
		}, want: []sandbox.File{ren("private.txt", "private2.txt"), ren("run.sh", "tools/run")}},
		{name: "renamed link", act: func(t *testing.T, dir string) {
			rename(t, dir, "link.txt", "link2.txt")
		}, want: []sandbox.File{ren("link.txt", "link2.txt")}},
		{name: "renamed and edited is deleted and added", act: func(t *testing.T, dir string) {
			rename(t, dir, "b.txt", "b2.txt")
			writeFile(t, dir, "b2.txt", readFile(t, dir, "b2.txt")+"more\n", 0o644)
		}, want: []sandbox.File{f("b.txt", D), f("b2.txt", A)}},
		{name: "binary", act: func(t *testing.T, dir string) {
			writeFile(t, dir, "bin.dat", "\x00\x01\x03changed\n", 0o644)
			writeFile(t, dir, "new.bin", "a\x00b", 0o644)
			writeFile(t, dir, "a.txt", "alpha\x00\n", 0o644)
		}, want: []sandbox.File{bin("a.txt", M), bin("bin.dat", M), bin("new.bin", A)}},
		{name: "binary to text and deleted binary", act: func(t *testing.T, dir string) {
			writeFile(t, dir, "bin.dat", "now text\n", 0o644)
			writeFile(t, dir, "late-nul.txt", strings.Repeat("x", 8000)+"\x00", 0o644) // NUL past git's 8000 bytes: text
		}, want: []sandbox.File{bin("bin.dat", M), f("late-nul.txt", A)}},
		{name: "file to link", act: func(t *testing.T, dir string) {
			remove(t, dir, "a.txt")
			symlink(t, dir, "a.txt", "b.txt")
		}, want: []sandbox.File{f("a.txt", D), f("a.txt", A)}},
		{name: "link to file", act: func(t *testing.T, dir string) {
			remove(t, dir, "link.txt")
			writeFile(t, dir, "link.txt", "a file now\n", 0o644)
		}, want: []sandbox.File{f("link.txt", D), f("link.txt", A)}},
		{name: "file to link beside a rename of its content", act: func(t *testing.T, dir string) {
			rename(t, dir, "a.txt", "moved.txt")
			symlink(t, dir, "a.txt", "b.txt")
		}, want: []sandbox.File{f("a.txt", D), f("a.txt", A), f("moved.txt", A)}},
		{name: "file to link with a deleted link's target", act: func(t *testing.T, dir string) {
			remove(t, dir, "link.txt") // -> a.txt
			remove(t, dir, "b.txt")
			symlink(t, dir, "b.txt", "a.txt")
		}, want: []sandbox.File{f("b.txt", D), f("b.txt", A), f("link.txt", D)}},
		{name: "link retargeted", act: func(t *testing.T, dir string) {
			remove(t, dir, "link.txt")
			symlink(t, dir, "link.txt", "b.txt")
		}, want: []sandbox.File{f("link.txt", M)}},
		{name: "mode only", act: func(t *testing.T, dir string) {
			chmod(t, dir, "a.txt", 0o755)
			chmod(t, dir, "run.sh", 0o644)
			chmod(t, dir, "private.txt", 0o700)
			chmod(t, dir, "b.txt", 0o600) // no change git records
		}, want: []sandbox.File{f("a.txt", M), f("private.txt", M), f("run.sh", M)}},
		{name: "touched, rewritten, reverted: no change", act: func(t *testing.T, dir string) {
			tm := time.Now().Add(time.Hour)
			os.Chtimes(filepath.Join(dir, "a.txt"), tm, tm)
			writeFile(t, dir, "b.txt", readFile(t, dir, "b.txt"), 0o644)
			writeFile(t, dir, "dir/c.txt", "changed\n", 0o644)
			writeFile(t, dir, "dir/c.txt", "c\n", 0o644)
			chmod(t, dir, "run.sh", 0o644)
			chmod(t, dir, "run.sh", 0o755)
			remove(t, dir, "link.txt")
			symlink(t, dir, "link.txt", "a.txt")
		}},
		{name: "larger than MaxTextBytes", act: func(t *testing.T, dir string) {
			writeFile(t, dir, "big.txt", strings.Repeat("a line of text\n", sandbox.MaxTextBytes/15+1), 0o644)
		}, want: []sandbox.File{bin("big.txt", A)}},
		{name: "empty files", act: func(t *testing.T, dir string) {
			writeFile(t, dir, "e2.txt", "", 0o644)
			writeFile(t, dir, "a.txt", "", 0o644)
			writeFile(t, dir, "empty.txt", "now\n", 0o644)
		}, want: []sandbox.File{f("a.txt", M), f("e2.txt", A), f("empty.txt", M)}},
		{name: "empty file deleted and renamed", act: func(t *testing.T, dir string) {
			writeFile(t, dir, "e2.txt", "", 0o644)
			remove(t, dir, "empty.txt")
		}, want: []sandbox.File{ren("empty.txt", "e2.txt")}},
		{name: "CRLF", act: func(t *testing.T, dir string) {
			writeFile(t, dir, "crlf.txt", "one\r\nTWO\r\nthree\r\n", 0o644)
			writeFile(t, dir, "new-crlf.txt", "a\r\nb\r\n", 0o644)
			writeFile(t, dir, "a.txt", "alpha\r\nbeta\ngamma\n", 0o644)
		}, want: []sandbox.File{f("a.txt", M), f("crlf.txt", M), f("new-crlf.txt", A)}},
		{name: "invalid UTF-8", act: func(t *testing.T, dir string) {
			writeFile(t, dir, "latin1.txt", "caf\xe9\nna\xefve\nr\xe9sum\xe9\n", 0o644)
			writeFile(t, dir, "bad\xff\xfename.txt", "\xc3\x28\n", 0o644)
		}, want: []sandbox.File{f("bad\xff\xfename.txt", A), f("latin1.txt", M)}},
		{name: "no trailing newline", act: func(t *testing.T, dir string) {
			writeFile(t, dir, "nonl.txt", "x\nz", 0o644)
			writeFile(t, dir, "a.txt", "alpha\nbeta\ngamma", 0o644)
			writeFile(t, dir, "nonl-new.txt", "no newline", 0o644)
			writeFile(t, dir, "b.txt", readFile(t, dir, "b.txt")+"31", 0o644)
		}, want: []sandbox.File{f("a.txt", M), f("b.txt", M), f("nonl-new.txt", A), f("nonl.txt", M)}},
		{name: "trailing newline added", act: func(t *testing.T, dir string) {
			writeFile(t, dir, "nonl.txt", "x\ny\n", 0o644)
		}, want: []sandbox.File{f("nonl.txt", M)}},
		{name: "spaces, unicode and quotes in names", act: func(t *testing.T, dir string) {
			writeFile(t, dir, "dir with space/ünï cødé.txt", "u\n", 0o644)
			writeFile(t, dir, "ünï/cødé.txt", "unicode edited\n", 0o644)
			remove(t, dir, "with space.txt")
			writeFile(t, dir, "tab\tname.txt", "tab\n", 0o644)
			writeFile(t, dir, `q"uote\back.txt`, "quote\n", 0o644)
			writeFile(t, dir, "empty space.txt", "", 0o644)
		}, want: []sandbox.File{f("dir with space/ünï cødé.txt", A), f("empty space.txt", A), f(`q"uote\back.txt`, A),
			f("tab\tname.txt", A), f("with space.txt", D), f("ünï/cødé.txt", M)}},
		{name: "file replaced by a directory", act: func(t *testing.T, dir string) {
			remove(t, dir, "a.txt")
			writeFile(t, dir, "a.txt/inner.txt", "inner\n", 0o644)
		}, want: []sandbox.File{f("a.txt", D), f("a.txt/inner.txt", A)}},
		{name: "directory replaced by a file", act: func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "dir"))
			writeFile(t, dir, "dir", "a file\n", 0o644)
		}, want: []sandbox.File{f("dir", A), f("dir/c.txt", D)}},
		{name: "ignored paths", modes: []string{repoCopy, worktree}, act: func(t *testing.T, dir string) {
			writeFile(t, dir, "node_modules/old.js", "changed\n", 0o644)
			writeFile(t, dir, "node_modules/new/index.js", "new\n", 0o644)
			writeFile(t, dir, "new.o", "object\n", 0o644)
			writeFile(t, dir, "dir/x.o", "object\n", 0o644)
			writeFile(t, dir, "dir/node_modules/pkg/x.js", "a new ignored directory\n", 0o644)
			os.Remove(filepath.Join(dir, "old.o"))
		}},
		{name: "no ignore rules outside a repository", modes: []string{plainCopy}, act: func(t *testing.T, dir string) {
			writeFile(t, dir, "node_modules/old.js", "changed\n", 0o644)
			writeFile(t, dir, "new.o", "new object\n", 0o644)
			remove(t, dir, "old.o")
		}, want: []sandbox.File{f("new.o", A), f("node_modules/old.js", M), f("old.o", D)}},
		{name: "protect globs", protect: []string{"secret/**", "*.pem", "config", "cfg/"}, act: func(t *testing.T, dir string) {
			writeFile(t, dir, "secret/key.txt", "k2\n", 0o644)
			writeFile(t, dir, "secret/new/x.txt", "x\n", 0o644)
			writeFile(t, dir, "key.pem", "pem\n", 0o644)
			writeFile(t, dir, "dir/key.pem", "pem\n", 0o644)    // a glob with no / matches at any depth, as in .gitignore
			writeFile(t, dir, "dir/sub/secret/x", "x\n", 0o644) // one with a / is anchored at the root
			writeFile(t, dir, "config/app.toml", "a = 2\n", 0o644)
			writeFile(t, dir, "cfg/x", "x\n", 0o644)
			writeFile(t, dir, "a.txt", "free\n", 0o644)
			rename(t, dir, "b.txt", "secret/b.txt")
		}, want: []sandbox.File{f("a.txt", M), prot("cfg/x", A), prot("config/app.toml", M), prot("dir/key.pem", A), f("dir/sub/secret/x", A), prot("key.pem", A),
			{Path: "secret/b.txt", OldPath: "b.txt", Kind: R, Protected: "x"}, prot("secret/key.txt", M), prot("secret/new/x.txt", A)}},
		{name: "protected file moved out and deleted", protect: []string{"secret/**"}, act: func(t *testing.T, dir string) {
			rename(t, dir, "secret/key.txt", "public.txt")
		}, want: []sandbox.File{f("public.txt", A), prot("secret/key.txt", D)}},
		{name: "absolute links", act: func(t *testing.T, dir string) {
			symlink(t, dir, "abs", "/etc/passwd")
			symlink(t, dir, "dir/abs-inside", filepath.Join(dir, "a.txt"))
			remove(t, dir, "link.txt")
			symlink(t, dir, "link.txt", "/etc/hostname")
		}, want: []sandbox.File{prot("abs", A), prot("dir/abs-inside", A), prot("link.txt", M)}},
		{name: "relative links escaping", act: func(t *testing.T, dir string) {
			symlink(t, dir, "up", "../outside")
			symlink(t, dir, "dir/esc", "../../x")
			symlink(t, dir, "dir/deep/esc", "../sub/../../../x")
			symlink(t, dir, "dir/ok", "../a.txt")
			symlink(t, dir, "dir/root", "..")
			symlink(t, dir, "here", ".")
		}, want: []sandbox.File{prot("dir/deep/esc", A), prot("dir/esc", A), f("dir/ok", A), prot("dir/root", A), prot("here", A), prot("up", A)}},
		{name: "chains of links escaping", setup: func(t *testing.T, root string) {
			symlink(t, root, "hop", "../outside") // the user's own
			symlink(t, root, "self", ".")
		}, act: func(t *testing.T, dir string) {
			symlink(t, dir, "via", "hop")
			symlink(t, dir, "dir/via2", "../dir/../hop/x")
			symlink(t, dir, "l1", "l2")
			symlink(t, dir, "l2", "dir/../../x")
			symlink(t, dir, "dot", "self/..")
			symlink(t, dir, "dir/dotdot", "../self/self/..")
			symlink(t, dir, "loop1", "loop2")
			symlink(t, dir, "loop2", "loop1")
			symlink(t, dir, "fine", "self/self/a.txt")
		}, want: []sandbox.File{prot("dir/dotdot", A), prot("dir/via2", A), prot("dot", A), f("fine", A), prot("l1", A), prot("l2", A),
			prot("loop1", A), prot("loop2", A), prot("via", A)}},
		{name: "hard links", act: func(t *testing.T, dir string) {
			link(t, outsideFile(t, dir), filepath.Join(dir, "hard.txt"))
			remove(t, dir, "a.txt")
			link(t, outsideFile(t, dir), filepath.Join(dir, "a.txt"))
			link(t, filepath.Join(dir, "b.txt"), filepath.Join(dir, "b-hard.txt")) // both inside
		}, want: []sandbox.File{prot("a.txt", M), f("b-hard.txt", A), prot("hard.txt", A)}},
		{name: "creating .git", modes: []string{plainCopy, repoCopy}, act: func(t *testing.T, dir string) {
			writeFile(t, dir, ".git/config", "[core]\n", 0o644)
			writeFile(t, dir, ".git/HEAD", "ref: refs/heads/main\n", 0o644)
			writeFile(t, dir, "dir/.git", "gitdir: /elsewhere\n", 0o644)
			writeFile(t, dir, "a.txt", "still diffed\n", 0o644)
		}, want: []sandbox.File{prot(".git/HEAD", A), prot(".git/config", A), f("a.txt", M), prot("dir/.git", A)}},
		{name: "branch, tag and config in the repository", modes: []string{worktree}, act: func(t *testing.T, dir string) {
			runGit(t, dir, "branch", "x")
			runGit(t, dir, "tag", "v1")
			runGit(t, dir, "config", "hub.test", "yes")
			writeFile(t, dir, "a.txt", "still diffed\n", 0o644)
		}, want: []sandbox.File{prot(".git/config", M), prot(".git/refs/heads/x", A), prot(".git/refs/tags/v1", A), f("a.txt", M)}},
		{name: "hook and the worktree's .git file", modes: []string{worktree}, act: func(t *testing.T, dir string) {
			common := strings.TrimSpace(runGit(t, dir, "rev-parse", "--path-format=absolute", "--git-common-dir"))
			writeFile(t, common, "hooks/pre-commit", "#!/bin/sh\n", 0o755)
			writeFile(t, dir, ".git", readFile(t, dir, ".git")+"\n", 0o644)
		}, want: []sandbox.File{prot(".git", M), prot(".git/hooks/pre-commit", A)}},
		{name: "commit in the sandbox", modes: []string{worktree}, act: func(t *testing.T, dir string) {
			writeFile(t, dir, "a.txt", "committed\n", 0o644)
			runGit(t, dir, "commit", "-q", "-am", "agent")
		}, want: []sandbox.File{f("a.txt", M)}},
	}
	for _, sc := range scenarios {
		modes := sc.modes
		if modes == nil {
			modes = allModes
		}
		for _, mode := range modes {
			t.Run(mode+"/"+sc.name, func(t *testing.T) {
				t.Parallel() // each has its own trees; git's processes are most of the time
				runScenario(t, mode, sc)
			})
		}
	}
}

// runScenario makes the original, opens a sandbox of it, lets sc act in
// it and checks Changes and its diff.
func runScenario(t *testing.T, mode string, sc scenario) {
	var root string
	if mode == plainCopy {
		root = filepath.Join(t.TempDir(), "proj")
	} else {
		root = newRepo(t, "proj")
	}
	makeBase(t, root)
	if sc.setup != nil {
		sc.setup(t, root)
	}
	if mode != plainCopy {
		commitAll(t, root)
	}
	m := sandbox.Copy
	if mode == worktree {
		m = sandbox.Worktree
	}
	original := listTree(t, root, true)
	sb := open(t, root, sandbox.Options{Mode: m, Protect: sc.protect})
	sc.act(t, sb.Dir)
	inSandbox := listTree(t, sb.Dir, true)
	res, err := sb.Changes(context.Background())
	if err != nil {
		t.Fatalf("Changes: %v", err)
	}
	if d := mapDiff(inSandbox, listTree(t, sb.Dir, true)); d != "" {
		t.Errorf("Changes changed the sandbox:\n%s", d)
	}
	assertFiles(t, res.Files, sc.want)
	var protected int
	for _, f := range sc.want {
		if f.Protected != "" {
			protected++
		}
	}
	if got := res.Protected(); len(got) != protected {
		t.Errorf("Protected() = %+v, want %d files", got, protected)
	}
	for _, f := range res.Files {
		switch {
		case f.Kind == sandbox.Deleted:
			if f.Bytes != -1 {
				t.Errorf("%s: deleted with Bytes %d", f.Path, f.Bytes)
			}
		case strings.HasPrefix(f.Path, ".git/") && mode == worktree:
			// the repository's refs and config: not a file of the sandbox
		default:
			fi, err := os.Lstat(filepath.Join(sb.Dir, filepath.FromSlash(f.Path)))
			if err != nil || fi.Size() != f.Bytes {
				t.Errorf("%s: Bytes %d, the sandbox's file: %v %v", f.Path, f.Bytes, fi, err)
			}
		}
	}
	again, err := sb.Changes(context.Background())
	if err != nil {
		t.Fatalf("second Changes: %v", err)
	}
	if !reflect.DeepEqual(again, res) {
		t.Errorf("a second Changes differs:\n%+v\n%s\nthe first:\n%+v\n%s", again.Files, again.Diff, res.Files, res.Diff)
	}
	checkDiff(t, sb, res, sc.protect)
	if d := mapDiff(original, listTree(t, root, true)); d != "" {
		t.Errorf("the original changed:\n%s", d)
	}
}

// assertFiles compares Changes' Files with want on Path, OldPath, Kind,
// Binary and whether Protected is set.
func assertFiles(t *testing.T, got, want []sandbox.File) {
	t.Helper()
	norm := func(fs []sandbox.File) []string {
		var out []string
		for _, f := range fs {
			s := fmt.Sprintf("%s %q", f.Kind, f.Path)
			if f.OldPath != "" {
				s += fmt.Sprintf(" from %q", f.OldPath)
			}
			if f.Binary {
				s += " binary"
			}
			if f.Protected != "" {
				s += " protected"
			}
			out = append(out, s)
		}
		return out
	}
	g, w := norm(got), norm(want)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("Files:\n  %s\nwant:\n  %s", strings.Join(g, "\n  "), strings.Join(w, "\n  "))
	}
	for _, f := range got {
		if f.Protected != "" && !strings.Contains(f.Protected, " ") {
			t.Errorf("%s: Protected %q says no reason", f.Path, f.Protected)
		}
	}
}

// diffPaths returns every path the diff names (git apply --numstat).
func diffPaths(t *testing.T, diff []byte) map[string]bool {
	t.Helper()
	m := map[string]bool{}
	if len(diff) == 0 {
		return m
	}
	out, err := tryGit(t.TempDir(), diff, "apply", "--numstat", "-z", "-")
	if err != nil {
		t.Fatalf("%v\n%s", err, diff)
	}
	parts := strings.Split(out, "\x00")
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		if p == "" {
			continue
		}
		fields := strings.SplitN(p, "\t", 3)
		if len(fields) != 3 {
			t.Fatalf("numstat %q", out)
		}
		if fields[2] != "" {
			m[fields[2]] = true
			continue
		}
		if i+2 >= len(parts) {
			t.Fatalf("numstat %q", out)
		}
		m[parts[i+1]], m[parts[i+2]] = true, true
		i += 2
	}
	return m
}

// checkDiff checks Result.Diff: it names no protected path, `git apply`
// takes it in a pristine copy of the original, Apply gives the same tree
// as git apply, and that tree holds the sandbox's version of every path
// the change does not refuse and the original's of the others.
func checkDiff(t *testing.T, sb *sandbox.Sandbox, res *sandbox.Result, protect []string) {
	t.Helper()
	named := diffPaths(t, res.Diff)
	var free int
	for _, f := range res.Files {
		if f.Protected != "" {
			if named[f.Path] {
				t.Errorf("the diff names the protected %s:\n%s", f.Path, res.Diff)
			}
			continue
		}
		free++
		if !named[f.Path] { // (git apply --numstat names only a rename's new path)
			t.Errorf("the diff does not name %s:\n%s", f.Path, res.Diff)
		}
	}
	if free == 0 && len(res.Diff) != 0 {
		t.Errorf("a diff with nothing to change:\n%s", res.Diff)
	}

	withGit := filepath.Join(t.TempDir(), "git")
	withApply := filepath.Join(t.TempDir(), "apply")
	copyDir(t, sb.Root, withGit)
	copyDir(t, sb.Root, withApply)
	if len(res.Diff) > 0 {
		if _, err := tryGit(withGit, res.Diff, "apply", "--check", "-"); err != nil {
			t.Fatalf("%v\nthe diff:\n%s", err, res.Diff)
		}
		if _, err := tryGit(withGit, res.Diff, "apply", "-"); err != nil {
			t.Fatalf("%v\nthe diff:\n%s", err, res.Diff)
		}
	}
	applied, err := sandbox.Apply(context.Background(), withApply, res.Diff, sandbox.ApplyOptions{Protect: protect})
	if err != nil {
		t.Fatalf("Apply: %v\nthe diff:\n%s", err, res.Diff)
	}
	if len(applied) != free {
		t.Errorf("Apply applied %d paths (%+v), the change has %d", len(applied), applied, free)
	}
	if d := mapDiff(gitView(t, withGit), gitView(t, withApply)); d != "" {
		t.Errorf("Apply's tree differs from git apply's:\n%s\nthe diff:\n%s", d, res.Diff)
	}
	paths := map[string]bool{} // the paths of the change, and whether one is not refused
	for _, f := range res.Files {
		paths[f.Path] = paths[f.Path] || f.Protected == ""
		if f.OldPath != "" {
			paths[f.OldPath] = paths[f.OldPath] || f.Protected == ""
		}
	}
	for p, free := range paths {
		if hasGit(p) {
			continue
		}
		from := sb.Root
		if free {
			from = sb.Dir
		}
		if got, want := pathView(t, withApply, p), pathView(t, from, p); got != want {
			t.Errorf("%s after Apply: %q, want %q (from %s)", p, got, want, from)
		}
	}
}

func hasGit(p string) bool {
	for _, c := range strings.Split(p, "/") {
		if c == ".git" {
			return true
		}
	}
	return false
}
