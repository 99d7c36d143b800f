package proc

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// reportAfterEnv makes a guard of this test binary wait, after starting the
// process and before reporting it, until the file it names exists: the
// process then always acts on its guard first, as it may on a busy machine
// where the guard has not run since the fork.
const reportAfterEnv = "HUB_PROC_TEST_REPORT_AFTER"

// Set before any init function runs (package variables first), so before
// the guard's own init takes over the process.
var _ = func() bool {
	if f := os.Getenv(reportAfterEnv); f != "" {
		beforeReport = func() {
			for {
				if _, err := os.Stat(f); err == nil {
					return
				}
				time.Sleep(time.Millisecond)
			}
		}
	}
	return true
}()

// TestGuardStoppedBeforeReport: the process SIGSTOPs its guard before the
// guard has reported it. Launch returns the process's pid long before
// guardStartWait (the run's limits then apply), and Stop ends the whole tree:
// once with a guard stopped once (SIGCONT lets it report and act), once with
// a helper that keeps stopping it (hub takes over). Without the fix, Launch
// waited guardStartWait (30 s) whatever the run's --timeout, and the
// harness of cmd/hub's TestBreakerGuardStopped SIGKILLed hub while the
// guard was still stopped, leaving the tree behind.
func TestGuardStoppedBeforeReport(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, script string
	}{
		{"stop once", `echo $$ > "$DIR/agent"; kill -STOP $PPID; touch "$DIR/go"; exec sleep 300`},
		{"keep stopped", `echo $$ > "$DIR/agent"
g=$PPID
sh -c 'trap "" TERM; echo $$ > "$DIR/stopper"; while :; do kill -STOP '$g' 2>/dev/null; done' &
while [ ! -s "$DIR/stopper" ]; do :; done
touch "$DIR/go"; exec sleep 300`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			env := append(os.Environ(), "DIR="+dir, reportAfterEnv+"="+filepath.Join(dir, "go"))
			began := time.Now()
			s, err := Launch(Spec{Path: "/bin/sh", Args: []string{"-c", tc.script}, Env: env, Grace: 100 * time.Millisecond})
			if err != nil {
				t.Fatalf("Launch: %v", err)
			}
			if took := time.Since(began); took >= guardStartWait {
				t.Errorf("Launch took %s, the whole of guardStartWait", took)
			}
			agent := readPIDFile(t, filepath.Join(dir, "agent"))
			if s.PID() != agent {
				t.Errorf("PID() = %d, want the process's %d", s.PID(), agent)
			}
			cause := errors.New("test stop")
			s.Stop(cause)
			_, _ = io.Copy(io.Discard, s.Stdout())
			exit := s.Wait()
			if exit.Cause != cause {
				t.Errorf("Exit.Cause = %v, want %v", exit.Cause, cause)
			}
			pids := []int{agent}
			if _, err := os.Stat(filepath.Join(dir, "stopper")); err == nil {
				pids = append(pids, readPIDFile(t, filepath.Join(dir, "stopper")))
			}
			for _, pid := range pids {
				if !gone(pid) {
					t.Errorf("process %d outlived Wait", pid)
				}
			}
		})
	}
}

// readPIDFile reads a pid a script wrote into path, waiting for it to be
// written (the file is created before the write).
func readPIDFile(t *testing.T, path string) int {
	t.Helper()
	for {
		b, err := os.ReadFile(path)
		if err == nil && len(b) > 0 && b[len(b)-1] == '\n' {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			return readPID(t, f)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
