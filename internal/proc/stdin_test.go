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

// TestSupervisorStdinPipe: with Spec.StdinPipe the process reads what is
// written to Stdin, line by line, while it runs, and sees its end when
// Stdin is closed.
func TestSupervisorStdinPipe(t *testing.T) {
	t.Parallel()
	s, err := Launch(Spec{Path: "/bin/sh", Args: []string{"-c", `while read -r l; do echo "got $l"; done; echo eof`},
		Env: os.Environ(), StdinPipe: true, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	in := s.Stdin()
	if in == nil {
		t.Fatal("Stdin() = nil with StdinPipe")
	}
	for _, w := range []string{"one", "two"} {
		if _, err := io.WriteString(in, w+"\n"); err != nil {
			t.Fatal(err)
		}
		if got := readLine(t, s.Stdout()); got != "got "+w {
			t.Errorf("line = %q, want %q", got, "got "+w)
		}
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	if got := readLine(t, s.Stdout()); got != "eof" {
		t.Errorf("line after Close = %q, want eof", got)
	}
	_, _ = io.Copy(io.Discard, s.Stdout())
	if exit := s.Wait(); exit.Code == nil || *exit.Code != 0 || exit.Cause != nil {
		t.Errorf("Wait() = %+v, want exit 0 with no cause", exit)
	}
}

// TestSupervisorInterrupt: a Stop calls Spec.Interrupt first; a process
// that exits on it is never signalled (it exits with its own status), and
// one that does not gets the SIGTERM a grace period after the Interrupt.
func TestSupervisorInterrupt(t *testing.T) {
	t.Parallel()
	t.Run("heeded", func(t *testing.T) {
		t.Parallel()
		var s *Supervisor
		s, err := Launch(Spec{Path: "/bin/sh", Args: []string{"-c", `echo ready; read -r l; echo "bye $l"; exit 3`},
			Env: os.Environ(), StdinPipe: true, Grace: time.Hour,
			Interrupt: func() bool { _, _ = io.WriteString(s.Stdin(), "cancel\n"); return true }})
		if err != nil {
			t.Fatal(err)
		}
		readLine(t, s.Stdout())
		cause := errors.New("test stop")
		s.Stop(cause)
		if got := readLine(t, s.Stdout()); got != "bye cancel" {
			t.Errorf("line = %q, want the answer to the interrupt", got)
		}
		_, _ = io.Copy(io.Discard, s.Stdout())
		exit := s.Wait()
		if exit.Code == nil || *exit.Code != 3 || exit.Signal != "" || exit.Cause != cause {
			t.Errorf("Wait() = %+v, want exit 3, no signal, the stop's cause", exit)
		}
	})
	t.Run("ignored", func(t *testing.T) {
		t.Parallel()
		grace := 300 * time.Millisecond
		asked := make(chan time.Time, 1)
		s, err := Launch(Spec{Path: "/bin/sh", Args: []string{"-c", `echo ready; exec sleep 60`},
			Env: os.Environ(), StdinPipe: true, Grace: grace, Interrupt: func() bool { asked <- time.Now(); return true }})
		if err != nil {
			t.Fatal(err)
		}
		readLine(t, s.Stdout())
		s.Stop(errors.New("test stop"))
		at := <-asked
		_, _ = io.Copy(io.Discard, s.Stdout())
		exit := s.Wait()
		if exit.Signal != "SIGTERM" {
			t.Errorf("Wait().Signal = %q, want SIGTERM after the ignored interrupt", exit.Signal)
		}
		if took := time.Since(at); took < grace {
			t.Errorf("SIGTERM %v after the interrupt, want at least the grace period %v", took, grace)
		}
	})
	t.Run("nothing to ask", func(t *testing.T) {
		t.Parallel()
		s, err := Launch(Spec{Path: "/bin/sh", Args: []string{"-c", `echo ready; exec sleep 60`},
			Env: os.Environ(), StdinPipe: true, Grace: time.Hour, Interrupt: func() bool { return false }})
		if err != nil {
			t.Fatal(err)
		}
		readLine(t, s.Stdout())
		s.Stop(errors.New("test stop"))
		_, _ = io.Copy(io.Discard, s.Stdout())
		// Wait would take the hour's grace if the SIGTERM waited for it.
		if exit := s.Wait(); exit.Signal != "SIGTERM" {
			t.Errorf("Wait().Signal = %q, want SIGTERM at once", exit.Signal)
		}
	})
	t.Run("kill", func(t *testing.T) {
		t.Parallel()
		called := make(chan struct{}, 1)
		s, err := Launch(Spec{Path: "/bin/sh", Args: []string{"-c", `echo ready; exec sleep 60`},
			Env: os.Environ(), StdinPipe: true, Grace: time.Hour, Interrupt: func() bool { called <- struct{}{}; return true }})
		if err != nil {
			t.Fatal(err)
		}
		readLine(t, s.Stdout())
		s.Kill(errors.New("test kill"))
		_, _ = io.Copy(io.Discard, s.Stdout())
		if exit := s.Wait(); exit.Signal != "SIGKILL" {
			t.Errorf("Wait().Signal = %q, want SIGKILL", exit.Signal)
		}
		select {
		case <-called:
			t.Error("Kill called Interrupt")
		default:
		}
	})
}

// TestSupervisorStdinOnlyTheAgent: the process alone holds the read end of
// its stdin pipe (the guard gives its own away once the process started):
// when the process closes its stdin, a write on Stdin fails (EPIPE) at
// once, rather than filling a pipe nobody reads and then waiting forever.
// The process table is read too: no process of the tree has the pipe open.
func TestSupervisorStdinOnlyTheAgent(t *testing.T) {
	t.Parallel()
	s, err := Launch(Spec{Path: "/bin/sh", Args: []string{"-c", `exec 0<&-; echo closed; exec sleep 30`},
		Env: os.Environ(), StdinPipe: true, Grace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		s.Kill(errors.New("test over"))
		_, _ = io.Copy(io.Discard, s.Stdout())
		s.Wait()
	}()
	if got := readLine(t, s.Stdout()); got != "closed" {
		t.Fatalf("line = %q, want closed", got)
	}
	if _, err := io.WriteString(s.Stdin(), "anyone there?\n"); !errors.Is(err, syscall.EPIPE) {
		t.Errorf("write on the stdin the process closed = %v, want EPIPE", err)
	}
	// The guard's own fd 0 is no longer the pipe.
	if link, err := os.Readlink("/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/fd/0"); err != nil || strings.HasPrefix(link, "pipe:") {
		t.Errorf("the guard's fd 0 = %q (%v), want /dev/null", link, err)
	}
}
