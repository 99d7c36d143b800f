package proc

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func launch(t *testing.T, script string, grace time.Duration) *Supervisor {
	t.Helper()
	s, err := Launch(Spec{Path: "/bin/sh", Args: []string{"-c", script}, Env: os.Environ(), Grace: grace})
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
// hold Wait past the leader's exit, and is killed.
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

// TestSupervisorOrphanClearedEnv: a process that clears its environment and
// double-forks (re-parented, no trace of the run on it) is still below the
// guard and gone after Wait, although the leader exited on its own.
func TestSupervisorOrphanClearedEnv(t *testing.T) {
	t.Parallel()
	s := launch(t, `( env -i /bin/sh -c 'echo $$; exec sleep 60' & ); sleep 0.1; exit 0`, time.Second)
	orphan := readPID(t, s.Stdout())
	_, _ = io.Copy(io.Discard, s.Stdout())
	exit := s.Wait()
	if exit.Code == nil || *exit.Code != 0 {
		t.Errorf("Exit = %+v, want status 0", exit)
	}
	if !gone(orphan) {
		t.Errorf("orphan %d that cleared its environment is alive after Wait", orphan)
	}
}

// TestSupervisorFairStop: in a stop, a descendant that outlives the leader
// gets SIGTERM once and the whole grace period before SIGKILL: it is not
// SIGKILLed when the leader exits.
func TestSupervisorFairStop(t *testing.T) {
	t.Parallel()
	grace := time.Second
	log := filepath.Join(t.TempDir(), "terms")
	s := launch(t, `sh -c 'trap "echo \$\$ >>`+log+`" TERM; echo $$; while :; do sleep 0.05; done' & trap 'exit 0' TERM; while :; do sleep 0.05; done`, grace)
	child := readPID(t, s.Stdout())
	start := time.Now()
	s.Stop(errors.New("stop"))
	_, _ = io.Copy(io.Discard, s.Stdout())
	exit := s.Wait()
	took := time.Since(start)
	if took < grace {
		t.Errorf("Wait returned %s after the stop, before the %s grace period the descendant ignoring SIGTERM is owed", took, grace)
	}
	if !gone(child) {
		t.Errorf("descendant %d alive after Wait", child)
	}
	b, _ := os.ReadFile(log)
	if got := strings.Fields(string(b)); len(got) != 1 || got[0] != strconv.Itoa(child) {
		t.Errorf("SIGTERMs recorded by the descendant: %q, want exactly one, from pid %d", got, child)
	}
	if exit.Code == nil || *exit.Code != 0 || exit.Cause == nil {
		t.Errorf("Exit = %+v, want status 0 (the leader's TERM trap) and the stop's cause", exit)
	}
}

// TestSupervisorStartErrors: a program that is not there, or not
// executable, is an error from Launch that callers can classify, and
// nothing is left running.
func TestSupervisorStartErrors(t *testing.T) {
	// Not parallel: nothing else of this test binary's runs meanwhile.
	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec")
	if err := os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path string
		want error
	}{
		{filepath.Join(dir, "missing"), fs.ErrNotExist},
		{noexec, fs.ErrPermission},
		{"hub-no-such-program-in-path", exec.ErrNotFound},
	} {
		s, err := Launch(Spec{Path: tt.path, Env: os.Environ()})
		if err == nil {
			io.Copy(io.Discard, s.Stdout())
			s.Wait()
			t.Errorf("Launch(%s) = nil error", tt.path)
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("Launch(%s) = %v, want an error that is %v", tt.path, err, tt.want)
		}
	}
	if left := Descendants(os.Getpid()); len(left) > 0 {
		t.Errorf("processes left after failed launches: %v", left)
	}
}

// TestSupervisorGuardKilled: an agent that SIGKILLs its guard dies with it
// (Pdeathsig), and Wait reports SIGKILL rather than hanging.
func TestSupervisorGuardKilled(t *testing.T) {
	t.Parallel()
	s := launch(t, `echo $PPID; while :; do sleep 0.05; done`, time.Second)
	guard := readPID(t, s.Stdout())
	if err := syscall.Kill(guard, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, s.Stdout())
	exit := s.Wait()
	if exit.Signal != "SIGKILL" {
		t.Errorf("Exit = %+v, want SIGKILL", exit)
	}
	if !gone(s.PID()) {
		t.Errorf("agent %d alive after its guard was killed", s.PID())
	}
}

