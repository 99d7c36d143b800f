package hub_test

// Sandboxed runs (SPEC §6.3) with the fake agent: it plays file operations
// in its working directory (HUB_FAKE_FS, a JSON list of fsOp), and the
// tests check the original tree on the disk, the events, and that no
// sandbox is left.

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/sandbox"
)

// fsOp is one file operation of the "fs" scenario, relative to the fake
// agent's working directory unless the path is absolute.
type fsOp struct {
	Op     string `json:"op"` // write, rm, mv, symlink, link, chmod, git
	Path   string `json:"path"`
	To     string `json:"to,omitempty"`     // mv's new path, symlink's and link's target
	Data   string `json:"data,omitempty"`   // write's content
	Mode   uint32 `json:"mode,omitempty"`   // chmod's
	Args   string `json:"args,omitempty"`   // git's arguments, space-separated
	Hang   bool   `json:"hang,omitempty"`   // after the ops, print one event and hang
	Record string `json:"record,omitempty"` // write the working directory to this file
}

func init() {
	scenarios["fs"] = func([]string) {
		var ops []fsOp
		if err := json.Unmarshal([]byte(os.Getenv("HUB_FAKE_FS")), &ops); err != nil {
			fmt.Fprintln(os.Stderr, "fake agent: HUB_FAKE_FS:", err)
			os.Exit(98)
		}
		hang := false
		for _, o := range ops {
			var err error
			switch o.Op {
			case "write":
				_ = os.MkdirAll(filepath.Dir(o.Path), 0o755)
				err = os.WriteFile(o.Path, []byte(o.Data), 0o644)
			case "rm":
				err = os.RemoveAll(o.Path)
			case "mv":
				_ = os.MkdirAll(filepath.Dir(o.To), 0o755)
				err = os.Rename(o.Path, o.To)
			case "symlink":
				err = os.Symlink(o.To, o.Path)
			case "link":
				err = os.Link(o.To, o.Path)
			case "chmod":
				err = os.Chmod(o.Path, fs.FileMode(o.Mode))
			case "replace-self": // move the working directory away, a link to Path in its place
				wd, _ := os.Getwd()
				if err = os.Rename(wd, wd+".moved"); err == nil {
					err = os.Symlink(o.Path, wd)
				}
			case "truncate": // a sparse file of Mode MiB
				err = os.WriteFile(o.Path, nil, 0o644)
				if err == nil {
					err = os.Truncate(o.Path, int64(o.Mode)<<20)
				}
			case "git":
				cmd := exec.Command("git", strings.Fields(o.Args)...)
				cmd.Stderr = os.Stderr
				err = cmd.Run()
			case "pwd":
				wd, _ := os.Getwd()
				err = os.WriteFile(o.Path, []byte(wd), 0o644)
			case "hang":
				hang = true
			case "tool": // report a call of the write tool on Path (it wrote nothing)
				in, _ := json.Marshal(map[string]string{"filePath": o.Path, "content": "x"})
				fmt.Println(stepLine)
				fmt.Printf(`{"type":"tool_use","timestamp":1,"sessionID":"ses_fake1","part":{"type":"tool","tool":"write","callID":"c1","state":{"status":"completed","input":%s,"output":"ok"}}}`+"\n", in)
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, "fake agent:", o.Op, err)
				os.Exit(97)
			}
		}
		if hang {
			fmt.Println(stepLine)
			time.Sleep(time.Hour)
		}
		okStream(os.Stdout)
	}
}

// sandboxTree makes the original tree of the tests: a.txt (3 lines),
// dir/b.txt, old.txt (to rename), gone.txt (to delete), bin.dat.
func sandboxTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, data := range map[string]string{
		"a.txt": "one\ntwo\nthree\n", "dir/b.txt": "bee\n", "old.txt": "rename me\n", "gone.txt": "delete me\n", "bin.dat": "\x00\x01\x02",
	} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// sandboxRepo is sandboxTree made a git repository with one commit.
