package hubtest

// The real-CLI tests of sandboxed runs (SPEC §6.3), checked on the disk: a
// real agent CLI run through hub with --sandbox copy and --sandbox
// worktree under --permission workspace-write, with a mock model that has
// the CLI's own tools create or edit a file by a path relative to its
// working directory (the sandbox's path is random: a prompt cannot name
// it), then the original tree, the events and what is left of the sandbox.

import (
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
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/mockllm"
	"github.com/hubcli/hub/sandbox"
)

// SandboxAgent is what [Sandboxed] needs of one agent CLI: how it runs
// against the mock server, and the [mockllm.Call] lines ("<tool>
// <arguments>", as [PermissionAgent]'s Write and Shell) that have the
// model change one file by a path relative to the CLI's working
// directory, with one tool call that --permission workspace-write lets
// through. The sandbox's path is random, so no line can name it: say at
// the agent's test which tool takes a relative path.
type SandboxAgent struct {
	Agent Agent
	// Add has the CLI's write tool create the file path (relative, in a
	// directory that exists) holding exactly content + "\n".
	Add func(path, content string) string
	// Edit has the CLI's edit tool replace all of the existing file path
	// (relative), which holds old (whole lines), so that it holds exactly
	// content + "\n". nil when the CLI cannot in one call (say why).
	Edit func(path, old, content string) string
	// Shell has the CLI's shell tool run `echo content > path` (path
	// relative, in a directory that exists). nil when workspace-write
	// offers the CLI no shell (say so).
	Shell func(path, content string) string
	// GitWrites are the files (paths relative to the git directory) that
	// the CLI itself writes in the repository's git directory when it runs
	// in a worktree sandbox, which shares that directory with the
	// original: they may appear there; any other change to the original's
	// .git (but for new objects) fails the test. Say what each is.
	GitWrites []string
}

// The project tree of the sandbox tests, in Env.Work.
const (
	sandboxNewPath    = "src/new.txt"      // what Add creates
	sandboxEditPath   = "README.md"        // what Edit replaces
	sandboxShellPath  = "src/shell.txt"    // what Shell creates
	sandboxSecretPath = "secret/token.txt" // what Add creates under --protect secret/**
	// The user's own work in worktree mode, not committed: an edit of
	// README.md (so an Edit's diff shows the sandbox held it) and an
	// untracked file (carried over, so not a change).
	sandboxUncommitted = "uncommitted line\n"
	sandboxUntracked   = "notes.txt"
)

// sandboxFiles are the committed files of the project tree.
var sandboxFiles = map[string]string{
	sandboxEditPath:   "# project\n",
	"src/main.txt":    "main\n",
	"secret/key.txt":  "do not touch\n",
	"src/deep/in.txt": "deep\n",
}

// Sandboxed runs a's real CLI through hub in sandboxed runs (SPEC §6.3) at
// --permission workspace-write, in parallel subtests:
//
//   - "<mode>/add", "<mode>/edit" and "<mode>/shell", for mode copy and
//     worktree (edit and shell when a.Edit and a.Shell are set): the
//     model creates src/new.txt (Add), rewrites README.md (Edit) or
//     creates src/shell.txt (Shell) by a relative path, in two runs on one
//     project: first without Apply, then with it. Each run must be ok,
//     the tool's result sent back to the model, no call denied;
//     run.started.sandbox must name the mode, the original as its root
//     and a sandbox dir elsewhere, which run.started.cwd (where the agent
//     ran) must be; there must be exactly one file.changed, for that path
//     (added or modified, its size, not binary, not protected), and
//     run.finished.diff (diff_bytes its size) must hold the change: the
//     new line, and for an edit every old line removed (in worktree mode
//     the user's uncommitted one too: the sandbox held the user's view).
//     Without Apply the original tree is byte for byte what it was (every
//     file hashed before and after) and applied is absent; with Apply,
//     applied is true and the original differs only in that path, which
//     holds exactly content + "\n". After each run the sandbox directory
//     and its temporary parent are gone; in worktree mode `git worktree
//     list` shows only the main worktree, the refs, HEAD and `git status`
//     are as they were (plus the applied path) and no file of the
//     original's .git changed (new objects and a.GitWrites aside).
//   - "protected": in copy mode, with --protect 'secret/**' and --apply,
//     the model creates secret/token.txt (Add): the run ends
//     permission_denied/protected_path naming it, its file.changed says
//     protected, applied is false and the original is as it was.
//
// The worktree project is a git repository with a commit, an uncommitted
// edit of README.md and an untracked notes.txt. Every run is bounded by
// the test's deadline ([Unbounded]) and checked by [RunChecked].
func Sandboxed(t *testing.T, a SandboxAgent) {
	t.Helper()
	if a.Agent.Configure == nil || a.Add == nil {
		t.Fatal("SandboxAgent needs Agent.Configure and Add")
	}
	Bin(t, a.Agent.Name) // skips (or fails) before anything else when the CLI is missing
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("the sandbox tests need git: worktree mode runs it")
	}
	for _, mode := range []sandbox.Mode{sandbox.Copy, sandbox.Worktree} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			for _, c := range sandboxCases(a) {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					sandboxChange(t, a, mode, c)
				})
			}
		})
	}
	t.Run("protected", func(t *testing.T) {
		t.Parallel()
		sandboxProtected(t, a)
	})
}

