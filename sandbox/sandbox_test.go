package sandbox_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hubcli/hub/sandbox"
)

// TestMain gives every git command of the tests (and of the package) the
// same configuration whatever the machine's: no global or system config,
// a fixed identity, and a fixed umask so new files are 0644.
func TestMain(m *testing.M) {
	syscall.Umask(0o022)
	for k, v := range map[string]string{
		"GIT_CONFIG_GLOBAL":   "/dev/null",
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_AUTHOR_NAME":     "hub test",
		"GIT_AUTHOR_EMAIL":    "hub@example.invalid",
		"GIT_COMMITTER_NAME":  "hub test",
		"GIT_COMMITTER_EMAIL": "hub@example.invalid",
	} {
		os.Setenv(k, v)
	}
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"} {
		os.Unsetenv(k)
	}
	os.Exit(m.Run())
}

// runGit runs git in dir and returns its stdout; a failure fails the test.
func runGit(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := tryGit(dir, nil, args...)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return out
}

// tryGit runs git in dir with stdin (nil: none), outside any repository
// above dir's parent.
func tryGit(dir string, stdin []byte, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CEILING_DIRECTORIES="+filepath.Dir(dir))
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return string(out), nil
}

// writeFile writes content to root/rel with perm (whatever the umask),
// making its parents.
func writeFile(t testing.TB, root, rel, content string, perm fs.FileMode) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, root, rel, target string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, p); err != nil {
		t.Fatal(err)
	}
}

func remove(t testing.TB, root, rel string) {
	t.Helper()
	if err := os.Remove(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// newRepo makes an empty repository in a new directory named name.
func newRepo(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	runGit(t, dir, "init", "-q", "-b", "main")
	return dir
}

func commitAll(t testing.TB, dir string) {
	t.Helper()
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "commit")
}

// listTree describes every path below root (but .git when skipGit): a
// directory with its permissions, a file with its permissions and a hash
// of its content, a link with its target. Two equal listings are two
// trees that are the same on the disk.
func listTree(t testing.TB, root string, skipGit bool) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if skipGit && d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if rel != "." {
				m[rel] = fmt.Sprintf("dir %o", fi.Mode().Perm())
			}
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			m[rel] = "link " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			sum := sha256.Sum256(b)
			m[rel] = fmt.Sprintf("file %o %s", fi.Mode().Perm(), hex.EncodeToString(sum[:8]))
		default:
			m[rel] = "special " + fi.Mode().Type().String()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// gitView describes the paths below root as git sees them: directories by
// name, files by git's mode (exec or not) and content, links by target.
func gitView(t testing.TB, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if rel != "." {
				m[rel] = "dir"
			}
		default:
			m[rel] = viewOf(t, p, fi)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func viewOf(t testing.TB, p string, fi fs.FileInfo) string {
	t.Helper()
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			t.Fatal(err)
		}
		return "120000 " + target
	case fi.Mode().IsRegular():
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		mode := "100644"
		if fi.Mode().Perm()&0o100 != 0 {
			mode = "100755"
		}
		if len(b) > 64 {
			sum := sha256.Sum256(b)
			return fmt.Sprintf("%s %d bytes %s", mode, len(b), hex.EncodeToString(sum[:8]))
		}
		return fmt.Sprintf("%s %q", mode, b)
	}
	return "special"
}

// pathView is gitView of the one path root/rel, "" when it is not there.
func pathView(t testing.TB, root, rel string) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return viewOf(t, p, fi)
}

// mapDiff says how got differs from want, "" when it does not.
func mapDiff(want, got map[string]string) string {
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		w, wok := want[k]
		g, gok := got[k]
		switch {
		case !gok:
			fmt.Fprintf(&b, "  %s: missing (want %s)\n", k, w)
		case !wok:
			fmt.Fprintf(&b, "  %s: unexpected %s\n", k, g)
		case w != g:
			fmt.Fprintf(&b, "  %s: got %s, want %s\n", k, g, w)
		}
	}
	return b.String()
}

