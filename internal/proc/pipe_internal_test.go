package proc

import (
	"fmt"
	"io"
	"os"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPipeReaderExitRace: whenever the process's exit lands while a read
// is in flight, the reader returns every byte written before the exit —
// none lost, none waited for — although the pipe's write end stays open
// (a grandchild that holds it). A read that took bytes out of the pipe
// just before agentExited counted what was queued must not be taken off
// the bytes still owed.
func TestPipeReaderExitRace(t *testing.T) {
	const chunk, chunks = 512, 64
	for i := range 300 {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		p := newPipeReader(r, false)
		buf := make([]byte, chunk)
		for j := range buf {
			buf[j] = 'a' + byte(j%26)
		}
		for range chunks {
			if _, err := w.Write(buf); err != nil {
				t.Fatal(err)
			}
		}
		got := make(chan int64, 1)
		go func() {
			n, _ := io.CopyBuffer(io.Discard, p, make([]byte, 100))
			got <- n
		}()
		// The exit comes while the copy reads: at once, or a little later.
		for range i % 7 {
			_ = p.queued()
		}
		p.agentExited()
		if n := <-got; n != chunk*chunks {
			t.Fatalf("iteration %d: read %d bytes, want all %d written before the exit", i, n, chunk*chunks)
		}
		r.Close()
		w.Close()
	}
}

// TestStdoutPipeSize: the agent's stdout pipe is stdoutPipeSize (1 MiB) when
// the system allows it (pipe-max-size), so that a fast agent and hub take
// turns less often.
func TestStdoutPipeSize(t *testing.T) {
	t.Parallel()
	s, err := Launch(Spec{Path: "/bin/sh", Args: []string{"-c", "exit 0"}, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { // also after a skip
		_, _ = io.Copy(io.Discard, s.Stdout())
		s.Wait()
	}()
	checkGrown(t, "stdout pipe", s.stdout.rc)
}

// checkGrown checks that the pipe of rc is stdoutPipeSize when the system
// allows it (pipe-max-size) and growing is free (pipeGrowFree), and not
// grown otherwise.
func checkGrown(t *testing.T, what string, rc syscall.RawConn) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/fs/pipe-max-size")
	if err != nil {
		t.Skipf("pipe-max-size: %v", err)
	}
	var most int
	fmt.Sscan(string(b), &most)
	size := -1
	_ = rc.Control(func(fd uintptr) { size, _ = unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0) })
	switch {
	case pipeGrowFree() && most >= stdoutPipeSize && size != stdoutPipeSize:
		t.Errorf("%s of %d bytes, want %d (pipe-max-size %d)", what, size, stdoutPipeSize, most)
	case !pipeGrowFree() && size > 64<<10:
		t.Errorf("%s of %d bytes: grown, for a user whose pipes count against pipe-user-pages-soft", what, size)
	}
}

// TestGrowPipe: GrowPipe grows a pipe (hub replay's stdin) as the agent's
// stdout pipe is grown, and leaves a regular file alone.
func TestGrowPipe(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	GrowPipe(r)
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	checkGrown(t, "pipe", rc)
	f, err := os.Create(t.TempDir() + "/f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	GrowPipe(f) // not a pipe: nothing to do, nothing to fail
	if _, err := f.WriteString("x"); err != nil {
		t.Errorf("the file after GrowPipe: %v", err)
	}
}
