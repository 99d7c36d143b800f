package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Terminal mode (Spec.TTY). Launch opens two pseudo-terminals, one for the
// process's stdout and one for its stderr, and keeps their masters; the
// guard gets the slaves as the agent's fds 1 and 2 (in place of the pipes)
// and starts the agent with setsid and TIOCSCTTY on fd 1, so the stdout
// terminal is the controlling terminal of the session the guard already
// makes, and then closes its own copies: the agent's tree holds the only
// ones, and a read of a master ends (EIO) once none of it does. Nothing else
// changes: stops, kills, reaping and the exit report are the guard's as in
// pipe mode.
//
//   - stdin stays a pipe (Spec.Stdin) or /dev/null, never the terminal: a
//     prompt of any size arrives whole (a terminal in canonical mode cuts a
//     line at 4096 bytes) and ends with EOF, and nothing waits for a key
//     nobody presses. A process that reads the terminal itself (/dev/tty)
//     waits as it would for a silent user, which the run's limits bound.
//   - stderr is a terminal of its own, not the stdout one: both are
//     terminals to the agent, and its stderr still reaches the caller apart
//     (Exit.Stderr, Spec.Stderr).
//   - the terminals are TTYCols × TTYRows, with echo off and the rest of a
//     terminal's defaults, ONLCR included: the line discipline turns each
//     "\n" the agent writes into "\r\n", and the Supervisor turns each
//     "\r\n" back into "\n" (onlcrReader), so that Stdout and the stderr
//     tail are the bytes as the agent wrote them — exactly, as long as the
//     agent leaves the terminal's output settings alone.
//   - once the process has exited, a stream returns what the terminal still
//     holds (reads until the terminal has nothing more, which takes in
//     the kernel's buffered bytes), at most ttyDrainMax bytes, and then
//     io.EOF, whatever a grandchild still holding the terminal writes.
//   - the kernel's terminal semantics apply: when the agent (the session
//     leader) exits, its foreground process group gets SIGHUP before the
//     guard's SIGTERM.

// The window size of Spec.TTY's terminals: wide, so that a CLI that fits
// its output to the terminal's width neither wraps nor cuts a line.
const (
	TTYCols = 400
	TTYRows = 50
)

// ttyDrainMax bounds what a terminal's stream returns after the process
// exited. A pseudo-terminal holds about 15 KiB between its two sides on
// Linux 6 (its buffers' limits; older kernels held up to 68 KiB): all that
// the process wrote before it exited fits, and a detached grandchild that
// goes on writing adds at most this much.
const ttyDrainMax = 256 << 10

// guardTTYEnv, set to "1" in the guard's environment, tells the guard that
// fds 5 and 6 are terminals (Spec.TTY); the guard removes it from the
// agent's environment.
const guardTTYEnv = "HUB_PROC_GUARD_TTY"

// ErrTTY is the error of a Launch with Spec.TTY that could not open its
// pseudo-terminals (is: errors.Is): no /dev/ptmx, devpts not mounted, or
// the system's limit of pseudo-terminals reached. Nothing was started.
var ErrTTY = errors.New("proc: cannot open a pseudo-terminal")

