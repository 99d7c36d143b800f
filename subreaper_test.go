package hub_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/proc"
)

// TestOrphansConcurrent: a library caller that is not a child subreaper
// runs eight runs at once, each of whose agents leaves a double-forked
// daemon that ignores SIGTERM and, in every other run, clears its
// environment; half of them answer late. Every run ends ok and every daemon
// is gone: each run's guard holds its own tree, whatever the daemon did,
// and no process is left below the caller.
func TestOrphansConcurrent(t *testing.T) {
	t.Parallel()
	const runs = 8
	dir := t.TempDir()
	var wg sync.WaitGroup
	fins := make([]events.RunFinished, runs)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := []string{"HUB_FAKE_PIDFILE=" + filepath.Join(dir, strconv.Itoa(i))}
			if i%2 == 1 {
				env = append(env, "HUB_FAKE_DELAY=1500ms", "HUB_FAKE_CLEARENV=1")
			}
			res := runFake(t, t.Context(), "tool-daemon", func(r *hub.Request) {
				r.Env = append(r.Env, env...)
				r.Limits.Grace = 200 * time.Millisecond
			})
			fins[i] = res.fin
		}()
	}
	wg.Wait()
	for i, fin := range fins {
		if !fin.OK {
			t.Errorf("run %d: ok=false, %v", i, fin.Error)
		}
		wantGone(t, filepath.Join(dir, strconv.Itoa(i)))
	}
}

// wantGone reads the pid a fake agent's daemon wrote to pidfile and fails
// t unless that process no longer exists.
func wantGone(t *testing.T, pidfile string) {
	t.Helper()
	b, err := os.ReadFile(pidfile)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || perr != nil || pid <= 0 {
		t.Errorf("daemon pid file %q: %v %v", b, err, perr)
		return
	}
	// ESRCH: gone and waited for (a zombie would still answer).
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("daemon %d still exists after the run (kill 0: %v; running: %v)", pid, err, proc.Running(pid))
	}
}

// asSubreaper runs t in a new process of this test binary that is a child
// subreaper (HUB_TEST_SUBREAPER=1), so the setting reaches no other test: it
// reports true in that process, after BecomeSubreaper, and false in this
// one, after the other passed (else t fails).
func asSubreaper(t *testing.T) bool {
	t.Helper()
	if os.Getenv("HUB_TEST_SUBREAPER") != "" {
		if err := hub.BecomeSubreaper(); err != nil {
			t.Fatalf("PR_SET_CHILD_SUBREAPER: %v", err)
		}
		return true
	}
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v")
	cmd.Env = append(os.Environ(), "HUB_TEST_SUBREAPER=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("subreaper process: %v\n%s", err, out)
	}
	return false
}

func describe(pids []int) string {
	var b strings.Builder
	for _, pid := range pids {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		fmt.Fprintf(&b, "%d %q; ", pid, strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return b.String()
}

// TestReapOrphansGuardKilled: with WithOrphans (a child subreaper that
// runs nothing but hub's runs: the hub CLI), an agent that leaves a daemon
// which cleared its environment and then SIGKILLs its own guard — the one
// way out of the guard — dies with the guard, and the daemon, re-parented
// to the caller, is killed and reaped when the run ends. Run in a process of
// its own (asSubreaper).
func TestReapOrphansGuardKilled(t *testing.T) {
	if !asSubreaper(t) {
		return
	}
	pidfile := filepath.Join(t.TempDir(), "daemon")
	res := runFake(t, t.Context(), "tool-daemon", func(r *hub.Request) {
		r.Env = append(r.Env, "HUB_FAKE_PIDFILE="+pidfile, "HUB_FAKE_CLEARENV=1", "HUB_FAKE_KILLGUARD=1")
	}, hub.WithOrphans())
	if res.fin.OK || res.fin.Signal == nil || *res.fin.Signal != "SIGKILL" {
		t.Errorf("run.finished ok=%v signal=%v error=%v, want a failed run ended by SIGKILL", res.fin.OK, res.fin.Signal, res.fin.Error)
	}
	wantGone(t, pidfile)
	if left := proc.Descendants(os.Getpid()); len(left) > 0 {
		t.Errorf("processes left below the caller: %v", describe(left))
	}
}