func sandboxRepo(t *testing.T) string {
	t.Helper()
	root := sandboxTree(t)
	gitIn(t, root, "init", "-q")
	gitIn(t, root, "add", "-A")
	gitIn(t, root, "commit", "-qm", "init")
	return root
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// sandboxRun runs the fs scenario with ops in a sandbox of root.
func sandboxRun(t *testing.T, ctx context.Context, root string, ops []fsOp, edit func(*hub.Request), hook func(events.Event), opts ...hub.Option) result {
	t.Helper()
	b, _ := json.Marshal(ops)
	return runFakeHook(t, ctx, "fs", func(r *hub.Request) {
		r.Cwd = root
		r.Sandbox = sandbox.Copy
		r.Env = append(r.Env, "HUB_FAKE_FS="+string(b))
		if edit != nil {
			edit(r)
		}
	}, hook, opts...)
}

func (r result) changes() map[string]events.FileChanged {
	m := map[string]events.FileChanged{}
	for _, ev := range r.events {
		if f, ok := ev.Body.(events.FileChanged); ok {
			m[f.Path] = f
		}
	}
	return m
}

func (r result) sandboxDir(t *testing.T) string {
	t.Helper()
	rs, ok := r.events[0].Body.(events.RunStarted)
	if !ok || rs.Sandbox == nil {
		t.Fatalf("run.started has no sandbox: %+v", r.events[0].Body)
	}
	return rs.Sandbox.Dir
}

func wantNoSandbox(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Lstat(dir); err == nil {
		t.Errorf("sandbox %s is still there after the run", dir)
	}
	if _, err := os.Lstat(filepath.Dir(dir)); err == nil {
		t.Errorf("sandbox's temporary directory %s is still there after the run", filepath.Dir(dir))
	}
}

var editOps = []fsOp{
	{Op: "write", Path: "a.txt", Data: "one\nTWO\nthree\n"},
	{Op: "write", Path: "new/c.txt", Data: "sea\n"},
	{Op: "rm", Path: "gone.txt"},
	{Op: "mv", Path: "old.txt", To: "dir/renamed.txt"},
	{Op: "write", Path: "bin.dat", Data: "\x00\x01\x03\x04"},
	{Op: "chmod", Path: "dir/b.txt", Mode: 0o755},
}

// TestSandboxCopyLeavesOriginal: every kind of change is reported, the
// diff applies to the original with git apply, and without --apply the
// original is byte for byte what it was.
func TestSandboxCopyLeavesOriginal(t *testing.T) {
	t.Parallel()
	root := sandboxTree(t)
	before := hubtest.TreeState(t, root)
	wd := filepath.Join(t.TempDir(), "wd")
	var whole []byte
	r := sandboxRun(t, context.Background(), root, append(editOps, fsOp{Op: "pwd", Path: wd}), nil, nil, hub.WithDiff(func(d []byte) { whole = d }))
	wantBin(t, r.fin, "", "")
	if d := hubtest.TreeDiff(before, hubtest.TreeState(t, root)); len(d) > 0 {
		t.Errorf("the original changed without --apply: %v", d)
	}
	got, _ := os.ReadFile(wd)
	if dir := r.sandboxDir(t); !strings.HasPrefix(string(got), dir) || strings.HasPrefix(string(got), root) {
		t.Errorf("the agent ran in %q, want the sandbox %s", got, dir)
	}
	ch := r.changes()
	want := map[string]events.Change{"a.txt": "modified", "new/c.txt": "added", "gone.txt": "deleted", "dir/renamed.txt": "renamed", "bin.dat": "modified", "dir/b.txt": "modified"}
	if len(ch) != len(want) {
		t.Errorf("file.changed = %v, want %v", ch, want)
	}
	for p, c := range want {
		if ch[p].Change != c {
			t.Errorf("file.changed %s = %+v, want %s", p, ch[p], c)
		}
	}
	if f := ch["dir/renamed.txt"]; f.OldPath == nil || *f.OldPath != "old.txt" {
		t.Errorf("rename's old_path = %v, want old.txt", f.OldPath)
	}
	if f := ch["bin.dat"]; !f.Binary || f.Bytes == nil || *f.Bytes != 4 {
		t.Errorf("bin.dat = %+v, want binary, 4 bytes", f)
	}
	if f := ch["gone.txt"]; f.Bytes != nil {
		t.Errorf("deleted gone.txt has bytes %v, want null", *f.Bytes)
	}
	if r.fin.Diff == nil || r.fin.DiffBytes == nil || *r.fin.DiffBytes != int64(len(whole)) || *r.fin.Diff != string(whole) {
		t.Fatalf("run.finished diff/diff_bytes do not match the whole diff (%d bytes)", len(whole))
	}
	if r.fin.Applied != nil {
		t.Errorf("applied = %v without --apply, want absent", *r.fin.Applied)
	}
	// git apply takes the diff, and gives the tree the agent left.
	p := filepath.Join(t.TempDir(), "change.diff")
	if err := os.WriteFile(p, whole, 0o600); err != nil {
		t.Fatal(err)
	}
	cp := t.TempDir()
	if out, err := exec.Command("cp", "-a", root+"/.", cp).CombinedOutput(); err != nil {
		t.Fatal(string(out))
	}
	gitIn(t, cp, "apply", p)
	if b, _ := os.ReadFile(filepath.Join(cp, "dir/renamed.txt")); string(b) != "rename me\n" {
		t.Errorf("git apply: dir/renamed.txt = %q", b)
	}
	wantNoSandbox(t, r.sandboxDir(t))
}

// TestSandboxApply: with --apply the change lands in the original exactly.
func TestSandboxApply(t *testing.T) {
	t.Parallel()
	root := sandboxTree(t)
	r := sandboxRun(t, context.Background(), root, editOps, func(r *hub.Request) { r.Apply = true }, nil)
	wantBin(t, r.fin, "", "")
	if r.fin.Applied == nil || !*r.fin.Applied {
		t.Fatalf("applied = %v, want true", r.fin.Applied)
	}
	for name, want := range map[string]string{"a.txt": "one\nTWO\nthree\n", "new/c.txt": "sea\n", "dir/renamed.txt": "rename me\n", "bin.dat": "\x00\x01\x03\x04"} {
		if b, err := os.ReadFile(filepath.Join(root, name)); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", name, b, err, want)
		}
	}
	for _, name := range []string{"gone.txt", "old.txt"} {
		if _, err := os.Lstat(filepath.Join(root, name)); err == nil {
			t.Errorf("%s is still in the original", name)
		}
	}
	if fi, err := os.Stat(filepath.Join(root, "dir/b.txt")); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Errorf("dir/b.txt mode = %v, want executable", fi.Mode())
	}
	wantNoSandbox(t, r.sandboxDir(t))
}

