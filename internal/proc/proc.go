// Package proc runs a process and stops it and every process it starts:
// SIGTERM, a grace period, SIGKILL. Supervisor is the one way hub runs a
// process (an agent, or its version command): it owns the pipes, the stop
// and the reaping, and returns one Exit record with a bounded tail of
// stderr. Each process runs below a guard (guard.go), a child subreaper
// that holds its whole tree and takes it down even if hub is SIGKILLed. It
// knows nothing about agents or events.
//
// Linux only (PR_SET_CHILD_SUBREAPER, /proc, pidfds).
package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

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
	pid, ppid, pgid, sid int
	zombie               bool
	stopped              bool   // by a signal (T) or a tracer (t)
	start                uint64 // start time in clock ticks since boot: with pid, names one process
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
	sid, _ := strconv.Atoi(fields[3])
	start, _ := strconv.ParseUint(fields[19], 10, 64)
	return procInfo{pid: pid, ppid: ppid, pgid: pgid, sid: sid, zombie: fields[0] == "Z" || fields[0] == "X",
		stopped: fields[0] == "T" || fields[0] == "t", start: start}, true
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

// BecomeSubreaper makes this process a child subreaper
// (PR_SET_CHILD_SUBREAPER): processes orphaned below it are re-parented to
// it instead of to init. Every guard is one; this process needs to be one
// only for the orphans of a guard that was killed (see Spec.Orphans).
func BecomeSubreaper() error {
	return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
}
