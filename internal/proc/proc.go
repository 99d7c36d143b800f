// Package proc starts an agent in its own process group and stops that whole
// group: SIGTERM, a grace period, SIGKILL. It also keeps a bounded tail of
// the agent's stderr. It knows nothing about agents or events.
//
// Linux and other Unix systems only (Setpgid, kill(-pgid)).
package proc

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Group is a started process that leads its own process group, and the
// descendants hub has seen it start. Agents such as OpenCode and Claude Code
// run their tools in process groups of their own, so signalling the group
// alone would leave tool shells running; Group also signals every descendant
// it found by walking /proc (see Snapshot). It is safe for concurrent use.
type Group struct {
	Cmd  *exec.Cmd
	PGID int

	mu       sync.Mutex
	tree     map[int]bool // descendants seen by Snapshot, including dead ones
	release  chan struct{}
	released bool
}

// Start starts cmd as the leader of a new process group (Setpgid), so that
// every process it forks without leaving the group can be signalled at once.
// If hub dies without stopping it (even by SIGKILL), the kernel sends the
// leader SIGKILL (Pdeathsig). cmd.Stdin nil means /dev/null (os/exec's rule).
// Call Reap when done with the group: it also releases the OS thread that
// started the leader.
//
// Pdeathsig fires when the *thread* that forked the child exits, and Go may
// end threads (golang/go#27505), so the fork happens on a locked thread that
// is kept until Reap.
func Start(cmd *exec.Cmd) (*Group, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	started := make(chan error, 1)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		// Never unlocked: when this goroutine returns, after Reap, the
		// thread ends with it.
		started <- cmd.Start()
		<-release
	}()
	if err := <-started; err != nil {
		close(release)
		return nil, err
	}
	return &Group{Cmd: cmd, PGID: cmd.Process.Pid, tree: map[int]bool{}, release: release}, nil
}

// Snapshot records the leader's current descendants, and those of every
// descendant recorded before (whose parent may have died since), so that a
// later Signal reaches them even after they are re-parented. Call it while
// the leader is alive: once it has exited, orphans it left can no longer be
// traced to it. It returns how many processes are recorded.
func (g *Group) Snapshot() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	roots := []int{g.PGID}
	for pid := range g.tree {
		roots = append(roots, pid)
	}
	for _, pid := range Descendants(roots...) {
		g.tree[pid] = true
	}
	return len(g.tree)
}

// Signal sends sig to every process of the group, to every recorded
// descendant, and to the process groups those descendants lead. Processes
// already gone are not an error.
func (g *Group) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-g.PGID, sig)
	if errors.Is(err, syscall.ESRCH) {
		err = nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	self := syscall.Getpgrp()
	for pid := range g.tree {
		if pid == self {
			continue
		}
		_ = syscall.Kill(pid, sig)
		if pgid, perr := syscall.Getpgid(pid); perr == nil && pgid == pid {
			_ = syscall.Kill(-pid, sig) // a group one of our descendants leads
		}
	}
	return err
}

// Alive reports whether any process of the group or any recorded descendant
// is still running. Zombies do not count: they hold no resources but a pid
// and are their parent's to reap.
func (g *Group) Alive() bool {
	g.mu.Lock()
	pids := make(map[int]bool, len(g.tree))
	for pid := range g.tree {
		pids[pid] = true
	}
	g.mu.Unlock()
	alive := false
	scan(func(pid, ppid, pgid int, zombie bool) {
		if !zombie && (pgid == g.PGID || pids[pid]) {
			alive = true
		}
	})
	return alive
}

// Reap SIGKILLs whatever is left of the group and the recorded descendants
// and waits up to max for them to be gone. It reports whether they are.
func (g *Group) Reap(max time.Duration) bool {
	defer func() {
		g.mu.Lock()
		if !g.released {
			g.released = true
			close(g.release)
		}
		g.mu.Unlock()
	}()
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

// Descendants returns the pids of every live descendant of the given pids
// (not the pids themselves), from one walk of /proc.
func Descendants(pids ...int) []int {
	children := map[int][]int{}
	scan(func(pid, ppid, _ int, _ bool) { children[ppid] = append(children[ppid], pid) })
	seen := map[int]bool{}
	queue := append([]int(nil), pids...)
	var out []int
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// scan calls f for every process in /proc with its parent, process group
// and whether it is a zombie. Processes that vanish mid-scan are skipped.
func scan(f func(pid, ppid, pgid int, zombie bool)) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parens.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(b[i+1:]))
		if len(fields) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		pgid, _ := strconv.Atoi(fields[2])
		f(pid, ppid, pgid, fields[0] == "Z" || fields[0] == "X")
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

// LiveInGroup returns the pids of the running (not zombie) processes whose
// process group is pgid.
func LiveInGroup(pgid int) []int {
	var out []int
	scan(func(pid, _, g int, zombie bool) {
		if g == pgid && !zombie {
			out = append(out, pid)
		}
	})
	return out
}

// Running reports whether pid exists and is not a zombie.
func Running(pid int) bool {
	running := false
	scan(func(p, _, _ int, zombie bool) {
		if p == pid && !zombie {
			running = true
		}
	})
	return running
}