// copyDir copies src to the new directory dst as copy mode would: files
// with their permissions, links as links; .git and special files left out.
func copyDir(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.Name() == ".git" && rel != "." {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		to := filepath.Join(dst, rel)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.IsDir():
			if err := os.MkdirAll(to, 0o755); err != nil {
				return err
			}
			return os.Chmod(to, fi.Mode().Perm())
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(to, b, fi.Mode().Perm()); err != nil {
				return err
			}
			return os.Chmod(to, fi.Mode().Perm())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// worktrees lists the worktrees of the repository at dir.
func worktrees(t testing.TB, dir string) []string {
	t.Helper()
	var wts []string
	for _, l := range strings.Split(runGit(t, dir, "worktree", "list", "--porcelain"), "\n") {
		if w, ok := strings.CutPrefix(l, "worktree "); ok {
			wts = append(wts, w)
		}
	}
	return wts
}

// assertNoWorktrees checks that the repository at dir has only its main
// worktree and no administrative files of another.
func assertNoWorktrees(t testing.TB, dir string) {
	t.Helper()
	if wts := worktrees(t, dir); len(wts) != 1 {
		t.Errorf("git worktree list: %q, want only the main worktree", wts)
	}
	for _, l := range strings.Split(runGit(t, dir, "worktree", "list", "--porcelain"), "\n") {
		if strings.HasPrefix(l, "locked") || strings.HasPrefix(l, "prunable") {
			t.Errorf("git worktree list: %s", l)
		}
	}
	ents, err := os.ReadDir(filepath.Join(dir, ".git", "worktrees"))
	if err == nil && len(ents) > 0 {
		t.Errorf(".git/worktrees still holds %d entries", len(ents))
	}
}

// assertEmptyDir checks that dir holds nothing (no sandbox left over).
func assertEmptyDir(t testing.TB, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("%s is not empty: %q", dir, names)
	}
}

// open opens a sandbox of cwd in a new temporary directory and removes it
// at the end of the test, checking that nothing is left.
func open(t *testing.T, cwd string, o sandbox.Options) *sandbox.Sandbox {
	t.Helper()
	if o.TempDir == "" {
		o.TempDir = t.TempDir()
	}
	sb, err := sandbox.Open(context.Background(), cwd, o)
	if err != nil {
		t.Fatalf("Open(%s, %+v): %v", cwd, o, err)
	}
	t.Cleanup(func() {
		if err := sb.Remove(); err != nil {
			t.Errorf("Remove: %v", err)
		}
		if _, err := os.Lstat(sb.Dir); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("after Remove, %s: %v", sb.Dir, err)
		}
		assertEmptyDir(t, o.TempDir)
		if sb.Mode == sandbox.Worktree {
			assertNoWorktrees(t, sb.Root)
		}
	})
	return sb
}

func realPath(t testing.TB, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// assertNoChanges checks that a sandbox just opened shows no change.
func assertNoChanges(t *testing.T, sb *sandbox.Sandbox) {
	t.Helper()
	res, err := sb.Changes(context.Background())
	if err != nil {
		t.Fatalf("Changes: %v", err)
	}
	if len(res.Files) != 0 || len(res.Diff) != 0 {
		t.Errorf("Changes of an untouched sandbox: %+v\n%s", res.Files, res.Diff)
	}
}

func TestParseModeAndCheckProtect(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want sandbox.Mode
		err  bool
	}{
		{"", sandbox.None, false},
		{"none", sandbox.None, false},
		{"copy", sandbox.Copy, false},
		{"worktree", sandbox.Worktree, false},
		{"Copy", "", true},
		{"docker", "", true},
	} {
		got, err := sandbox.ParseMode(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("ParseMode(%q) = %q, %v", tc.in, got, err)
		}
	}
	for _, tc := range []struct {
		globs []string
		err   bool
	}{
		{nil, false},
		{[]string{"secret/**", "*.pem", "config", "cfg/", "{a,b}/*.key"}, false},
		{[]string{""}, true},
		{[]string{"/etc/**"}, true},
		{[]string{"a/[b"}, true},
	} {
		if err := sandbox.CheckProtect(tc.globs); (err != nil) != tc.err {
			t.Errorf("CheckProtect(%q) = %v", tc.globs, err)
		}
	}
}

