// Package proc starts an agent in its own process group and stops that whole
// group and every descendant: SIGTERM, a grace period, SIGKILL. Supervisor
// is the one way hub runs a process (an agent, or its version command): it
// owns the pipes, the descendants, the stop and the reaping, and returns one
// Exit record with a bounded tail of stderr. Group is the process tree it
// follows. It knows nothing about agents or events.
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

	// Orphans, when set before the leader starts anything, makes Snapshot
	// also record the children of this process that belong to the group,
	// and their descendants: for a child subreaper
	// (PR_SET_CHILD_SUBREAPER), to which the group's orphans are
	// re-parented. A child belongs to the group when its environment holds
	// Marker (so groups started side by side keep their own orphans), or,
	// with Sole set, whatever it is.
	Orphans bool
	// Sole says this process runs no other children than this group's
	// (the hub CLI): with Orphans, every child but the leader is the
	// group's, even one that cleared its environment.
	Sole bool

	// Marker, when not "", is an environment entry ("K=V") the caller put
	// in the leader's environment, unique to this group: every process the
	// leader starts inherits it unless it clears its environment, so
	// SnapshotMarked finds them even once they are no longer descendants
	// (re-parented to init after their parent exited).
	Marker string

	mu       sync.Mutex
	tree     map[int]uint64         // descendants seen by Snapshot → their start time
	sent     map[int]syscall.Signal // the last signal sent to each of them
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
	return &Group{Cmd: cmd, PGID: cmd.Process.Pid, tree: map[int]uint64{}, release: release}, nil
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
	var found []procInfo
	if g.Orphans {
		// The orphans themselves (re-parented to this process: a daemon
		// the agent's tool detached, even one that cleared its
		// environment), and below, their descendants.
		found = g.orphans()
		for _, p := range found {
			roots = append(roots, p.pid)
		}
	}
	for _, p := range append(found, descendants(roots...)...) {
		if p.pid == g.PGID {
			continue
		}
		if _, seen := g.tree[p.pid]; !seen {
			g.tree[p.pid] = p.start
		}
	}
	return len(g.tree)
}

// orphans returns the children of this process that belong to the group (see
// Orphans), other than the leader.
func (g *Group) orphans() []procInfo {
	self := os.Getpid()
	var out []procInfo
	scan(func(p procInfo) {
		if p.ppid != self || p.pid == g.PGID || p.zombie {
			return
		}
		if g.Sole || g.Marker != "" && hasEnv(p.pid, g.Marker) {
			out = append(out, p)
		}
	})
	return out
}