// sandboxCase is one change of Sandboxed: which file, how it changes, and
// the call that changes it, given the content to write and the file's
// content before (README.md as the user sees it).
type sandboxCase struct {
	name   string
	path   string
	change events.Change
	call   func(content, old string) string
}

// sandboxCases are the changes a can make.
func sandboxCases(a SandboxAgent) []sandboxCase {
	cases := []sandboxCase{{"add", sandboxNewPath, events.ChangeAdded, func(content, _ string) string { return a.Add(sandboxNewPath, content) }}}
	if a.Edit != nil {
		cases = append(cases, sandboxCase{"edit", sandboxEditPath, events.ChangeModified, func(content, old string) string { return a.Edit(sandboxEditPath, old, content) }})
	}
	if a.Shell != nil {
		cases = append(cases, sandboxCase{"shell", sandboxShellPath, events.ChangeAdded, func(content, _ string) string { return a.Shell(sandboxShellPath, content) }})
	}
	return cases
}

// sandboxProject writes the project tree into dir; in worktree mode it
// makes it a git repository with the tree committed, then the user's
// uncommitted edit and untracked file. It returns README.md's content as
// the user sees it.
func sandboxProject(t *testing.T, dir string, mode sandbox.Mode) string {
	t.Helper()
	write := func(name, data string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range sandboxFiles {
		write(name, data)
	}
	readme := sandboxFiles[sandboxEditPath]
	if mode != sandbox.Worktree {
		return readme
	}
	sandboxGit(t, dir, "init", "-q")
	sandboxGit(t, dir, "add", "-A")
	sandboxGit(t, dir, "commit", "-qm", "project")
	readme += sandboxUncommitted
	write(sandboxEditPath, readme)
	write(sandboxUntracked, "untracked\n")
	if st := sandboxGit(t, dir, "status", "--porcelain"); st != " M README.md\n?? notes.txt\n" {
		t.Fatalf("git status of the project = %q, want README.md modified and notes.txt untracked", st)
	}
	return readme
}

// sandboxGit runs git in dir, with an identity and without the user's
// config, and returns its stdout; it fails t fatally when git fails.
func sandboxGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=hub test", "-c", "user.email=test@hub.invalid", "-c", "init.defaultBranch=main", "-c", "commit.gpgSign=false"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "GIT_OPTIONAL_LOCKS=0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %s in %s: %v: %s", strings.Join(args, " "), dir, err, stderr.String())
	}
	return string(out)
}