// makeCopyTree fills root with what copy mode has to carry: files, a
// subdirectory with its own permissions, an executable, links (relative,
// absolute, dangling, to a directory) and a FIFO.
func makeCopyTree(t *testing.T, root string) {
	writeFile(t, root, "a.txt", "alpha\n", 0o644)
	writeFile(t, root, "private.txt", "mine\n", 0o600)
	writeFile(t, root, "run.sh", "#!/bin/sh\necho hi\n", 0o755)
	writeFile(t, root, "sub/deeper/c.txt", "c\n", 0o644)
	writeFile(t, root, "sub/bin.dat", "\x00\x01\x02", 0o644)
	if err := os.Chmod(filepath.Join(root, "sub", "deeper"), 0o750); err != nil {
		t.Fatal(err)
	}
	symlink(t, root, "link.txt", "a.txt")
	symlink(t, root, "sub/up.txt", "../a.txt")
	symlink(t, root, "dangling", "no/such/file")
	symlink(t, root, "dirlink", "sub")
	outside := t.TempDir()
	writeFile(t, outside, "target.txt", "outside\n", 0o644)
	symlink(t, root, "abs", filepath.Join(outside, "target.txt"))
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOpenCopy(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T) (cwd string)
	}{
		{"plain directory", func(t *testing.T) string {
			root := filepath.Join(t.TempDir(), "proj")
			makeCopyTree(t, root)
			return root
		}},
		{"git repository", func(t *testing.T) string {
			root := newRepo(t, "proj")
			makeCopyTree(t, root)
			commitAll(t, root)
			writeFile(t, root, "a.txt", "alpha edited\n", 0o644) // uncommitted
			writeFile(t, root, "untracked.txt", "u\n", 0o644)
			return root
		}},
		{"through a symbolic link to the directory", func(t *testing.T) string {
			root := filepath.Join(t.TempDir(), "proj")
			makeCopyTree(t, root)
			via := filepath.Join(t.TempDir(), "via")
			if err := os.Symlink(root, via); err != nil {
				t.Fatal(err)
			}
			return via
		}},
		{"a directory named base", func(t *testing.T) string {
			root := filepath.Join(t.TempDir(), "base")
			makeCopyTree(t, root)
			return root
		}},
		{"a directory named as hub's own files", func(t *testing.T) string {
			root := filepath.Join(t.TempDir(), ".hub-owner")
			makeCopyTree(t, root)
			return root
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cwd := tc.make(t)
			real := realPath(t, cwd)
			before := listTree(t, real, false)
			tmp := t.TempDir()
			sb := open(t, cwd, sandbox.Options{Mode: sandbox.Copy, TempDir: tmp})
			if sb.Mode != sandbox.Copy || sb.Root != real || sb.Workdir != sb.Dir {
				t.Errorf("sandbox: Mode %q Root %q Dir %q Workdir %q; want Root %q and Workdir = Dir", sb.Mode, sb.Root, sb.Dir, sb.Workdir, real)
			}
			if !strings.HasPrefix(sb.Dir, realPath(t, tmp)+string(filepath.Separator)) && !strings.HasPrefix(sb.Dir, tmp+string(filepath.Separator)) {
				t.Errorf("Dir %s is not under TempDir %s", sb.Dir, tmp)
			}
			if filepath.Base(sb.Dir) != filepath.Base(real) && !strings.HasPrefix(filepath.Base(real), ".hub") {
				t.Errorf("Dir %s is not named as the original %s", sb.Dir, real)
			}
			want := listTree(t, real, true)
			delete(want, "fifo") // a FIFO is no file a diff can hold
			if d := mapDiff(want, listTree(t, sb.Dir, false)); d != "" {
				t.Errorf("the copy differs from the original (.git and FIFOs left out):\n%s", d)
			}
			if _, err := os.Lstat(filepath.Join(sb.Dir, ".git")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf(".git copied: %v", err)
			}
			// Links are links, not followed: the absolute one still
			// points at the file outside, with no copy of its content.
			if fi, err := os.Lstat(filepath.Join(sb.Dir, "abs")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("abs: %v %v, want a symbolic link", fi, err)
			}
			if fi, err := os.Lstat(filepath.Join(sb.Dir, "dirlink")); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
				t.Errorf("dirlink: %v %v, want a symbolic link", fi, err)
			}
			assertNoChanges(t, sb)
			if d := mapDiff(before, listTree(t, real, false)); d != "" {
				t.Errorf("Open changed the original:\n%s", d)
			}
		})
	}
}