// hasEnv reports whether the environment of pid holds the entry kv ("K=V").
func hasEnv(pid int, kv string) bool {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(env, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// SnapshotMarked records every live process (not this one, not zombies)
// whose environment holds Marker, as Snapshot records descendants. It reads
// /proc/<pid>/environ of every process of this user: call it at the moments
// that need it (a stop, the leader's exit), not on a timer.
func (g *Group) SnapshotMarked() {
	if g.Marker == "" {
		return
	}
	self := os.Getpid()
	var found []procInfo
	scan(func(p procInfo) {
		if !p.zombie && p.pid != self && p.pid != g.PGID && hasEnv(p.pid, g.Marker) {
			found = append(found, p)
		}
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range found {
		if _, seen := g.tree[p.pid]; !seen {
			g.tree[p.pid] = p.start
		}
	}
}

// Signal sends sig to every process of the group, to every recorded
// descendant that is still the same process (its pid not reused: same start
// time), and to the process groups those descendants lead. Processes already
// gone are not an error.
func (g *Group) Signal(sig syscall.Signal) error {
	err := syscall.Kill(-g.PGID, sig)
	if errors.Is(err, syscall.ESRCH) {
		err = nil
	}
	g.signalTree(sig, false)
	return err
}

// SignalNew sends sig to the recorded descendants that have not been sent
// it yet (found by a Snapshot since the last Signal), and to the groups they
// lead; not to the group itself. A stop signals at once what it knows, then
// snapshots, then signals what the snapshot found, so no process gets the
// polite signal twice.
func (g *Group) SignalNew(sig syscall.Signal) {
	g.signalTree(sig, true)
}

func (g *Group) signalTree(sig syscall.Signal, onlyNew bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.sent == nil {
		g.sent = map[int]syscall.Signal{}
	}
	self := syscall.Getpgrp()
	for pid, start := range g.tree {
		if pid == self || onlyNew && g.sent[pid] == sig || startTime(pid) != start {
			continue // gone, or the pid now belongs to another process
		}
		g.sent[pid] = sig
		_ = syscall.Kill(pid, sig)
		if pgid, perr := syscall.Getpgid(pid); perr == nil && pgid == pid {
			_ = syscall.Kill(-pid, sig) // a group one of our descendants leads
		}
	}
}

// Alive reports whether any process of the group or any recorded descendant
// is still running. Zombies do not count: they hold no resources but a pid
// and are their parent's to reap.
func (g *Group) Alive() bool {
	g.mu.Lock()
	pids := make(map[int]uint64, len(g.tree))
	for pid, start := range g.tree {
		pids[pid] = start
	}
	g.mu.Unlock()
	alive := false
	scan(func(p procInfo) {
		if p.zombie {
			return
		}
		if start, ok := pids[p.pid]; p.pgid == g.PGID || (ok && start == p.start) {
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
	if g.Orphans {
		g.Snapshot()
		defer g.reapOrphans()
	}
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
	var out []int
	for _, p := range descendants(pids...) {
		out = append(out, p.pid)
	}
	return out
}

func descendants(pids ...int) []procInfo {
	children := map[int][]procInfo{}
	scan(func(p procInfo) { children[p.ppid] = append(children[p.ppid], p) })
	seen := map[int]bool{}
	queue := append([]int(nil), pids...)
	var out []procInfo
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c.pid] {
				seen[c.pid] = true
				out = append(out, c)
				queue = append(queue, c.pid)
			}
		}
	}
	return out
}

// procInfo is what hub reads of a process from /proc/<pid>/stat.
type procInfo struct {
	pid, ppid, pgid int
	zombie          bool
	start           uint64 // start time in clock ticks since boot: with pid, names one process
}

// scan calls f for every process in /proc. Processes that vanish mid-scan
// are skipped.
func scan(f func(procInfo)) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if p, ok := readStat(pid); ok {
			f(p)
		}
	}
}

// readStat parses /proc/<pid>/stat: pid (comm) state ppid pgrp … starttime
// (field 22); comm may hold spaces and parentheses.
func readStat(pid int) (procInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procInfo{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procInfo{}, false
	}
	fields := strings.Fields(string(b[i+1:]))
	if len(fields) < 20 {
		return procInfo{}, false
	}
	ppid, _ := strconv.Atoi(fields[1])
	pgid, _ := strconv.Atoi(fields[2])
	start, _ := strconv.ParseUint(fields[19], 10, 64)
	return procInfo{pid: pid, ppid: ppid, pgid: pgid, zombie: fields[0] == "Z" || fields[0] == "X", start: start}, true
}

// startTime is pid's start time, 0 when it does not exist.
func startTime(pid int) uint64 {
	p, ok := readStat(pid)
	if !ok {
		return 0
	}
	return p.start
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

// Tail is an io.Writer that keeps only the last Max bytes written to it. It
// is safe for concurrent use.
type Tail struct {
	Max int
	mu  sync.Mutex
	buf []byte
}

// Write keeps the last t.Max bytes; it never fails.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
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

// LiveInGroup returns the pids of the running (not zombie) processes whose
// process group is pgid.
func LiveInGroup(pgid int) []int {
	var out []int
	scan(func(p procInfo) {
		if p.pgid == pgid && !p.zombie {
			out = append(out, p.pid)
		}
	})
	return out
}

// Running reports whether pid exists and is not a zombie.
func Running(pid int) bool {
	p, ok := readStat(pid)
	return ok && !p.zombie
}

// reapOrphans waits for the recorded descendants that were re-parented to
// this process (as a subreaper) and have exited, so no zombie is left.
func (g *Group) reapOrphans() {
	g.mu.Lock()
	defer g.mu.Unlock()
	self := os.Getpid()
	for pid := range g.tree {
		if p, ok := readStat(pid); ok && p.ppid == self {
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		}
	}
}

// BecomeSubreaper makes this process a child subreaper
// (PR_SET_CHILD_SUBREAPER): processes orphaned below it are re-parented to
// it instead of to init, so a Group with Orphans set can still find them.
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}
