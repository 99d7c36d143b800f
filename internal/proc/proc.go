// Package proc starts an agent in its own process group and stops that whole
// group: SIGTERM, a grace period, SIGKILL. It also keeps a bounded tail of
// the agent's stderr. It knows nothing about agents or events.
//
// Linux and other Unix systems only (Setpgid, kill(-pgid)).
package proc

import (
	"errors"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Group is a started process that leads its own process group.
type Group struct {
	Cmd  *exec.Cmd
	PGID int
}

// Start starts cmd as the leader of a new process group (Setpgid), so that
// every process it forks without leaving the group can be signalled at once.
// cmd.Stdin nil means /dev/null (os/exec's rule).
func Start(cmd *exec.Cmd) (*Group, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Group{Cmd: cmd, PGID: cmd.Process.Pid}, nil
}

// Signal sends sig to every process of the group. A group that is already
// gone is not an error.
func (g *Group) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-g.PGID, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Alive reports whether any process of the group still exists (zombies not
// yet reaped included).
func (g *Group) Alive() bool {
	return syscall.Kill(-g.PGID, 0) == nil
}

// Reap SIGKILLs whatever is left of the group and waits up to max for it to
// disappear. It reports whether the group is gone. Members that were children
// of the leader are re-parented on the leader's exit and reaped by their new
// parent, so this waits rather than calling wait itself.
func (g *Group) Reap(max time.Duration) bool {
	_ = g.Signal(syscall.SIGKILL)
	deadline := time.Now().Add(max)
	for d := time.Millisecond; ; d = min(2*d, 50*time.Millisecond) {
		if !g.Alive() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(d)
	}
}

// ExitStatus describes how a waited-for process ended: its exit code, or the
// name of the signal that killed it ("SIGKILL"), never both. Both are zero
// values when the process was not waited for.
func ExitStatus(ps *os.ProcessState) (code *int, signal string) {
	if ps == nil {
		return nil, ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return nil, unix.SignalName(ws.Signal())
	}
	c := ps.ExitCode()
	if c < 0 {
		return nil, ""
	}
	return &c, ""
}

// Tail is an io.Writer that keeps only the last Max bytes written to it and
// the total count. It is safe for concurrent use.
type Tail struct {
	Max   int
	mu    sync.Mutex
	buf   []byte
	total int64
}

// Write keeps the last t.Max bytes; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(p))
	if len(p) >= t.Max {
		t.buf = append(t.buf[:0], p[len(p)-t.Max:]...)
		return len(p), nil
	}
	if over := len(t.buf) + len(p) - t.Max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// String returns the kept tail.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Total returns how many bytes were written in all.
func (t *Tail) Total() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}
