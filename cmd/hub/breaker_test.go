package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters/adaptertest"
)

// TestQuitSignalStopsAgent: SIGQUIT (Ctrl-\) stops the run like SIGINT —
// exit 130, run.finished cancelled/caller, the agent's tree gone — instead
// of Go's goroutine dump and exit 2 with the agent's tools left running.
func TestQuitSignalStopsAgent(t *testing.T) {
	t.Parallel()
	exe, _ := os.Executable()
	pidfile := filepath.Join(t.TempDir(), "pid")
	bin := fakeAgent(t, `echo $$ > `+pidfile+`
echo '{"type":"step_start","sessionID":"ses_quit","part":{}}'
sleep 300 & wait`)
	cmd := exec.Command(exe, "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--grace", "1s", "x")
	cmd.Env = append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0")
	var out syncBuffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(out.String(), "ses_quit") {
		if cmd.ProcessState != nil {
			t.Fatal("hub exited before the agent's first event")
		}
		time.Sleep(20 * time.Millisecond) // the test's -timeout bounds this
	}
	cmd.Process.Signal(syscall.SIGQUIT)
	err := cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("hub exit = %d (%v), want 130", code, err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"type":"run.finished"`) || !strings.Contains(last, `"bin":"cancelled","reason":"caller"`) {
		t.Errorf("last line = %s, want run.finished cancelled/caller", last)
	}
	if err := adaptertest.ValidateStream([]byte(out.String())); err != nil {
		t.Error(err)
	}
	wantAgentGone(t, pidfile)
}

// TestRawLogExistingFileMadePrivate: --raw-log onto an existing file that
// others can read makes it 0600 before writing the agent's output (which
// holds credentials) into it.
func TestRawLogExistingFileMadePrivate(t *testing.T) {
	raw := filepath.Join(t.TempDir(), "raw.jsonl")
	if err := os.WriteFile(raw, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := hub(t, "", "run", "--agent", "opencode", "--bin", fakeAgent(t, okBody), "--output", "json", "--raw-log", raw, "x")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	fi, err := os.Stat(raw)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("--raw-log file mode = %v, want 0600", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(raw); !strings.Contains(string(b), "the answer") || strings.Contains(string(b), "old") {
		t.Errorf("--raw-log holds %q, want the agent's output only", b)
	}
}