// TestSandboxRefused: changes to protected paths and escapes fail the
// run, named, and nothing is applied even with --apply.
func TestSandboxRefused(t *testing.T) {
	t.Parallel()
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("outside"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		ops     []fsOp
		protect []string
		path    string // named in the error and refused in file.changed
	}{
		{"protect glob", []fsOp{{Op: "write", Path: "secrets/key.pem", Data: "k"}}, []string{"secrets/**"}, "secrets/key.pem"},
		{"protect ext", []fsOp{{Op: "write", Path: "dir/id.pem", Data: "k"}}, []string{"**/*.pem"}, "dir/id.pem"},
		{"git dir", []fsOp{{Op: "write", Path: ".git/hooks/pre-commit", Data: "#!/bin/sh\n"}}, nil, ".git/hooks/pre-commit"},
		{"absolute link", []fsOp{{Op: "symlink", Path: "out", To: "/etc"}}, nil, "out"},
		{"dotdot link", []fsOp{{Op: "symlink", Path: "dir/up", To: "../../x"}}, nil, "dir/up"},
		{"link chain", []fsOp{{Op: "symlink", Path: "dir/l1", To: "../l2"}, {Op: "symlink", Path: "l2", To: "../etc"}}, nil, "dir/l1"},
		{"hard link", []fsOp{{Op: "link", Path: "hl", To: outside}}, nil, "hl"},
		{"delete protected", []fsOp{{Op: "rm", Path: "dir/b.txt"}}, []string{"dir"}, "dir/b.txt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := sandboxTree(t)
			before := hubtest.TreeState(t, root)
			ops := append([]fsOp{{Op: "write", Path: "a.txt", Data: "fine\n"}}, tc.ops...)
			r := sandboxRun(t, context.Background(), root, ops, func(r *hub.Request) { r.Apply, r.Protect = true, tc.protect }, nil)
			wantBin(t, r.fin, events.BinPermissionDenied, events.ReasonProtectedPath)
			if !strings.Contains(r.fin.Error.Message, tc.path) {
				t.Errorf("error %q does not name %s", r.fin.Error.Message, tc.path)
			}
			if f := r.changes()[tc.path]; f.Protected == "" {
				t.Errorf("file.changed %s = %+v, want protected", tc.path, f)
			}
			if d := hubtest.TreeDiff(before, hubtest.TreeState(t, root)); len(d) > 0 {
				t.Errorf("the original changed: %v", d)
			}
			if r.fin.Applied == nil || *r.fin.Applied {
				t.Errorf("applied = %v, want false", r.fin.Applied)
			}
			if r.fin.Diff == nil || strings.Contains(*r.fin.Diff, tc.path) || !strings.Contains(*r.fin.Diff, "a.txt") {
				t.Errorf("diff = %v, want a.txt's change and not %s's", r.fin.Diff, tc.path)
			}
			wantNoSandbox(t, r.sandboxDir(t))
		})
	}
}

