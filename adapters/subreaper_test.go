package adapters_test

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

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/proc"
)

// TestReapOrphansConcurrent: a library caller that is a child subreaper runs
// eight runs at once with WithOrphans, each of whose agents leaves a
// double-forked daemon (re-parented to the caller) and half of which answer
// late. Every run ends ok — a run taking its orphans never takes another
// run's agent, which is also the caller's child — and every daemon is killed
// and waited for: no process and no zombie is left below the caller.
//
// The caller is this test binary run again in a process of its own
// (HUB_TEST_SUBREAPER=1), so the subreaper setting does not reach other
// tests.
func TestReapOrphansConcurrent(t *testing.T) {
	if !asSubreaper(t) {
		return
	}
	const runs = 8
	dir := t.TempDir()
	var wg sync.WaitGroup
	fins := make([]events.RunFinished, runs)
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			delay := "0s"
			if i%2 == 1 {
				delay = "1500ms"
			}
			res := runFake(t, t.Context(), "tool-daemon", func(r *adapters.Request) {
				r.Env = append(r.Env, "HUB_FAKE_PIDFILE="+filepath.Join(dir, strconv.Itoa(i)), "HUB_FAKE_DELAY="+delay)
			}, adapters.WithOrphans(false))
			fins[i] = res.fin
		}()
	}
	wg.Wait()
	for i, fin := range fins {
		if !fin.OK {
			t.Errorf("run %d: ok=false, %v: a concurrent run's orphan reaping stopped it", i, fin.Error)
		}
		b, err := os.ReadFile(filepath.Join(dir, strconv.Itoa(i)))
		pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || perr != nil || pid <= 0 {
			t.Errorf("run %d: daemon pid file %q: %v %v", i, b, err, perr)
			continue
		}
		// ESRCH: gone and waited for (a zombie would still answer).
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("run %d: daemon %d still exists (kill 0: %v; running: %v)", i, pid, err, proc.Running(pid))
		}
	}
	if left := proc.Descendants(os.Getpid()); len(left) > 0 {
		t.Errorf("processes left below the caller: %v", describe(left))
	}
}

// asSubreaper runs t in a new process of this test binary that is a child
// subreaper (HUB_TEST_SUBREAPER=1), so the setting reaches no other test: it
// reports true in that process, after BecomeSubreaper, and false in this
// one, after the other passed (else t fails).
func asSubreaper(t *testing.T) bool {
	t.Helper()
	if os.Getenv("HUB_TEST_SUBREAPER") != "" {
		if err := adapters.BecomeSubreaper(); err != nil {
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

// TestReapOrphansSole: with WithOrphans(true) (the caller runs no other
// children: the hub CLI), a daemon the agent's tool detached is the run's
// even when it cleared its environment, so no marker names it: it is killed
// and waited for when the run ends. Run in a process of its own, as
// TestReapOrphansConcurrent is.
func TestReapOrphansSole(t *testing.T) {
	if !asSubreaper(t) {
		return
	}
	pidfile := filepath.Join(t.TempDir(), "daemon")
	res := runFake(t, t.Context(), "tool-daemon", func(r *adapters.Request) {
		r.Env = append(r.Env, "HUB_FAKE_PIDFILE="+pidfile, "HUB_FAKE_CLEARENV=1")
	}, adapters.WithOrphans(true))
	if !res.fin.OK {
		t.Fatalf("run.finished ok=false: %v", res.fin.Error)
	}
	b, err := os.ReadFile(pidfile)
	pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || perr != nil || pid <= 0 {
		t.Fatalf("daemon pid file %q: %v %v", b, err, perr)
	}
	if env, err := os.ReadFile(pidfile + ".env"); err != nil || strings.Contains(string(env), "HUB_RUN_MARK=") {
		t.Fatalf("daemon's environment %q (%v): want it without the run's marker, or the test tests nothing", env, err)
	}
	// ESRCH: gone and waited for (a zombie would still answer).
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("daemon %d that cleared its environment still exists after the run (kill 0: %v; running: %v)", pid, err, proc.Running(pid))
	}
	if left := proc.Descendants(os.Getpid()); len(left) > 0 {
		t.Errorf("processes left below the caller: %v", describe(left))
	}
}
