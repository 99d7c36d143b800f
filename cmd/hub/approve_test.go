package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/mockllm"
)

// TestApproveTTY (issue 36): hub run --approve tty in a real terminal (a
// tmux pane), real Codex against the mock server, read-only: its patch
// adding a file is asked about on the terminal, with the path and the new
// content; y puts the file on disk, n leaves it out and the run goes on,
// q stops the run (permission_denied, exit 6).
func TestApproveTTY(t *testing.T) {
	bin := hubtest.Bin(t, "codex")
	srv, err := mockllm.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close) // after the parallel subtests
	for _, c := range []struct {
		answer string
		onDisk bool
		exit   string
	}{{"y", true, "HUB-EXIT=0"}, {"n", false, "HUB-EXIT=0"}, {"q", false, "HUB-EXIT=6"}} {
		t.Run(c.answer, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			project := filepath.Join(dir, "project")
			if err := os.MkdirAll(project, 0o755); err != nil {
				t.Fatal(err)
			}
			prompt := `write it MOCK_CALL apply_patch *** Begin Patch\n*** Add File: asked.txt\n+approved content\n*** End Patch`
			p := startInTmux(t, mockEnv(t, "codex", srv, filepath.Join(dir, "env")),
				"run", "--agent", "codex", "--bin", bin, "--cwd", project, "--approve", "tty", "--timeout", "5m", "--", prompt)
			screen := p.waitScreen(3*time.Minute, "the approval question", func(s string) bool { return strings.Contains(s, "[q]uit") })
			for _, want := range []string{"codex asks to call file_change (write)", "asked.txt", "approved content"} {
				if !strings.Contains(screen, want) {
					t.Errorf("the question lacks %q:\n%s", want, screen)
				}
			}
			if out, err := p.tmux("send-keys", "-t", "hub", c.answer, "Enter"); err != nil {
				t.Fatalf("send-keys: %v: %s", err, out)
			}
			screen = p.waitScreen(3*time.Minute, "hub's exit", func(s string) bool { return strings.Contains(s, "HUB-EXIT=") })
			if !strings.Contains(screen, c.exit) {
				t.Errorf("answered %s: want %s:\n%s", c.answer, c.exit, screen)
			}
			b, err := os.ReadFile(filepath.Join(project, "asked.txt"))
			if (err == nil) != c.onDisk || c.onDisk && strings.TrimSpace(string(b)) != "approved content" {
				t.Errorf("answered %s: asked.txt on disk %v (%q), want %v", c.answer, err == nil, b, c.onDisk)
			}
		})
	}
}

// TestApproveRefused: an unknown mode, editor outside hub acp, tty in hub
// acp (no terminal there) and --schema with an approver are usage errors (exit 2) before
// anything starts. (Every registered agent's CLI can ask now; one that
// cannot is refused by hub.CanApprove, TestApproverRefusedAgent.)
func TestApproveRefused(t *testing.T) {
	for _, args := range [][]string{
		{"acp", "--agent", "opencode", "--approve", "tty"},
		{"run", "--agent", "claude", "--approve", "maybe", "x"},
		{"run", "--agent", "claude", "--approve", "editor", "x"},
		{"run", "--agent", "codex", "--approve", "deny", "--schema", "s.json", "x"},
	} {
		code, _, stderr := hubCLI(t, "", args...)
		if code != 2 || !strings.Contains(stderr, "--approve") {
			t.Errorf("hub %s: exit %d, stderr %q; want 2 naming --approve", strings.Join(args, " "), code, stderr)
		}
	}
}

// TestChatApproveTTY: hub chat --approve tty on a terminal, real Codex
// against the mock server, read-only: the patch adding a file is asked
// about in the conversation, one key the answer. y puts the file on disk;
// a Ctrl-C at the question denies the call (its file stays off the disk)
// and interrupts the turn. The session goes on to a second turn either
// way, and Ctrl-D at the prompt ends it, exit 0.
func TestChatApproveTTY(t *testing.T) {
	bin := hubtest.Bin(t, "codex")
	srv, err := mockllm.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close) // after the parallel subtests
	for _, c := range []struct {
		name, key string
		onDisk    bool
	}{
		// y with the next prompt typed right after it, in one write: the
		// keys after the answer are the next prompt's (the breaker's
		// quick Ctrl-D was lost so).
		{"y", "yand now MOCK_TEXT\r", true},
		{"ctrl-c", "\x03", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			project := filepath.Join(dir, "project")
			if err := os.MkdirAll(project, 0o755); err != nil {
				t.Fatal(err)
			}
			prompt := `write it MOCK_CALL apply_patch *** Begin Patch\n*** Add File: asked.txt\n+approved content\n*** End Patch`
			h := startTerminalHub(t, mockEnv(t, "codex", srv, filepath.Join(dir, "env")),
				"chat", "--agent", "codex", "--bin", bin, "--cwd", project, "--approve", "tty", "--timeout", "5m", "--", prompt)
			at := h.waitFor(0, "[q]uit")
			h.keys(c.key)
			at = h.waitFor(at, "── turn 1 ")
			at = h.waitFor(at, chatPrompt)
			b, err := os.ReadFile(filepath.Join(project, "asked.txt"))
			if (err == nil) != c.onDisk || c.onDisk && strings.TrimSpace(string(b)) != "approved content" {
				t.Errorf("answered %s: asked.txt on disk %v (%q), want %v", c.name, err == nil, b, c.onDisk)
			}
			if !c.onDisk {
				h.keys("and now MOCK_TEXT\r")
			}
			at = h.waitFor(at, "── turn 2 · ")
			at = h.waitFor(at, chatPrompt)
			h.keys("\x04")
			h.waitFor(at, "── ok · ")
			if code := h.exitCode(); code != 0 {
				t.Errorf("exit %d, want 0; the terminal shows:\n%s", code, h.output())
			}
			out := h.output()
			if want := map[bool]string{true: "file_change allow (tty", false: "file_change deny (tty"}[c.onDisk]; !strings.Contains(out, want) {
				t.Errorf("the terminal does not show %q:\n%s", want, out)
			}
		})
	}
}