// TestOpenCopyIgnored: in a repository, ignored paths are copied, but what
// the agent does to them (or new files the ignore rules cover) is no part
// of the change.
func TestOpenCopyIgnored(t *testing.T) {
	for _, sub := range []string{"", "pkg"} {
		t.Run("cwd="+sub, func(t *testing.T) {
			repo := newRepo(t, "proj")
			writeFile(t, repo, ".gitignore", "*.o\nnode_modules/\n", 0o644)
			cwd := filepath.Join(repo, sub)
			writeFile(t, cwd, "main.c", "int main;\n", 0o644)
			writeFile(t, cwd, "node_modules/left/index.js", "module.exports = 1\n", 0o644)
			writeFile(t, cwd, "build/old.o", "object\n", 0o644) // a directory of ignored files only
			commitAll(t, repo)                                  // the ignored files stay untracked

			sb := open(t, cwd, sandbox.Options{Mode: sandbox.Copy})
			if got := readFile(t, sb.Dir, "node_modules/left/index.js"); got != "module.exports = 1\n" {
				t.Errorf("node_modules not copied: %q", got)
			}
			if got := readFile(t, sb.Dir, "build/old.o"); got != "object\n" {
				t.Errorf("build/old.o not copied: %q", got)
			}
			assertNoChanges(t, sb)

			writeFile(t, sb.Dir, "node_modules/left/index.js", "module.exports = 2\n", 0o644)
			writeFile(t, sb.Dir, "node_modules/right/index.js", "new\n", 0o644)
			writeFile(t, sb.Dir, "main.o", "new object\n", 0o644)
			writeFile(t, sb.Dir, "deep/er/x.o", "new object\n", 0o644)
			remove(t, sb.Dir, "build/old.o")
			writeFile(t, sb.Dir, "build/new.c", "not ignored\n", 0o644)
			writeFile(t, sb.Dir, "main.c", "int main(void);\n", 0o644)
			res, err := sb.Changes(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			assertFiles(t, res.Files, []sandbox.File{
				{Path: "build/new.c", Kind: sandbox.Added},
				{Path: "main.c", Kind: sandbox.Modified},
			})
			checkDiff(t, sb, res, nil)
		})
	}
}

// makeRepoState makes a repository with a commit and then every kind of
// uncommitted state worktree mode has to carry over (or leave out).
func makeRepoState(t *testing.T, name string) string {
	repo := newRepo(t, name)
	writeFile(t, repo, ".gitignore", "*.o\nnode_modules/\n", 0o644)
	writeFile(t, repo, "a.txt", "alpha\n", 0o644)
	writeFile(t, repo, "staged.txt", "staged\n", 0o644)
	writeFile(t, repo, "gone.txt", "gone\n", 0o644)
	writeFile(t, repo, "rm-staged.txt", "rm\n", 0o644)
	writeFile(t, repo, "run.sh", "#!/bin/sh\n", 0o755)
	writeFile(t, repo, "sub/deeper/c.txt", "c\n", 0o644)
	writeFile(t, repo, "was-dir/x.txt", "x\n", 0o644)
	symlink(t, repo, "link.txt", "a.txt")
	commitAll(t, repo)
	if err := os.RemoveAll(filepath.Join(repo, "was-dir")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, repo, "was-dir", "a file where a tracked directory was\n", 0o644)
	writeFile(t, repo, "a.txt", "alpha edited\n", 0o644)
	writeFile(t, repo, "staged.txt", "staged edited\n", 0o644)
	runGit(t, repo, "add", "staged.txt")
	writeFile(t, repo, "staged.txt", "staged edited twice\n", 0o644)
	remove(t, repo, "gone.txt")
	runGit(t, repo, "rm", "-q", "rm-staged.txt")
	writeFile(t, repo, "new.txt", "untracked\n", 0o644)
	writeFile(t, repo, "newdir/u.txt", "untracked in a new dir\n", 0o600)
	writeFile(t, repo, "main.o", "ignored\n", 0o644)
	writeFile(t, repo, "node_modules/x/index.js", "ignored\n", 0o644)
	writeFile(t, repo, "sub/only-ignored/y.o", "ignored\n", 0o644)
	return repo
}

func TestOpenWorktree(t *testing.T) {
	for _, tc := range []struct {
		name, sub string
	}{
		{"top level", ""},
		{"subdirectory", "sub/deeper"},
		{"subdirectory of ignored files only", "sub/only-ignored"},
		{"repository named base", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "proj"
			if strings.Contains(tc.name, "base") {
				name = "base"
			}
			repo := makeRepoState(t, name)
			cwd := filepath.Join(repo, filepath.FromSlash(tc.sub))
			status := runGit(t, repo, "status", "--porcelain")
			before := listTree(t, repo, true)
			sb := open(t, cwd, sandbox.Options{Mode: sandbox.Worktree})
			if sb.Root != realPath(t, repo) {
				t.Errorf("Root %s, want the top level %s", sb.Root, repo)
			}
			if want := filepath.Join(sb.Dir, filepath.FromSlash(tc.sub)); sb.Workdir != want {
				t.Errorf("Workdir %s, want %s", sb.Workdir, want)
			}
			if fi, err := os.Stat(sb.Workdir); err != nil || !fi.IsDir() {
				t.Errorf("Workdir %s: %v", sb.Workdir, err)
			}
			if wts := worktrees(t, repo); len(wts) != 2 || wts[1] != sb.Dir {
				t.Errorf("git worktree list: %q, want the sandbox %s too", wts, sb.Dir)
			}
			// The user's view, carried over: every file but the deleted
			// and the ignored ones, as it is in the original.
			want := listTree(t, repo, true)
			for _, p := range []string{"main.o", "node_modules", "node_modules/x", "node_modules/x/index.js", "sub/only-ignored", "sub/only-ignored/y.o"} {
				delete(want, p)
			}
			got := listTree(t, sb.Dir, true)
			if tc.sub == "sub/only-ignored" {
				delete(got, "sub/only-ignored") // the Workdir, made for the agent
			}
			if d := mapDiff(want, got); d != "" {
				t.Errorf("the worktree differs from the original's non-ignored files:\n%s", d)
			}
			for _, p := range []string{"gone.txt", "rm-staged.txt", "main.o", "node_modules"} {
				if _, err := os.Lstat(filepath.Join(sb.Dir, p)); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s is in the sandbox: %v", p, err)
				}
			}
			if got := runGit(t, sb.Dir, "status", "--porcelain"); got != status {
				t.Errorf("git status in the sandbox:\n%s\nin the original:\n%s", got, status)
			}
			if got, want := runGit(t, sb.Dir, "rev-parse", "HEAD"), runGit(t, repo, "rev-parse", "HEAD"); got != want {
				t.Errorf("sandbox HEAD %s, original %s", got, want)
			}
			assertNoChanges(t, sb)
			if d := mapDiff(before, listTree(t, repo, true)); d != "" {
				t.Errorf("Open changed the original:\n%s", d)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(t *testing.T) string
		o    sandbox.Options
		want error // nil: any error
	}{
		{"worktree of a repository without commits", func(t *testing.T) string {
			repo := newRepo(t, "empty")
			writeFile(t, repo, "a.txt", "a\n", 0o644)
			return repo
		}, sandbox.Options{Mode: sandbox.Worktree}, sandbox.ErrNotRepository},
		{"worktree of a directory outside any repository", func(t *testing.T) string {
			dir := t.TempDir()
			writeFile(t, dir, "a.txt", "a\n", 0o644)
			return dir
		}, sandbox.Options{Mode: sandbox.Worktree}, sandbox.ErrNotRepository},
		{"mode none", func(t *testing.T) string { return t.TempDir() }, sandbox.Options{Mode: sandbox.None}, nil},
		{"bad protect glob", func(t *testing.T) string { return t.TempDir() }, sandbox.Options{Mode: sandbox.Copy, Protect: []string{"a/[b"}}, nil},
		{"not a directory", func(t *testing.T) string {
			dir := t.TempDir()
			writeFile(t, dir, "f", "", 0o644)
			return filepath.Join(dir, "f")
		}, sandbox.Options{Mode: sandbox.Copy}, nil},
		{"no such directory", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, sandbox.Options{Mode: sandbox.Copy}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cwd := tc.make(t)
			tmp := t.TempDir()
			tc.o.TempDir = tmp
			sb, err := sandbox.Open(context.Background(), cwd, tc.o)
			if err == nil {
				sb.Remove()
				t.Fatalf("Open: no error")
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("Open: %v, want %v", err, tc.want)
			}
			if sb != nil {
				t.Errorf("Open returned a sandbox with its error")
			}
			assertEmptyDir(t, tmp)
		})
	}
}

// TestRemove: Remove leaves no directory and no worktree, also when the
// agent made that hard, and a second Remove is fine.
func TestRemove(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode sandbox.Mode
		act  func(t *testing.T, sb *sandbox.Sandbox)
	}{
		{"copy untouched", sandbox.Copy, nil},
		{"worktree untouched", sandbox.Worktree, nil},
		{"copy with read-only directories", sandbox.Copy, func(t *testing.T, sb *sandbox.Sandbox) {
			writeFile(t, sb.Dir, "ro/f.txt", "x\n", 0o444)
			os.Chmod(filepath.Join(sb.Dir, "ro"), 0o500)
			os.Chmod(filepath.Join(sb.Dir, "sub"), 0o500)
		}},
		{"worktree with read-only directories", sandbox.Worktree, func(t *testing.T, sb *sandbox.Sandbox) {
			writeFile(t, sb.Dir, "ro/f.txt", "x\n", 0o444)
			os.Chmod(filepath.Join(sb.Dir, "ro"), 0o500)
		}},
		{"worktree the agent locked", sandbox.Worktree, func(t *testing.T, sb *sandbox.Sandbox) {
			runGit(t, sb.Dir, "worktree", "lock", "--reason", "mine", sb.Dir)
		}},
		{"worktree whose .git file the agent deleted", sandbox.Worktree, func(t *testing.T, sb *sandbox.Sandbox) {
			remove(t, sb.Dir, ".git")
		}},
		{"worktree the agent committed in", sandbox.Worktree, func(t *testing.T, sb *sandbox.Sandbox) {
			writeFile(t, sb.Dir, "a.txt", "committed\n", 0o644)
			runGit(t, sb.Dir, "commit", "-q", "-am", "agent")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := newRepo(t, "proj")
			writeFile(t, repo, "a.txt", "a\n", 0o644)
			writeFile(t, repo, "sub/b.txt", "b\n", 0o644)
			commitAll(t, repo)
			tmp := t.TempDir()
			sb, err := sandbox.Open(context.Background(), repo, sandbox.Options{Mode: tc.mode, TempDir: tmp})
			if err != nil {
				t.Fatal(err)
			}
			if tc.act != nil {
				tc.act(t, sb)
			}
			if err := sb.Remove(); err != nil {
				t.Errorf("Remove: %v", err)
			}
			if err := sb.Remove(); err != nil {
				t.Errorf("second Remove: %v", err)
			}
			if _, err := os.Lstat(sb.Dir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s after Remove: %v", sb.Dir, err)
			}
			assertEmptyDir(t, tmp)
			assertNoWorktrees(t, repo)
			if got := readFile(t, repo, "a.txt"); got != "a\n" {
				t.Errorf("the original's a.txt: %q", got)
			}
		})
	}
}