// TestGuardOutlivesParent: when the process that launched the agent dies by
// SIGKILL, its guard stops the whole tree — the agent, a child in its
// group and a double-forked daemon in a session of its own, all ignoring
// SIGTERM — within the grace period and ReapWait.
func TestGuardOutlivesParent(t *testing.T) {
	t.Parallel()
	if os.Getenv("HUB_PROC_TEST_LAUNCHER") != "" {
		t.Skip("run as the launcher")
	}
	grace := 500 * time.Millisecond
	cmd := exec.Command(os.Args[0], "-test.run=^TestLauncher$", "-test.count=1")
	cmd.Env = append(os.Environ(), "HUB_PROC_TEST_LAUNCHER="+grace.String())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	var pids []int
	for len(pids) < 3 {
		line, err := r.ReadString('\n')
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("launcher output ended after pids %v: %v", pids, err)
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(line)); err == nil {
			pids = append(pids, pid)
		}
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	killed := time.Now()
	cmd.Process.Kill()
	cmd.Wait()
	bound := grace + ReapWait
	for _, pid := range pids {
		for !gone(pid) && time.Since(killed) < bound {
			time.Sleep(10 * time.Millisecond)
		}
		if !gone(pid) {
			t.Errorf("pid %d alive %s after its launcher was SIGKILLed, want gone within the grace %s + ReapWait", pid, time.Since(killed).Round(time.Millisecond), grace)
		}
	}
}

// TestLauncher is TestGuardOutlivesParent's launcher: it launches the tree,
// prints its pids, and waits to be killed.
func TestLauncher(t *testing.T) {
	v := os.Getenv("HUB_PROC_TEST_LAUNCHER")
	if v == "" {
		t.Skip("only as TestGuardOutlivesParent's launcher")
	}
	grace, _ := time.ParseDuration(v)
	s := launch(t, `trap '' TERM; echo $$; sh -c 'trap "" TERM; echo $$; exec sleep 300' & (setsid sh -c 'trap "" TERM; echo $$; exec sleep 300' &); while :; do sleep 1; done`, grace)
	io.Copy(os.Stdout, s.Stdout())
	select {}
}

// TestSupervisorFDs: the agent gets stdin, stdout and stderr only — not the
// guard's pipes, nor a descriptor this process left inheritable — and the
// guard's own stdout is /dev/null, so nothing the program's init functions
// print in the guard reaches the agent's streams.
func TestSupervisorFDs(t *testing.T) {
	// Not parallel: the inheritable descriptor would leak into other
	// tests' children.
	fd, err := syscall.Open("/dev/null", syscall.O_RDONLY, 0) // no O_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	// The agent (the shell, then ls in its place: exec keeps its
	// descriptors) lists its own descriptors; the one ls reads the
	// listing through is the only other it may have. A listing of the
	// shell's from a child would race with the shell's own pipes and
	// saved descriptors.
	s := launch(t, `readlink /proc/$PPID/fd/1; exec ls -l /proc/self/fd`, time.Second)
	out, _ := io.ReadAll(s.Stdout())
	s.Wait()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) == 0 || lines[0] != "/dev/null" {
		t.Errorf("guard's stdout is %q, want /dev/null", lines[0])
	}
	var fds []string
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) < 3 || f[len(f)-2] != "->" {
			continue // "total 0"
		}
		if n, target := f[len(f)-3], f[len(f)-1]; !(strings.HasPrefix(target, "/proc/") && strings.HasSuffix(target, "/fd")) {
			fds = append(fds, n)
		}
	}
	if strings.Join(fds, " ") != "0 1 2" {
		t.Errorf("agent's descriptors (but ls's own of /proc/self/fd) are %v, want 0 1 2:\n%s", fds, out)
	}
}
