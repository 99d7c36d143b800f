package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/hubtest/fakeagent"
	"github.com/hubcli/hub/internal/proc"
)

// grandchildGone fails t unless the grandchild whose pid the fake agent
// wrote in the run's directory is gone, and no process is left in the
// agent's process group.
func grandchildGone(t *testing.T, r *hubRun) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, "grandchild.pid"))
	pid, _ := strconv.Atoi(string(b))
	if err != nil || pid <= 0 {
		t.Fatalf("the fake agent wrote no grandchild pid: %q %v", b, err)
	}
	if proc.Running(pid) {
		t.Errorf("grandchild %d, which held the terminal and ignored SIGTERM and SIGHUP, outlived hub", pid)
	}
	if p := r.events[0].PID; p == nil || syscall.Kill(-*p, 0) != syscall.ESRCH {
		t.Errorf("the agent's process group %v still has processes after hub exited", p)
	}
}

// TestTTY: `hub run --tty` runs the agent on a terminal, for each dialect.
// The fake agent (fault tty) checks that its stdout and stderr are
// terminals and stdin is not, writes "\r\n" line ends (which the
// terminal's ONLCR makes "\r\r\n"), draws a spinner on stderr, ignores
// SIGTERM and leaves a grandchild that holds the terminal and ignores
// SIGTERM and SIGHUP. The run is ok with the answer naming the 400-column
// window, the raw log holds the bytes as the agent wrote them, and the
// grandchild is gone when hub exits. Without --tty the same agent fails.
func TestTTY(t *testing.T) {
	t.Parallel()
	answer := fakeagent.TTYAnswer(proc.TTYCols, proc.TTYRows)
	for _, d := range fakeagent.Dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			raw := filepath.Join(t.TempDir(), "raw.log")
			r := runHub(t, d, "tty", runOpts{args: []string{"--tty", "--raw-log", raw}})
			wantOK(t, r, answer)
			wantAnswerEvents(t, d, r, answer)
			wantNotices(t, r, nil, "stderr", "cost_unknown")
			grandchildGone(t, r)
			b, err := os.ReadFile(raw)
			if err != nil {
				t.Fatal(err)
			}
			lines := bytes.SplitAfter(b, []byte("\n"))
			if len(lines) < 3 || len(lines[len(lines)-1]) != 0 {
				t.Fatalf("raw log = %q, want whole lines", b)
			}
			for _, l := range lines[:len(lines)-1] {
				if !bytes.HasSuffix(l, []byte("}\r\n")) {
					t.Errorf("raw log line %q does not end as the agent wrote it (\"}\\r\\n\")", l)
				}
			}
			if !bytes.Contains(b, []byte(answer)) {
				t.Errorf("raw log holds no answer %q", answer)
			}
		})
		t.Run(d+"/without", func(t *testing.T) {
			t.Parallel()
			r := runHub(t, d, "tty", runOpts{})
			if r.fin.OK || r.fin.ExitCode == nil || *r.fin.ExitCode != fakeagent.TTYMissing {
				t.Errorf("without --tty: run.finished ok=%v exit_code=%v, want the fake agent's exit %d (no terminal)", r.fin.OK, r.fin.ExitCode, fakeagent.TTYMissing)
			}
		})
	}
}

// TestTTYTimeout: --timeout stops an agent on a terminal that ignores
// SIGTERM and hangs, with a grandchild holding the terminal: the run ends
// timeout/wall (exit 8) within the timeout, the grace period and
// hub.StopWait, and nothing of the tree is left.
func TestTTYTimeout(t *testing.T) {
	t.Parallel()
	const grace = 500 * time.Millisecond
	for _, d := range fakeagent.Dialects() {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			// A --timeout that ran out before the agent got to its hang
			// (its grandchild started, session.started written: a busy
			// machine) tested nothing: hubtest.Retry runs it again, twice
			// as long.
			hubtest.Retry(t, 2*time.Second, func(timeout time.Duration) bool {
				r := runHub(t, d, "tty-hang", runOpts{args: []string{"--tty", "--timeout", timeout.String(), "--grace", grace.String()}})
				if _, err := os.Stat(filepath.Join(r.dir, "grandchild.pid")); err != nil || len(r.of("session.started")) == 0 {
					return false
				}
				wantErr(t, r, "timeout", "wall", 8)
				if r.fin.Signal == nil || *r.fin.Signal != "SIGKILL" {
					t.Errorf("run.finished signal = %v, want SIGKILL (the agent ignores SIGTERM)", r.fin.Signal)
				}
				grandchildGone(t, r)
				if len(r.of("session.started")) != 1 {
					t.Errorf("%d session.started events, want the one the agent wrote before it hung", len(r.of("session.started")))
				}
				if bound := timeout + grace + hub.StopWait; r.took < timeout || r.took > bound {
					t.Errorf("hub ran %s, want between --timeout %s and %s (+ --grace, hub.StopWait)", r.took, timeout, bound)
				}
				if strings.Contains(string(r.stderr), "panic") {
					t.Errorf("hub's stderr: %s", r.stderr)
				}
				return true
			})
		})
	}
}