// countdownCtx is a context that is cancelled at the (n+1)th call of its
// Err: a cancellation in the middle of Open, at a point the test chooses,
// with no clock.
type countdownCtx struct {
	context.Context
	mu   sync.Mutex
	left int
	done chan struct{}
}

func newCountdown(n int) *countdownCtx {
	return &countdownCtx{Context: context.Background(), left: n, done: make(chan struct{})}
}

func (c *countdownCtx) Done() <-chan struct{} { return c.done }

func (c *countdownCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.left <= 0 {
		select {
		case <-c.done:
		default:
			close(c.done)
		}
		return context.Canceled
	}
	c.left--
	return nil
}

func TestOpenCancelled(t *testing.T) {
	// A tree large enough for checks of ctx in the middle of the copy
	// (every 256 paths), shared by the cases: Open leaves it as it was.
	repo := newRepo(t, "proj")
	for i := range 300 {
		writeFile(t, repo, fmt.Sprintf("d%d/f%d.txt", i%7, i), "x\n", 0o644)
	}
	commitAll(t, repo)
	writeFile(t, repo, "d0/f0.txt", "edited\n", 0o644)
	check := func(t *testing.T, tmp string, sb *sandbox.Sandbox, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("Open with a cancelled context: no error")
		}
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Open: %v, want context.Canceled", err)
		}
		if sb != nil {
			t.Error("Open returned a sandbox with its error")
		}
		assertEmptyDir(t, tmp)
		assertNoWorktrees(t, repo)
	}
	for _, mode := range []sandbox.Mode{sandbox.Copy, sandbox.Worktree} {
		t.Run(string(mode)+"/before", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			tmp := t.TempDir()
			sb, err := sandbox.Open(ctx, repo, sandbox.Options{Mode: mode, TempDir: tmp})
			check(t, tmp, sb, err)
		})
		// Cancelled at the first check of ctx, then at the second, ...
		// until Open checks it no more and succeeds.
		t.Run(string(mode)+"/while", func(t *testing.T) {
			for n := 0; ; n++ {
				tmp := t.TempDir()
				sb, err := sandbox.Open(newCountdown(n), repo, sandbox.Options{Mode: mode, TempDir: tmp})
				if err == nil {
					if n < 3 {
						t.Errorf("Open checked ctx %d times, want at least 3 (before, during, after the copy)", n)
					}
					if err := sb.Remove(); err != nil {
						t.Error(err)
					}
					assertEmptyDir(t, tmp)
					assertNoWorktrees(t, repo)
					break
				}
				check(t, tmp, sb, err)
				if n > 100 {
					t.Fatal("Open never succeeded")
				}
			}
		})
	}
}