// TreeState is every path under root but .git, each with its type, mode
// and a hash of its content (a link's target).
func TreeState(t testing.TB, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if rel == ".git" {
			return fs.SkipDir // sandboxGitState looks at the repository
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case fi.Mode().Type() == fs.ModeSymlink:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			m[rel] = "link " + target
		case fi.IsDir():
			m[rel] = fmt.Sprintf("dir %o", fi.Mode().Perm())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			m[rel] = fmt.Sprintf("file %o %d %s", fi.Mode().Perm(), len(b), hex.EncodeToString(h[:]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TreeDiff lists how after (a TreeState) differs from before, sorted:
// nil when they are the same.
func TreeDiff(before, after map[string]string) []string {
	var out []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			out = append(out, fmt.Sprintf("%s: %s, now gone", k, v))
		} else if w != v {
			out = append(out, fmt.Sprintf("%s: %s, now %s", k, v, w))
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			out = append(out, fmt.Sprintf("%s: new, %s", k, v))
		}
	}
	sort.Strings(out)
	return out
}

// sandboxGitState is what the repository at dir says of itself: its
// refs, HEAD, status and worktrees ("" outside worktree mode).
func sandboxGitState(t *testing.T, dir string, mode sandbox.Mode) string {
	t.Helper()
	if mode != sandbox.Worktree {
		return ""
	}
	return "refs:\n" + sandboxGit(t, dir, "for-each-ref", "--format=%(refname) %(objectname)") +
		"HEAD: " + sandboxGit(t, dir, "rev-parse", "--symbolic-full-name", "HEAD") +
		"status:\n" + sandboxGit(t, dir, "status", "--porcelain", "--untracked-files=all") +
		"worktrees:\n" + sandboxGit(t, dir, "worktree", "list", "--porcelain")
}

// sandboxChange is one subtest "<mode>/<case>" of Sandboxed: a run
// without Apply, then one with it, on one project.
func sandboxChange(t *testing.T, a SandboxAgent, mode sandbox.Mode, c sandboxCase) {
	e := a.Agent.Prepare(t, Setup{})
	readme := sandboxProject(t, e.Work, mode)
	content := "hub-sandbox-" + string(mode) + "-" + c.name
	path, change, old := c.path, c.change, ""
	if change == events.ChangeModified {
		old = readme
	}
	call := c.call(content, readme)
	before, gitBefore := TreeState(t, e.Work), sandboxGitState(t, e.Work, mode)
	if mode == sandbox.Worktree && strings.Count(gitBefore, "\nworktree ") != 1 {
		t.Fatalf("the project has more than one worktree before the run:\n%s", gitBefore)
	}
	dotGit := sandboxDotGit(t, e.Work, mode, a.GitWrites)
	prompt := "Sandbox test. " + string(mockllm.Call) + " " + call

	// Without Apply: the change is reported, and the original untouched.
	r := sandboxRun(t, e, mode, prompt, nil)
	sandboxCheck(t, r, e, mode, path, change, content, old)
	if r.Fin.Applied != nil {
		t.Errorf("run.finished.applied = %v without Apply, want it absent", *r.Fin.Applied)
	}
	if d := TreeDiff(before, TreeState(t, e.Work)); len(d) > 0 {
		t.Errorf("the original tree changed without Apply:\n%s", strings.Join(d, "\n"))
	}
	if got := sandboxGitState(t, e.Work, mode); got != gitBefore {
		t.Errorf("the repository changed without Apply:\n%s\nwas:\n%s", got, gitBefore)
	}
	sandboxDotGitSame(t, e.Work, mode, a.GitWrites, dotGit)
	if t.Failed() {
		return // the run with Apply would start from a changed project
	}

	// With Apply: the same change lands, and nothing else.
	r = sandboxRun(t, e, mode, prompt, func(req *hub.Request) { req.Apply = true })
	sandboxCheck(t, r, e, mode, path, change, content, old)
	if r.Fin.Applied == nil || !*r.Fin.Applied {
		t.Errorf("run.finished.applied = %v with Apply, want true", r.Fin.Applied)
	}
	target := filepath.Join(e.Work, filepath.FromSlash(path))
	if b, err := os.ReadFile(target); err != nil || string(b) != content+"\n" {
		t.Errorf("after Apply, %s holds %q (%v), want exactly %q", path, b, err, content+"\n")
	}
	after := TreeState(t, e.Work)
	delete(after, path)
	delete(before, path)
	if d := TreeDiff(before, after); len(d) > 0 {
		t.Errorf("Apply changed the original tree beyond %s:\n%s", path, strings.Join(d, "\n"))
	}
	if mode == sandbox.Worktree {
		// The repository's state is the user's, with the applied path
		// still not committed.
		wantStatus := "status:\n M README.md\n?? notes.txt\n?? " + path + "\n"
		if change == events.ChangeModified {
			wantStatus = "status:\n M README.md\n?? notes.txt\n"
		}
		got := sandboxGitState(t, e.Work, mode)
		want := strings.Replace(gitBefore, "status:\n M README.md\n?? notes.txt\n", wantStatus, 1)
		if got != want {
			t.Errorf("the repository after Apply:\n%s\nwant:\n%s", got, want)
		}
		sandboxDotGitSame(t, e.Work, mode, a.GitWrites, dotGit)
	}
}

// sandboxDotGit is every file of dir's .git directory but the object
// store and gitWrites, hashed (nil outside worktree mode). New objects are
// left out: a sandbox may add some (git write-tree of the user's index),
// and they change nothing the user sees.
func sandboxDotGit(t *testing.T, dir string, mode sandbox.Mode, gitWrites []string) map[string]string {
	t.Helper()
	if mode != sandbox.Worktree {
		return nil
	}
	m := TreeState(t, filepath.Join(dir, ".git"))
	for p := range m {
		if p == "objects" || strings.HasPrefix(p, "objects/") {
			delete(m, p)
		}
	}
	for _, p := range gitWrites {
		delete(m, p)
	}
	return m
}

// sandboxDotGitSame fails t unless dir's .git is as before was
// (sandboxDotGit).
func sandboxDotGitSame(t *testing.T, dir string, mode sandbox.Mode, gitWrites []string, before map[string]string) {
	t.Helper()
	if d := TreeDiff(before, sandboxDotGit(t, dir, mode, gitWrites)); len(d) > 0 {
		t.Errorf("the original's .git changed (the worktree sandbox shares it):\n%s", strings.Join(d, "\n"))
	}
}

// sandboxProtected is subtest "protected" of Sandboxed.
func sandboxProtected(t *testing.T, a SandboxAgent) {
	e := a.Agent.Prepare(t, Setup{})
	sandboxProject(t, e.Work, sandbox.Copy)
	before := TreeState(t, e.Work)
	content := "hub-sandbox-protected"
	prompt := "Sandbox test. " + string(mockllm.Call) + " " + a.Add(sandboxSecretPath, content)
	r := sandboxRun(t, e, sandbox.Copy, prompt, func(req *hub.Request) {
		req.Protect = []string{"secret/**"}
		req.Apply = true
	})
	t.Logf("protected: %s", describe(r))
	WantErr(t, r.Fin, events.BinPermissionDenied, events.ReasonProtectedPath, 0)
	if !strings.Contains(r.Fin.Error.Message, sandboxSecretPath) {
		t.Errorf("error message %q does not name %s", r.Fin.Error.Message, sandboxSecretPath)
	}
	ch := sandboxChanges(r)
	if f, ok := ch[sandboxSecretPath]; !ok || f.Change != events.ChangeAdded || f.Protected == "" {
		t.Errorf("file.changed %s = %+v (present: %v), want added and protected", sandboxSecretPath, f, ok)
	}
	if len(ch) != 1 {
		t.Errorf("file.changed for %d paths (%v), want only %s", len(ch), sandboxPaths(ch), sandboxSecretPath)
	}
	if r.Fin.Applied == nil || *r.Fin.Applied {
		t.Errorf("run.finished.applied = %v with Apply and a protected path changed, want false", r.Fin.Applied)
	}
	if d := TreeDiff(before, TreeState(t, e.Work)); len(d) > 0 {
		t.Errorf("the original tree changed:\n%s", strings.Join(d, "\n"))
	}
	if rs, ok := sandboxStarted(t, r); ok {
		sandboxGone(t, rs.Sandbox.Dir)
	}
}

// sandboxRun runs prompt in a sandbox of mode at --permission
// workspace-write; edit, if not nil, changes the request further.
func sandboxRun(t *testing.T, e *Env, mode sandbox.Mode, prompt string, edit func(*hub.Request)) Result {
	t.Helper()
	return e.Run(t, prompt, budget.Limits{}, func(req *hub.Request) {
		req.Permission = grant.WorkspaceWrite
		req.Sandbox = mode
		if edit != nil {
			edit(req)
		}
	})
}

// sandboxCheck checks what every ok run of sandboxChange must show: see
// Sandboxed.
func sandboxCheck(t *testing.T, r Result, e *Env, mode sandbox.Mode, path string, change events.Change, content, old string) {
	t.Helper()
	t.Logf("%s, %s %s (apply %v): %s", mode, path, change, r.Fin.Applied != nil, describe(r))
	if !r.Fin.OK {
		t.Fatalf("run.finished not ok: %s", describe(r))
	}
	if r.Fin.ToolCallsDenied != 0 || !strings.HasPrefix(r.Fin.Text, mockllm.ToolAnswerPrefix) {
		t.Errorf("tool_calls_denied %d, answer %q: want 0 and the answer quoting the tool's result", r.Fin.ToolCallsDenied, r.Fin.Text)
	}
	rs, ok := sandboxStarted(t, r)
	if !ok {
		return
	}
	sb := rs.Sandbox
	root, err := filepath.EvalSymlinks(e.Work)
	if err != nil {
		t.Fatal(err)
	}
	if sb.Mode != string(mode) || sb.Root != root || sb.Dir == "" || sandboxWithin(root, sb.Dir) {
		t.Errorf("run.started.sandbox = %+v, want mode %s, root %s and a dir elsewhere", *sb, mode, root)
	}
	if rs.Cwd != sb.Dir {
		t.Errorf("run.started.cwd = %s, want the sandbox %s: the agent must run there", rs.Cwd, sb.Dir)
	}
	ch := sandboxChanges(r)
	f, found := ch[path]
	size := int64(len(content) + 1)
	switch {
	case !found:
		t.Errorf("no file.changed for %s (file.changed for %v): the tool wrote nothing there (answer %q)", path, sandboxPaths(ch), r.Fin.Text)
	case f.Change != change || f.Bytes == nil || *f.Bytes != size || f.Binary || f.Protected != "" || f.OldPath != nil:
		t.Errorf("file.changed %s = %s, want %s, %d bytes, not binary, not protected", path, sandboxChangeString(f), change, size)
	}
	if len(ch) != 1 {
		t.Errorf("file.changed for %v, want only %s", sandboxPaths(ch), path)
	}
	if r.Fin.Diff == nil || r.Fin.DiffBytes == nil || *r.Fin.DiffBytes != int64(len(*r.Fin.Diff)) {
		t.Errorf("run.finished diff %v, diff_bytes %v: want the whole diff and its size", r.Fin.Diff != nil, r.Fin.DiffBytes)
	} else {
		diff := *r.Fin.Diff
		want := []string{"+++ b/" + path + "\n", "\n+" + content + "\n"}
		if change == events.ChangeAdded {
			want = append(want, "--- /dev/null\n")
		}
		for _, l := range strings.SplitAfter(old, "\n") {
			if l != "" {
				want = append(want, "\n-"+l)
			}
		}
		for _, w := range want {
			if !strings.Contains(diff, w) {
				t.Errorf("run.finished.diff does not hold %q:\n%s", w, diff)
			}
		}
	}
	sandboxGone(t, sb.Dir)
	if mode == sandbox.Worktree {
		if wt := sandboxGit(t, e.Work, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
			t.Errorf("git worktree list after the run shows more than the main worktree:\n%s", wt)
		}
	}
}

// sandboxStarted returns the run's run.started, failing t unless it
// names a sandbox.
func sandboxStarted(t *testing.T, r Result) (events.RunStarted, bool) {
	t.Helper()
	if len(r.Events) > 0 {
		if rs, ok := r.Events[0].Body.(events.RunStarted); ok && rs.Sandbox != nil {
			return rs, true
		}
	}
	t.Errorf("the run's first event is no run.started with a sandbox")
	return events.RunStarted{}, false
}

// sandboxGone fails t unless the sandbox dir, and the temporary directory
// holding it, are gone.
func sandboxGone(t *testing.T, dir string) {
	t.Helper()
	for _, p := range []string{dir, filepath.Dir(dir)} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there after the run (%v): the sandbox must be removed", p, err)
		}
	}
}

// sandboxChanges are the run's file.changed events by path.
func sandboxChanges(r Result) map[string]events.FileChanged {
	m := map[string]events.FileChanged{}
	for _, ev := range r.Events {
		if f, ok := ev.Body.(events.FileChanged); ok {
			m[f.Path] = f
		}
	}
	return m
}

func sandboxPaths(m map[string]events.FileChanged) []string {
	var out []string
	for p, f := range m {
		out = append(out, p+" ("+sandboxChangeString(f)+")")
	}
	sort.Strings(out)
	return out
}

func sandboxChangeString(f events.FileChanged) string {
	s := string(f.Change)
	if f.Bytes != nil {
		s += fmt.Sprintf(", %d bytes", *f.Bytes)
	}
	if f.OldPath != nil {
		s += ", from " + *f.OldPath
	}
	if f.Binary {
		s += ", binary"
	}
	if f.Protected != "" {
		s += ", protected: " + f.Protected
	}
	return s
}

// sandboxWithin reports whether p is root or below it (both clean,
// absolute).
func sandboxWithin(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
