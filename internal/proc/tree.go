package proc

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// member is one process of a tree: with its start time, pid names one
// process even after the pid is reused.
type member struct {
	pid   int
	start uint64
}

// noChildrenFiles is set once /proc/<pid>/task/<tid>/children turns out to
// be missing (a kernel built without CONFIG_PROC_CHILDREN): walks then fall
// back to one scan of all of /proc each.
var noChildrenFiles atomic.Bool

// walk returns the live descendants of root (not root itself), read from the
// children files of root's threads and theirs: the cost grows with the tree,
// not with the machine. A process that forks or exits during the walk may be
// missed by this walk; callers walk again until the tree is empty.
func walk(root int) []member {
	if noChildrenFiles.Load() {
		return walkScan(root)
	}
	var out []member
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		kids, ok := children(pid)
		if !ok && pid == root {
			if noChildrenFiles.Load() {
				return walkScan(root)
			}
			return nil // root is gone
		}
		for _, c := range kids {
			p, ok := readStat(c)
			if !ok || p.ppid != pid || p.zombie && !liveThreads(c) {
				// Gone, reused by a process outside the tree, or a zombie
				// (its parent reaps it; it has no descendants left).
				continue
			}
			out = append(out, member{pid: c, start: p.start})
			queue = append(queue, c)
		}
	}
	return out
}

// liveThreads reports whether the process pid, whose stat says zombie, still
// has threads running: its main thread exited (exit(2) of one thread, as
// pthread_exit in main does) and the others go on, with any children.
func liveThreads(pid int) bool {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	return err == nil && len(tasks) > 1
}

// children lists the children of every thread of pid. A child is attached
// to the thread that forked it, and an orphan re-parented to a subreaper to
// any live thread of it, so each thread's list is read. ok is false when pid
// is gone.
func children(pid int) (kids []int, ok bool) {
	dir := "/proc/" + strconv.Itoa(pid) + "/task"
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/children")
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat(dir + "/" + t.Name()); serr == nil {
				noChildrenFiles.Store(true) // the task is there, its children file is not
				return nil, false
			}
			continue // the thread ended
		}
		for _, f := range bytes.Fields(b) {
			if c, err := strconv.Atoi(string(f)); err == nil {
				kids = append(kids, c)
			}
		}
	}
	return kids, true
}

// walkScan is walk from one scan of all of /proc (ppid links), for kernels
// without children files.
func walkScan(root int) []member {
	var out []member
	for _, p := range descendants(root) {
		if !p.zombie || liveThreads(p.pid) {
			out = append(out, member{pid: p.pid, start: p.start})
		}
	}
	return out
}

// send sends sig to m if m is still the process it names: it opens a pidfd
// (which pins the process), then checks the start time. A process that is
// alive when the signal is sent was alive when its stat was read, so its
// pid cannot have been reused in between (pidfd_open(2), Linux 5.3). On
// kernels without pidfds it falls back to kill(2) after the same check.
// It reports whether the signal was delivered.
func send(m member, sig syscall.Signal) bool {
	fd, err := unix.PidfdOpen(m.pid, 0)
	if err != nil {
		if !errors.Is(err, syscall.ENOSYS) {
			return false // gone (ESRCH)
		}
		if startTime(m.pid) != m.start {
			return false
		}
		return syscall.Kill(m.pid, sig) == nil
	}
	defer unix.Close(fd)
	if startTime(m.pid) != m.start {
		return false
	}
	return unix.PidfdSendSignal(fd, sig, nil, 0) == nil
}