// TestOpenNoGit: without git on PATH, worktree mode is ErrNoGit and copy
// mode still copies (a repository then being a directory like any other).
func TestOpenNoGit(t *testing.T) {
	repo := newRepo(t, "proj")
	writeFile(t, repo, ".gitignore", "*.o\n", 0o644)
	writeFile(t, repo, "a.txt", "a\n", 0o644)
	commitAll(t, repo)
	t.Setenv("PATH", t.TempDir())
	tmp := t.TempDir()
	if sb, err := sandbox.Open(context.Background(), repo, sandbox.Options{Mode: sandbox.Worktree, TempDir: tmp}); !errors.Is(err, sandbox.ErrNoGit) {
		if err == nil {
			sb.Remove()
		}
		t.Errorf("worktree Open without git: %v, want ErrNoGit", err)
	}
	assertEmptyDir(t, tmp)
	sb, err := sandbox.Open(context.Background(), repo, sandbox.Options{Mode: sandbox.Copy, TempDir: tmp})
	if err != nil {
		t.Fatalf("copy Open without git: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(sb.Dir, ".git")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf(".git copied: %v", err)
	}
	writeFile(t, sb.Dir, "x.o", "no ignore rules without git\n", 0o644)
	res, err := sb.Changes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	assertFiles(t, res.Files, []sandbox.File{{Path: "x.o", Kind: sandbox.Added}})
	if err := sb.Remove(); err != nil {
		t.Error(err)
	}
	assertEmptyDir(t, tmp)
}
