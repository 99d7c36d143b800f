package proc

import (
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func launch(t *testing.T, script string, grace time.Duration) *Supervisor {
	t.Helper()
	marker := "HUB_TEST_MARK=" + strconv.Itoa(os.Getpid()) + "-" + t.Name()
	s, err := Launch(Spec{Path: "/bin/sh", Args: []string{"-c", script}, Env: append(os.Environ(), marker), Marker: marker, Grace: grace})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readLine reads one line of the process's stdout, a byte at a time so that
// nothing after it is consumed.
func readLine(t *testing.T, r io.Reader) string {
	t.Helper()
	var line []byte
	b := make([]byte, 1)
	for {
		if _, err := r.Read(b); err != nil {
			t.Fatalf("stdout after %q: %v", line, err)
		}
		if b[0] == '\n' {
			return string(line)
		}
		line = append(line, b[0])
	}
}

// readPID reads the first line of the process's stdout as a pid.
func readPID(t *testing.T, r io.Reader) int {
	t.Helper()
	line := readLine(t, r)
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("stdout %q: want a pid", line)
	}
	return pid
}

// gone reports whether pid is dead: no such process, or a zombie (an
// orphan's zombie is init's to reap, and init in a container may not).
func gone(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) || !Running(pid) }

// TestSupervisorStopsTree: Stop reaches a descendant in a session of its own
// that ignores SIGTERM; after the grace period it is SIGKILLed, and Wait
// returns only when it is gone, with the stop's cause.
func TestSupervisorStopsTree(t *testing.T) {
	t.Parallel()
	s := launch(t, `setsid sh -c 'trap "" TERM; echo $$; exec sleep 60' & wait`, 200*time.Millisecond)
	child := readPID(t, s.Stdout())
	time.Sleep(SnapshotEvery + 200*time.Millisecond) // one snapshot records the child
	cause := errors.New("test stop")
	s.Stop(cause)
	s.Stop(errors.New("second cause is ignored"))
	_, _ = io.Copy(io.Discard, s.Stdout())
	exit := s.Wait()
	if exit.Cause != cause {
		t.Errorf("Exit.Cause = %v, want %v", exit.Cause, cause)
	}
	if !s.Stopped() {
		t.Errorf("Stopped() = false after a stop")
	}
	if exit.Signal != "SIGTERM" {
		t.Errorf("Exit.Signal = %q, want SIGTERM (sh dies of it)", exit.Signal)
	}
	if !gone(child) {
		t.Errorf("descendant %d in its own session is still alive after Wait", child)
	}
}

// TestSupervisorKillSkipsGrace: Kill during a Stop's grace period SIGKILLs
// at once, with the first cause kept.
func TestSupervisorKillSkipsGrace(t *testing.T) {
	t.Parallel()
	grace := time.Minute
	s := launch(t, `trap "" TERM; echo $$; while :; do sleep 1; done`, grace)
	readPID(t, s.Stdout())
	first := errors.New("stop")
	start := time.Now()
	s.Stop(first)
	s.Kill(errors.New("kill"))
	_, _ = io.Copy(io.Discard, s.Stdout())
	exit := s.Wait()
	if took := time.Since(start); took >= grace {
		t.Errorf("Wait after Kill took %s, want well under the %s grace", took, grace)
	}
	if exit.Signal != "SIGKILL" || exit.Cause != first {
		t.Errorf("Exit = %+v, want SIGKILL with the first cause", exit)
	}
}

// TestSupervisorExitOnItsOwn: a process that exits by itself has its status,
// its stderr tail and no cause; a Stop after that is a no-op.
func TestSupervisorExitOnItsOwn(t *testing.T) {
	t.Parallel()
	s := launch(t, `echo out; echo boom >&2; exit 3`, time.Second)
	out, _ := io.ReadAll(s.Stdout())
	<-s.Exited()
	s.Stop(errors.New("late"))
	exit := s.Wait()
	if string(out) != "out\n" || exit.Code == nil || *exit.Code != 3 || exit.Signal != "" || exit.Cause != nil || exit.Stderr != "boom\n" {
		t.Errorf("stdout %q, Exit %+v (code %v), want out, exit 3, stderr boom, no cause", out, exit, exit.Code)
	}
	if s.Stopped() {
		t.Errorf("Stopped() = true for a process that exited before the stop")
	}
}

// TestSupervisorCaughtSignal: a process that catches SIGTERM and exits
// 128+15 is reported as ended by SIGTERM, as hub sent it.
func TestSupervisorCaughtSignal(t *testing.T) {
	t.Parallel()
	s := launch(t, `trap "exit 143" TERM; echo ready; while :; do sleep 0.1; done`, time.Minute)
	readLine(t, s.Stdout()) // "ready": the trap is set
	s.Stop(errors.New("stop"))
	_, _ = io.Copy(io.Discard, s.Stdout())
	exit := s.Wait()
	if exit.Signal != "SIGTERM" || exit.Code == nil || *exit.Code != 143 {
		t.Errorf("Exit = %+v, want code 143 reported as SIGTERM", exit)
	}
}

// TestSupervisorDetachedWriter: a grandchild that keeps stdout open does not
// hold Wait past the leader's exit, and is killed: it left the tree before
// any snapshot, but carries the marker.
func TestSupervisorDetachedWriter(t *testing.T) {
	t.Parallel()
	s := launch(t, `setsid sh -c 'echo $$; while :; do echo tick; sleep 0.05; done' & sleep 0.2; exit 0`, time.Second)
	child := readPID(t, s.Stdout())
	done := make(chan Exit, 1)
	go func() {
		_, _ = io.Copy(io.Discard, s.Stdout())
		done <- s.Wait()
	}()
	select {
	case exit := <-done:
		if exit.Code == nil || *exit.Code != 0 {
			t.Errorf("Exit = %+v, want status 0", exit)
		}
	case <-time.After(time.Minute):
		t.Fatal("Wait still blocked a minute after the leader exited")
	}
	if !gone(child) {
		t.Errorf("detached writer %d is still alive after Wait", child)
	}
}