// TestSandboxConflict: the original is edited while the agent runs (here
// by the agent itself, through the original's absolute path): --apply
// applies nothing and the run is invalid_input/conflict naming the path.
func TestSandboxConflict(t *testing.T) {
	t.Parallel()
	root := sandboxTree(t)
	ops := []fsOp{
		{Op: "write", Path: "a.txt", Data: "agent's\n"},
		{Op: "write", Path: "new.txt", Data: "new\n"},
		{Op: "write", Path: filepath.Join(root, "a.txt"), Data: "user's\n"},
	}
	r := sandboxRun(t, context.Background(), root, ops, func(r *hub.Request) { r.Apply = true }, nil)
	wantBin(t, r.fin, events.BinInvalidInput, events.ReasonConflict)
	if !strings.Contains(r.fin.Error.Message, "a.txt") {
		t.Errorf("error %q does not name a.txt", r.fin.Error.Message)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "user's\n" {
		t.Errorf("a.txt = %q, want the user's edit kept", b)
	}
	if _, err := os.Lstat(filepath.Join(root, "new.txt")); err == nil {
		t.Error("new.txt was applied: applying is all or nothing")
	}
	wantNoSandbox(t, r.sandboxDir(t))
}

// TestSandboxKilled: a run cancelled while the agent works still reports
// what it changed, leaves the original as it was and removes the sandbox.
func TestSandboxKilled(t *testing.T) {
	t.Parallel()
	root := sandboxTree(t)
	before := hubtest.TreeState(t, root)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ops := []fsOp{{Op: "write", Path: "half.txt", Data: "half"}, {Op: "hang"}}
	r := sandboxRun(t, ctx, root, ops, func(r *hub.Request) { r.Apply = true }, func(ev events.Event) {
		if ev.Type() == events.TypeSessionStarted {
			cancel()
		}
	})
	wantBin(t, r.fin, events.BinCancelled, events.ReasonCaller)
	if d := hubtest.TreeDiff(before, hubtest.TreeState(t, root)); len(d) > 0 {
		t.Errorf("the original changed: %v", d)
	}
	if f, ok := r.changes()["half.txt"]; !ok || f.Change != events.ChangeAdded {
		t.Errorf("file.changed half.txt = %+v, want added", f)
	}
	if r.fin.Applied == nil || *r.fin.Applied {
		t.Errorf("applied = %v, want false", r.fin.Applied)
	}
	wantNoSandbox(t, r.sandboxDir(t))
}

// TestSandboxWorktree: a git worktree with the user's uncommitted and
// untracked files; the change applies to the repository, whose own
// uncommitted state stays; no worktree is left registered.
func TestSandboxWorktree(t *testing.T) {
	t.Parallel()
	root := sandboxTree(t)
	gitIn(t, root, "init", "-q")
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte("build/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, root, "add", "-A")
	gitIn(t, root, "commit", "-qm", "init")
	// The user's view: an uncommitted edit, an untracked file, an ignored one.
	for name, data := range map[string]string{"dir/b.txt": "bee, edited\n", "todo.txt": "untracked\n", "build/out.o": "ignored"} {
		p := filepath.Join(root, name)
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	status := gitIn(t, root, "status", "--porcelain")
	seen := filepath.Join(t.TempDir(), "seen")
	ops := []fsOp{
		{Op: "git", Args: "status --porcelain"},
		{Op: "pwd", Path: seen},
		{Op: "write", Path: "todo.txt", Data: "untracked, done\n"},
		{Op: "write", Path: "a.txt", Data: "one\n"},
		{Op: "write", Path: "build/more.o", Data: "ignored too"},
	}
	r := sandboxRun(t, context.Background(), root, ops, func(r *hub.Request) { r.Sandbox, r.Apply = sandbox.Worktree, true }, nil)
	wantBin(t, r.fin, "", "")
	ch := r.changes()
	if len(ch) != 2 || ch["todo.txt"].Change != events.ChangeModified || ch["a.txt"].Change != events.ChangeModified {
		t.Errorf("file.changed = %+v, want todo.txt and a.txt modified (build/ is ignored)", ch)
	}
	for name, want := range map[string]string{"todo.txt": "untracked, done\n", "a.txt": "one\n", "dir/b.txt": "bee, edited\n"} {
		if b, _ := os.ReadFile(filepath.Join(root, name)); string(b) != want {
			t.Errorf("%s = %q, want %q", name, b, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "build/more.o")); err == nil {
		t.Error("an ignored file the agent made was applied")
	}
	if got := gitIn(t, root, "status", "--porcelain"); !strings.Contains(got, " M a.txt") || !strings.Contains(got, " M dir/b.txt") || !strings.Contains(got, "?? todo.txt") {
		t.Errorf("git status after apply = %q (before: %q)", got, status)
	}
	if wt := gitIn(t, root, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("worktrees left: %s", wt)
	}
	wantNoSandbox(t, r.sandboxDir(t))
}

// TestSandboxWorktreeRefs: a branch the agent creates lands in the shared
// repository: that is a change to .git, refused.
func TestSandboxWorktreeRefs(t *testing.T) {
	t.Parallel()
	root := sandboxRepo(t)
	r := sandboxRun(t, context.Background(), root, []fsOp{{Op: "git", Args: "branch agent-branch"}}, func(r *hub.Request) { r.Sandbox = sandbox.Worktree }, nil)
	wantBin(t, r.fin, events.BinPermissionDenied, events.ReasonProtectedPath)
	if !strings.Contains(r.fin.Error.Message, ".git/refs/heads/agent-branch") {
		t.Errorf("error %q does not name the branch", r.fin.Error.Message)
	}
	wantNoSandbox(t, r.sandboxDir(t))
}

// TestSandboxRequests: what a sandbox needs is refused before anything
// starts.
func TestSandboxRequests(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*hub.Request)
		msg  string
	}{
		{"apply without sandbox", func(r *hub.Request) { r.Apply = true }, "--apply"},
		{"protect without sandbox", func(r *hub.Request) { r.Protect = []string{"x"} }, "--protect"},
		{"bad mode", func(r *hub.Request) { r.Sandbox = "tmpfs" }, "tmpfs"},
		{"bad glob", func(r *hub.Request) { r.Sandbox, r.Protect = sandbox.Copy, []string{"[x"} }, "[x"},
		{"worktree outside a repository", func(r *hub.Request) { r.Sandbox, r.Cwd = sandbox.Worktree, t.TempDir() }, "git repository"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := runFake(t, context.Background(), "ok", tc.edit)
			wantBin(t, r.fin, events.BinInvalidInput, events.ReasonBadRequest)
			if !strings.Contains(r.fin.Error.Message, tc.msg) {
				t.Errorf("error %q does not name %q", r.fin.Error.Message, tc.msg)
			}
			if rs := r.events[0].Body.(events.RunStarted); rs.PID != nil {
				t.Errorf("the agent started (pid %d)", *rs.PID)
			}
		})
	}
}

// TestSandboxKeep: --keep-sandbox keeps it and says where.
func TestSandboxKeep(t *testing.T) {
	t.Parallel()
	root := sandboxTree(t)
	r := sandboxRun(t, context.Background(), root, []fsOp{{Op: "write", Path: "k.txt", Data: "kept"}}, func(r *hub.Request) { r.KeepSandbox = true }, nil)
	wantBin(t, r.fin, "", "")
	dir := r.sandboxDir(t)
	defer os.RemoveAll(filepath.Dir(dir))
	ns := r.notices(events.NoticeSandboxKept)
	if len(ns) != 1 || !strings.Contains(ns[0].Message, dir) {
		t.Fatalf("sandbox_kept notices = %+v, want one naming %s", ns, dir)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "k.txt")); err != nil || string(b) != "kept" {
		t.Errorf("kept sandbox's k.txt = %q, %v", b, err)
	}
	// The next sandboxed run's sweep of stale sandboxes leaves a kept one.
	r = sandboxRun(t, context.Background(), sandboxTree(t), nil, nil, nil, hub.WithTempDir(filepath.Dir(filepath.Dir(dir))))
	wantBin(t, r.fin, "", "")
	if _, err := os.Stat(filepath.Join(dir, "k.txt")); err != nil {
		t.Errorf("the next run removed the kept sandbox: %v", err)
	}
}

