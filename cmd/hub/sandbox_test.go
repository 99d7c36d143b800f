package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/hubcli/hub/events"
)

// TestSandboxFlags: the sandbox's flags without a sandbox, a mode that is
// none and a glob that is none are usage errors naming the flag.
func TestSandboxFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--apply"},
		{"--protect", "x/**"},
		{"--diff-out", filepath.Join(t.TempDir(), "d")},
		{"--keep-sandbox"},
		{"--sandbox", "tmpfs"},
		{"--sandbox", "copy", "--protect", "[x"},
		{"--sandbox", "copy", "--protect", "/abs/**"},
	} {
		code, _, stderr := hubCLI(t, "", append(append([]string{"run", "--agent", "opencode"}, args...), "x")...)
		if code != 2 || !strings.Contains(stderr, args[0]) && !strings.Contains(stderr, args[len(args)-1]) {
			t.Errorf("%q: exit %d, stderr %q; want 2 naming the flag", args, code, stderr)
		}
	}
}

// sandboxAgent is a fake agent that edits its working directory: a.txt
// rewritten, new.txt added, then answers.
const sandboxAgentBody = "printf 'one\\nTWO\\n' > a.txt\necho new > new.txt\n" + okBody

func sandboxOriginal(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestSandboxDiffOutThenApply: a sandboxed run leaves the original alone,
// --diff-out saves the whole change (mode 0600), and hub apply applies it
// once; applied again it is a conflict (exit 5) and changes nothing.
func TestSandboxDiffOutThenApply(t *testing.T) {
	root := sandboxOriginal(t)
	out := filepath.Join(t.TempDir(), "change.diff")
	bin := fakeAgent(t, sandboxAgentBody)
	code, stdout, stderr := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--cwd", root, "--sandbox", "copy", "--diff-out", out, "--output", "jsonl", "x")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := readFile(t, filepath.Join(root, "a.txt")); got != "one\ntwo\n" {
		t.Errorf("the original's a.txt = %q after a run without --apply", got)
	}
	if _, err := os.Lstat(filepath.Join(root, "new.txt")); err == nil {
		t.Error("new.txt reached the original without --apply")
	}
	fin := lastEvent(t, stdout)
	diff := readFile(t, out)
	if fin.Diff == nil || *fin.Diff != diff || !strings.Contains(diff, "+TWO") || !strings.Contains(diff, "b/new.txt") {
		t.Fatalf("--diff-out %q, run.finished.diff %v: want the same diff of a.txt and new.txt", diff, fin.Diff)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("--diff-out mode = %v, want 0600", fi.Mode())
	}
	for _, want := range []string{`"type":"file.changed"`, `"path":"a.txt","change":"modified"`, `"path":"new.txt","change":"added"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("events lack %s", want)
		}
	}
	code, stdout, stderr = hubCLI(t, "", "apply", "--cwd", root, out)
	if code != 0 || !strings.Contains(stdout, "modified a.txt") || !strings.Contains(stdout, "added new.txt") {
		t.Fatalf("hub apply: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if got := readFile(t, filepath.Join(root, "a.txt")); got != "one\nTWO\n" {
		t.Errorf("a.txt = %q after hub apply", got)
	}
	code, _, stderr = hubCLI(t, "", "apply", "--cwd", root, out)
	if code != 5 || !strings.Contains(stderr, "invalid_input/conflict") || !strings.Contains(stderr, "new.txt") {
		t.Errorf("hub apply twice: exit %d, stderr %q; want 5, a conflict naming new.txt", code, stderr)
	}
	if got := readFile(t, filepath.Join(root, "a.txt")); got != "one\nTWO\n" {
		t.Errorf("a.txt = %q after a refused apply", got)
	}
}

// TestApplyRefuses: hub apply of a diff it must not apply writes nothing.
func TestApplyRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, diff string
		code       int
		says       string
	}{
		{"garbage", "not a diff\x00\x01", 5, "invalid_input/bad_request"},
		{"git dir", "diff --git a/.git/config b/.git/config\nnew file mode 100644\n--- /dev/null\n+++ b/.git/config\n@@ -0,0 +1 @@\n+[core]\n", 6, "permission_denied/protected_path"},
		{"dotdot", "diff --git a/../x b/../x\nnew file mode 100644\n--- /dev/null\n+++ b/../x\n@@ -0,0 +1 @@\n+x\n", 6, "outside the root"},
		{"stale hunk", "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-three\n+four\n", 5, "invalid_input/conflict"},
		{"broken hunk", "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,9 +1,2 @@\n one\n", 5, "invalid_input/bad_request"},
		// Hand-made diffs that would touch a path unchecked.
		{"two names, no rename", "diff --git a/a.txt b/x.txt\n--- a/a.txt\n+++ b/x.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+TWO\n", 5, "no rename"},
		{"added twice", "diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+1\ndiff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+2\n", 5, "changed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := sandboxOriginal(t)
			p := filepath.Join(t.TempDir(), "d.diff")
			if err := os.WriteFile(p, []byte(tc.diff), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := hubCLI(t, "", "apply", "--cwd", root, p)
			if code != tc.code || !strings.Contains(stderr, tc.says) {
				t.Errorf("exit %d, stderr %q; want %d saying %q", code, stderr, tc.code, tc.says)
			}
			if got := readFile(t, filepath.Join(root, "a.txt")); got != "one\ntwo\n" {
				t.Errorf("a.txt = %q", got)
			}
			if ents, _ := os.ReadDir(root); len(ents) != 1 {
				t.Errorf("the tree holds %d entries, want a.txt alone", len(ents))
			}
		})
	}
}

// TestSandboxApplyConfirm: with --confirm, --apply shows the diff on the
// terminal and applies it only after a y.
func TestSandboxApplyConfirm(t *testing.T) {
	for _, answer := range []string{"y", "n"} {
		t.Run(answer, func(t *testing.T) {
			root := sandboxOriginal(t)
			bin := fakeAgent(t, sandboxAgentBody)
			ptmx, tty, err := pty.Open()
			if err != nil {
				t.Skipf("no pseudo terminal here: %v", err)
			}
			defer ptmx.Close()
			h := startHubWith(t, tty, &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0},
				"run", "--agent", "opencode", "--bin", bin, "--cwd", root, "--output", "jsonl", "--confirm",
				"--permission", "workspace-write", "--sandbox", "copy", "--apply", "x")
			tty.Close()
			if asked := readUntil(t, ptmx, "Run it? [y/N] "); !strings.Contains(asked, "sandbox:") || !strings.Contains(asked, "applied only after you approve it") {
				t.Errorf("the grant %q does not say the run is sandboxed", asked)
			}
			if _, err := ptmx.WriteString("y\n"); err != nil {
				t.Fatal(err)
			}
			asked := readUntil(t, ptmx, "Apply it? [y/N] ")
			for _, want := range []string{"+TWO", "b/new.txt", "2 path(s)"} {
				if !strings.Contains(asked, want) {
					t.Errorf("question %q lacks %q", asked, want)
				}
			}
			if _, err := ptmx.WriteString(answer + "\n"); err != nil {
				t.Fatal(err)
			}
			h.wait(t, time.Minute)
			code := h.cmd.ProcessState.ExitCode()
			got := readFile(t, filepath.Join(root, "a.txt"))
			fin := lastEvent(t, h.stdout.String())
			switch {
			case answer == "y" && (code != 0 || got != "one\nTWO\n" || fin.Applied == nil || !*fin.Applied):
				t.Errorf("answered y: exit %d, a.txt %q, applied %v; stderr %s", code, got, fin.Applied, h.stderr.String())
			case answer == "n" && (code != 6 || got != "one\ntwo\n" || fin.Error == nil || fin.Error.Reason != events.ReasonConfirmationRequired):
				t.Errorf("answered n: exit %d, a.txt %q, error %+v; want 6 and nothing applied", code, got, fin.Error)
			}
		})
	}
}

// TestSandboxText: text output names each changed path on a line of its
// own and says whether the change was applied.
func TestSandboxText(t *testing.T) {
	root := sandboxOriginal(t)
	bin := fakeAgent(t, sandboxAgentBody)
	code, _, stderr := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--cwd", root, "--sandbox", "copy", "--apply", "x")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"± a.txt modified\n", "± new.txt added\n", "change applied"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
}

// TestApplyWorktreeDiffFromSubdir: a worktree sandbox's diff is relative
// to the repository's top level; hub apply run in a subdirectory (no
// --cwd) applies it there, as git apply does, not below the subdirectory.
func TestApplyWorktreeDiffFromSubdir(t *testing.T) {
	root := sandboxOriginal(t)
	sub := filepath.Join(root, "src")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "x.go"), []byte("package x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	out := filepath.Join(t.TempDir(), "wt.diff")
	bin := fakeAgent(t, "echo new > new.go\n"+okBody)
	if code, _, stderr := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--cwd", sub, "--sandbox", "worktree", "--diff-out", out, "x"); code != 0 {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "apply", out)
	cmd.Dir = sub
	cmd.Env = append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0")
	if b, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(b), "added src/new.go") {
		t.Fatalf("hub apply in src/: %v: %s", err, b)
	}
	if got := readFile(t, filepath.Join(sub, "new.go")); got != "new\n" {
		t.Errorf("src/new.go = %q, want the agent's file", got)
	}
	if _, err := os.Lstat(filepath.Join(sub, "src")); err == nil {
		t.Error("the diff was applied below src/ (src/src/new.go)")
	}
}