// openTTY opens a pseudo-terminal (creack/pty) with window size TTYCols ×
// TTYRows and echo off, and returns its master, non-blocking so that the
// runtime's poller serves it (read deadlines work), and its slave.
func openTTY() (master, slave *os.File, err error) {
	m, s, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrTTY, err)
	}
	defer m.Close() // the original: its duplicate is returned
	fail := func(what string, err error) (*os.File, *os.File, error) {
		s.Close()
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrTTY, what, err)
	}
	if err := pty.Setsize(s, &pty.Winsize{Cols: TTYCols, Rows: TTYRows}); err != nil {
		return fail("setting the window size", err)
	}
	t, err := unix.IoctlGetTermios(int(s.Fd()), unix.TCGETS)
	if err != nil {
		return fail("reading the settings", err)
	}
	t.Lflag &^= unix.ECHO | unix.ECHONL
	if err := unix.IoctlSetTermios(int(s.Fd()), unix.TCSETS, t); err != nil {
		return fail("turning echo off", err)
	}
	// pty.Open's ioctls went through m.Fd(), which made the master
	// blocking: a duplicate set non-blocking is one that os.NewFile hands
	// to the poller.
	fd, err := unix.FcntlInt(m.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fail("duplicating the master", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return fail("making the master non-blocking", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), s, nil
}

// readTTY is pipeReader.Read for a terminal's master. Until the process
// exits it blocks like any read; EIO (no process holds the terminal any
// more) is the end of the stream. After agentExited it reads without
// waiting: what the terminal holds, up to ttyDrainMax bytes in all, then
// io.EOF. A non-blocking read of a pseudo-terminal first moves what the
// other side wrote into the buffer it reads from (the kernel's n_tty_read
// flushes the port's pending input before it says EAGAIN), so nothing the
// process wrote before it exited is missed.
func (p *pipeReader) readTTY(b []byte) (int, error) {
	for {
		p.mu.Lock()
		exited := p.exited
		p.mu.Unlock()
		if exited {
			return p.drainTTY(b)
		}
		var n int
		var rerr error
		err := p.rc.Read(func(fd uintptr) bool {
			n, rerr = unix.Read(int(fd), b)
			return rerr != unix.EAGAIN && rerr != unix.EINTR
		})
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			continue // agentExited woke the read: drain
		case errors.Is(err, os.ErrClosed):
			return 0, io.EOF
		case err != nil:
			return 0, err
		case rerr == unix.EIO || rerr == nil && n == 0:
			return 0, io.EOF
		case rerr != nil:
			return 0, rerr
		}
		return n, nil
	}
}

// drainTTY is one read of readTTY after the process exited.
func (p *pipeReader) drainTTY(b []byte) (int, error) {
	left := ttyDrainMax - p.drained
	if left <= 0 || len(b) == 0 {
		return 0, io.EOF
	}
	b = b[:min(len(b), left)]
	var n int
	var rerr error
	err := p.rc.Control(func(fd uintptr) {
		for {
			n, rerr = unix.Read(int(fd), b)
			if rerr != unix.EINTR {
				return
			}
		}
	})
	if err != nil || rerr != nil || n <= 0 {
		return 0, io.EOF // EAGAIN: nothing more; EIO: no one holds the terminal
	}
	p.drained += n
	return n, nil
}

// onlcrReader undoes a terminal's ONLCR: each "\r\n" read becomes "\n". A
// "\r" at the end of one read is held until the next byte says which it
// was.
type onlcrReader struct {
	r    io.Reader
	buf  []byte // what r gave
	out  []byte // buf undone
	pend []byte // what out still holds for the caller
	cr   bool   // a "\r" is held
	err  error  // r's error, returned once out is empty
}

func newONLCRReader(r io.Reader) *onlcrReader {
	return &onlcrReader{r: r, buf: make([]byte, 32<<10), out: make([]byte, 0, 32<<10+1)}
}

func (o *onlcrReader) Read(b []byte) (int, error) {
	for len(o.pend) == 0 {
		if o.err != nil {
			if !o.cr {
				return 0, o.err
			}
			o.cr = false
			o.pend = append(o.out[:0], '\r')
			break
		}
		var n int
		n, o.err = o.r.Read(o.buf)
		o.pend = o.undo(o.buf[:n])
	}
	n := copy(b, o.pend)
	o.pend = o.pend[n:]
	return n, nil
}

// undo returns in into o.out with every "\r\n" made "\n", the held "\r"
// before it and a last "\r" held for the next call.
func (o *onlcrReader) undo(in []byte) []byte {
	if !o.cr && bytes.IndexByte(in, '\r') < 0 {
		return in // the common case: nothing to undo, nothing to copy
	}
	out := o.out[:0]
	for _, c := range in {
		if o.cr {
			o.cr = false
			if c != '\n' {
				out = append(out, '\r')
			}
		}
		if c == '\r' {
			o.cr = true
			continue
		}
		out = append(out, c)
	}
	return out
}