// TestSandboxStaleSwept: a sandbox left by a hub that was killed (SIGKILL:
// no chance to clean up) is removed by the next sandboxed run.
func TestSandboxStaleSwept(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	// A process that made a sandbox, then died without removing it.
	cmd := exec.Command("sh", "-c", "exit 0")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.ProcessState.Pid()
	stale := filepath.Join(tmp, "hub-sandbox-stale")
	live := filepath.Join(tmp, "hub-sandbox-live")
	for dir, owner := range map[string]string{stale: fmt.Sprintf("%d 1 -", dead), live: fmt.Sprintf("%d ? -", os.Getpid())} {
		if err := os.MkdirAll(filepath.Join(dir, "proj"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, ".hub-owner"), []byte(owner), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	root := sandboxTree(t)
	r := sandboxRun(t, context.Background(), root, nil, nil, nil, hub.WithTempDir(tmp))
	wantBin(t, r.fin, "", "")
	if dir := r.sandboxDir(t); !strings.HasPrefix(dir, tmp+"/") {
		t.Errorf("the sandbox was made in %s, want below %s (WithTempDir)", dir, tmp)
	}
	if _, err := os.Lstat(stale); err == nil {
		t.Errorf("the stale sandbox %s is still there", stale)
	}
	if _, err := os.Lstat(live); err != nil {
		t.Errorf("a live hub's sandbox was removed: %v", err)
	}
}

// TestSandboxWriteToOriginal: under workspace-write, a write the agent
// aims at the original tree (by its absolute path) stops the run, and the
// message says the sandbox is the place.
func TestSandboxWriteToOriginal(t *testing.T) {
	t.Parallel()
	root := sandboxTree(t)
	r := sandboxRun(t, context.Background(), root, []fsOp{{Op: "tool", Path: filepath.Join(root, "a.txt")}}, func(r *hub.Request) {
		r.Permission = grant.WorkspaceWrite
	}, nil)
	wantBin(t, r.fin, events.BinPermissionDenied, events.ReasonEffectNotGranted)
	if !strings.Contains(r.fin.Error.Message, "in the original tree") || !strings.Contains(r.fin.Error.Hint, "relative to its working directory") {
		t.Errorf("error %q (hint %q) does not say the write aimed at the original", r.fin.Error.Message, r.fin.Error.Hint)
	}
	wantNoSandbox(t, r.sandboxDir(t))
}

// TestSandboxWorktreeGitDir: what an agent in a worktree sandbox does to
// the git directory it shares with the original — a config that runs a
// command (core.fsmonitor), hooks (a file and a link), alternates, another
// worktree registered, a branch — fails the run as protected_path; every
// file and link of it is put back as it was (a branch is left, and the
// message says how to undo it); hub's own git runs never run the
// agent's fsmonitor command; the user's index is not rewritten.
func TestSandboxWorktreeGitDir(t *testing.T) {
	t.Parallel()
	root := sandboxRepo(t)
	out := t.TempDir()
	marker := filepath.Join(out, "ran")
	monitor := filepath.Join(out, "monitor")
	if err := os.WriteFile(monitor, []byte("#!/bin/sh\ntouch "+marker+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	dotGit := filepath.Join(root, ".git")
	before := hubtest.TreeState(t, filepath.Join(dotGit, "hooks"))
	config, _ := os.ReadFile(filepath.Join(dotGit, "config"))
	index, _ := os.ReadFile(filepath.Join(dotGit, "index"))
	ops := []fsOp{ // the agent's own git commands first: they would run what follows
		{Op: "git", Args: "worktree add -q --detach " + filepath.Join(out, "wt") + " HEAD"},
		{Op: "git", Args: "branch agent-branch"},
		{Op: "git", Args: "config core.fsmonitor " + monitor},
		{Op: "write", Path: filepath.Join(dotGit, "hooks", "post-checkout"), Data: "#!/bin/sh\ntouch " + marker + "\n"},
		{Op: "symlink", Path: filepath.Join(dotGit, "hooks", "pre-commit"), To: monitor},
		{Op: "write", Path: filepath.Join(dotGit, "objects", "info", "alternates"), Data: out + "\n"},
		{Op: "write", Path: "a.txt", Data: "changed\n"},
	}
	r := sandboxRun(t, context.Background(), root, ops, func(r *hub.Request) { r.Sandbox, r.Apply = sandbox.Worktree, true }, nil)
	wantBin(t, r.fin, events.BinPermissionDenied, events.ReasonProtectedPath)
	for _, p := range []string{".git/config", ".git/hooks/post-checkout", ".git/hooks/pre-commit", ".git/objects/info/alternates", ".git/refs/heads/agent-branch"} {
		if !strings.Contains(r.fin.Error.Message, p) {
			t.Errorf("error does not name %s: %s", p, r.fin.Error.Message)
		}
	}
	if !strings.Contains(r.fin.Error.Message, "git update-ref -d refs/heads/agent-branch") {
		t.Errorf("error does not say how to undo the branch: %s", r.fin.Error.Message)
	}
	if got, _ := os.ReadFile(filepath.Join(dotGit, "config")); string(got) != string(config) {
		t.Errorf(".git/config = %q, want it put back to %q", got, config)
	}
	if d := hubtest.TreeDiff(before, hubtest.TreeState(t, filepath.Join(dotGit, "hooks"))); len(d) > 0 {
		t.Errorf(".git/hooks not put back: %v", d)
	}
	if _, err := os.Lstat(filepath.Join(dotGit, "objects", "info", "alternates")); err == nil {
		t.Error(".git/objects/info/alternates is still there")
	}
	if wt := gitIn(t, root, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 1 {
		t.Errorf("worktrees still registered: %s", wt)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the agent's fsmonitor command or hook ran")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a.txt")); string(b) != "one\ntwo\nthree\n" {
		t.Errorf("a.txt = %q: applied despite the refusal", b)
	}
	wantNoSandbox(t, r.sandboxDir(t))
	// A run that leaves .git alone leaves the user's index byte for byte.
	r = sandboxRun(t, context.Background(), root, []fsOp{{Op: "write", Path: "a.txt", Data: "x\n"}}, func(r *hub.Request) { r.Sandbox = sandbox.Worktree }, nil)
	wantBin(t, r.fin, "", "")
	gitIn(t, root, "branch", "-D", "agent-branch")
	if got, _ := os.ReadFile(filepath.Join(dotGit, "index")); string(got) != string(index) {
		t.Error("the user's .git/index was rewritten by a sandboxed run")
	}
}

// TestSandboxHugeFile: a file too large to carry in a diff (sparse: it
// costs no disk) is refused by name, and the run still ends with its
// run.finished.
func TestSandboxHugeFile(t *testing.T) {
	t.Parallel()
	root := sandboxTree(t)
	ops := []fsOp{{Op: "truncate", Path: "huge.bin", Mode: 8 << 10}} // MiB
	r := sandboxRun(t, context.Background(), root, ops, func(r *hub.Request) { r.Apply = true }, nil)
	wantBin(t, r.fin, events.BinPermissionDenied, events.ReasonProtectedPath)
	if !strings.Contains(r.fin.Error.Message, "huge.bin") || !strings.Contains(r.fin.Error.Message, "MiB") {
		t.Errorf("error %q does not name huge.bin as too large", r.fin.Error.Message)
	}
	wantNoSandbox(t, r.sandboxDir(t))
}

// TestSandboxTempInsideCwd: with the temporary directory inside --cwd, the
// copy leaves the sandbox out of itself.
func TestSandboxTempInsideCwd(t *testing.T) {
	t.Parallel()
	root := sandboxTree(t)
	tmp := filepath.Join(root, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	r := sandboxRun(t, context.Background(), root, []fsOp{{Op: "write", Path: "a.txt", Data: "x\n"}}, nil, nil, hub.WithTempDir(tmp))
	wantBin(t, r.fin, "", "")
	if ch := r.changes(); len(ch) != 1 || ch["a.txt"].Change != events.ChangeModified {
		t.Errorf("file.changed = %+v, want a.txt alone", ch)
	}
	wantNoSandbox(t, r.sandboxDir(t))
}

// TestSandboxReplaced: an agent that puts a link to the original in its
// sandbox's place gets nothing applied (the diff would read the original
// as the change), and the run says why.
func TestSandboxReplaced(t *testing.T) {
	t.Parallel()
	root := sandboxTree(t)
	before := hubtest.TreeState(t, root)
	r := sandboxRun(t, context.Background(), root, []fsOp{{Op: "replace-self", Path: root}}, func(r *hub.Request) { r.Apply = true }, nil)
	wantBin(t, r.fin, events.BinPermissionDenied, events.ReasonProtectedPath)
	if !strings.Contains(r.fin.Error.Message, "replaced") {
		t.Errorf("error %q does not say the sandbox was replaced", r.fin.Error.Message)
	}
	if d := hubtest.TreeDiff(before, hubtest.TreeState(t, root)); len(d) > 0 {
		t.Errorf("the original changed: %v", d)
	}
	wantNoSandbox(t, r.sandboxDir(t))
}

// TestSandboxNestedRepo: a repository the agent makes inside a worktree
// sandbox is refused by name, as a .git path, not silently dropped.
func TestSandboxNestedRepo(t *testing.T) {
	t.Parallel()
	root := sandboxRepo(t)
	ops := []fsOp{{Op: "git", Args: "init -q vendor/lib"}, {Op: "write", Path: "vendor/lib/lib.go", Data: "package lib\n"}}
	r := sandboxRun(t, context.Background(), root, ops, func(r *hub.Request) { r.Sandbox = sandbox.Worktree }, nil)
	wantBin(t, r.fin, events.BinPermissionDenied, events.ReasonProtectedPath)
	if !strings.Contains(r.fin.Error.Message, "vendor/lib/.git") {
		t.Errorf("error %q does not name vendor/lib/.git", r.fin.Error.Message)
	}
	wantNoSandbox(t, r.sandboxDir(t))
}

// TestSandboxWorktreeGitState: more of the shared git directory — a
// shallow file, a rebase in progress, remotes, an object rewritten in
// place — is watched: put back, or (an object) named with what to check.
func TestSandboxWorktreeGitState(t *testing.T) {
	t.Parallel()
	root := sandboxRepo(t)
	head := strings.TrimSpace(gitIn(t, root, "rev-parse", "HEAD"))
	blob := strings.TrimSpace(gitIn(t, root, "rev-parse", "HEAD:a.txt"))
	dotGit := filepath.Join(root, ".git")
	object := filepath.Join(dotGit, "objects", blob[:2], blob[2:])
	ops := []fsOp{
		{Op: "write", Path: filepath.Join(dotGit, "shallow"), Data: head + "\n"},
		{Op: "write", Path: filepath.Join(dotGit, "rebase-merge", "git-rebase-todo"), Data: "exec touch /nonexistent/x\n"},
		{Op: "write", Path: filepath.Join(dotGit, "remotes", "origin"), Data: "URL: /evil\n"},
		{Op: "chmod", Path: object, Mode: 0o644},
		{Op: "write", Path: object, Data: "not the object"},
	}
	r := sandboxRun(t, context.Background(), root, ops, func(r *hub.Request) { r.Sandbox = sandbox.Worktree }, nil)
	wantBin(t, r.fin, events.BinPermissionDenied, events.ReasonProtectedPath)
	for _, p := range []string{".git/shallow", ".git/rebase-merge/git-rebase-todo", ".git/remotes/origin", "git fsck"} {
		if !strings.Contains(r.fin.Error.Message, p) {
			t.Errorf("error does not name %s: %s", p, r.fin.Error.Message)
		}
	}
	for _, p := range []string{"shallow", "rebase-merge", "remotes"} {
		if _, err := os.Lstat(filepath.Join(dotGit, p)); err == nil {
			t.Errorf(".git/%s is still there", p)
		}
	}
	wantNoSandbox(t, r.sandboxDir(t))
}
