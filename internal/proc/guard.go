package proc

import (
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The guard is the parent of every process Launch starts. Launch runs it by
// re-executing the running binary (/proc/self/exe) with guardEnv set; this
// package's init sees the variable and runs guardMain instead of the
// program, before the program's main or its flags. The guard:
//
//   - is a child subreaper (PR_SET_CHILD_SUBREAPER), so every process the
//     agent starts stays below it whatever it does — a new session or
//     process group, a double fork, a cleared environment, an unreadable
//     /proc entry: an orphan is re-parented to the guard, never to init;
//   - starts the agent in a session of its own (setsid), so no process of
//     the agent's can join hub's process group, and with Pdeathsig SIGKILL,
//     so the agent dies should the guard itself be killed;
//   - reports the agent's pid and, once it has reaped it, its wait status;
//   - stops the whole tree when hub asks, when the agent exits leaving
//     processes behind, and when hub exits or is SIGKILLed (its pidfd, or
//     the end of the control pipe): SIGTERM once to each process, the grace
//     period for all of them, then SIGKILL until none is left;
//   - exits when it has no child left: wait4 then fails with ECHILD, which
//     the kernel guarantees means no descendant is alive.
//
// Protocol. fd 3 is the control pipe, read by the guard: 't' stop politely,
// 'k' SIGKILL now; end of file, stop politely. fd 4 is the status pipe,
// written by the guard, one line per message: "P <pid>" once started,
// "E <errno>" if the agent could not be executed (the guard then exits),
// "X <wait status> <last signal sent>" once the agent has been reaped. fds
// 5 and 6 are the agent's stdout and stderr (pipes, or with guardTTYEnv the
// slaves of two pseudo-terminals, which the guard closes once the agent
// started); the guard's own stdout and stderr are /dev/null.
const (
	guardEnv  = "HUB_PROC_GUARD" // its value: the grace period in nanoseconds
	guardArg0 = "hub-guard"
	ctlFD     = 3
	statusFD  = 4
	outFD     = 5 // the agent's stdout
	errFD     = 6 // the agent's stderr
)

// walkEvery is how often a stop walks the tree again to find processes
// started since the last walk.
const walkEvery = 20 * time.Millisecond

// giveUp bounds the SIGKILL phase: a process that survives it (one of
// another user, which only root may signal) is left, and the guard exits.
const giveUp = 10 * time.Second

// init turns this process into a guard when Launch started it as one: the
// variable alone is not enough (a program that inherited it by accident
// runs as itself), argv[0] must be guardArg0 too.
func init() {
	if v, ok := os.LookupEnv(guardEnv); ok && len(os.Args) > 0 && os.Args[0] == guardArg0 {
		// syscall.Exit, not os.Exit: nothing to flush, and a binary built
		// with -race would otherwise sleep 1 s at exit (GORACE
		// atexit_sleep_ms), holding every run's end.
		syscall.Exit(guardMain(v, os.Args[1:]))
	}
}

// beforeReport, when set (by this package's tests only), runs in the guard
// after the process started and before the guard reports it.
var beforeReport func()

// guard is the state of a guard process.
type guard struct {
	leader  member
	status  *os.File
	grace   time.Duration
	termed  map[member]bool // processes sent SIGTERM in this stop
	lastSig syscall.Signal  // the last signal sent to the leader
	reaped  bool            // the leader has been waited for
}

func guardMain(graceNS string, argv []string) int {
	// Pdeathsig is tied to the thread that forks: keep this one for good.
	runtime.LockOSThread()
	os.Unsetenv(guardEnv)
	// Nothing but the agent's stdin, stdout and stderr reaches the agent:
	// not the guard's pipes, nor what hub's own caller left open.
	_ = unix.CloseRange(ctlFD, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if name, err := unix.BytePtrFromString(guardArg0); err == nil {
		_ = unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(name)), 0, 0, 0) // comm, for ps and pgrep
		runtime.KeepAlive(name)
	}
	status := os.NewFile(statusFD, "status")
	ctl := os.NewFile(ctlFD, "control")
	diag := os.NewFile(errFD, "stderr") // the guard's own messages: the agent's stderr
	ns, _ := strconv.ParseInt(graceNS, 10, 64)
	if len(argv) == 0 {
		fmt.Fprintln(diag, "hub-guard: no command")
		return 2
	}
	// The guard's fate is decided by the control pipe only: terminal and
	// job-control signals are caught (not ignored: an ignored disposition
	// would be inherited by the agent) and dropped.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintln(diag, "hub-guard: PR_SET_CHILD_SUBREAPER:", err)
		return 2
	}
	// Not dumpable: a process of the tree (not root) can then neither
	// trace the guard nor open its pipes through /proc/<guard>/fd. The
	// agent is dumpable again after its execve.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	parentGone := watchParent()
	_, tty := os.LookupEnv(guardTTYEnv)
	os.Unsetenv(guardTTYEnv)
	sys := &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
	if tty {
		// fds 5 and 6 are terminals (Spec.TTY, tty.go): the stdout one
		// becomes the controlling terminal of the agent's new session.
		sys.Setctty, sys.Ctty = true, 1
	}
	pid, err := syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Env:   os.Environ(),
		Files: []uintptr{0, outFD, errFD},
		Sys:   sys,
	})
	if tty {
		// The agent's tree is to hold the terminals alone: a read of a
		// master ends (EIO) once none of it does.
		_ = unix.Close(outFD)
		_ = diag.Close()
	}
	if err != nil {
		errno, _ := err.(syscall.Errno)
		fmt.Fprintf(status, "E %d\n", int(errno))
		return 1
	}
	// The agent alone reads its stdin: should it close it, or exit, hub's
	// writes on a stdin pipe fail (EPIPE) rather than fill a pipe the
	// guard would hold open.
	if null, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Dup2(null, 0)
		_ = unix.Close(null)
	}
	g := &guard{leader: member{pid: pid, start: startTime(pid)}, status: status, grace: time.Duration(ns), termed: map[member]bool{}}
	if beforeReport != nil {
		beforeReport()
	}
	fmt.Fprintf(status, "P %d\n", pid)
	return g.run(ctl, parentGone)
}

// watchParent returns a channel closed when the process that started the
// guard has exited, from a pidfd of it: the end of the control pipe alone
// is not proof, since a process of the tree (as root) can open the pipe
// through /proc/<guard>/fd and hold it open. A parent already gone (the
// guard re-parented) closes it at once; without pidfds it is never closed
// and the pipe is the only sign.
func watchParent() <-chan struct{} {
	gone := make(chan struct{})
	ppid := os.Getppid()
	fd, err := unix.PidfdOpen(ppid, 0)
	if err != nil {
		return gone
	}
	if os.Getppid() != ppid {
		close(gone)
		return gone
	}
	go func() {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			if n, err := unix.Poll(fds, -1); n > 0 || err != nil && err != syscall.EINTR {
				close(gone)
				return
			}
		}
	}()
	return gone
}

// reaped is one wait4 result.
type reaped struct {
	pid int
	ws  syscall.WaitStatus
}

// readControl delivers the control pipe's bytes, and closes the channel at
// its end.
func readControl(ctl *os.File) <-chan byte {
	cmds := make(chan byte, 4)
	go func() {
		b := make([]byte, 1)
		for {
			if n, err := ctl.Read(b); n == 0 || err != nil {
				close(cmds)
				return
			}
			cmds <- b[0]
		}
	}()
	return cmds
}

// reapChildren waits for every child of the guard (its own and the orphans
// re-parented to it) and delivers each; it closes the channel when wait4
// fails with ECHILD: no child, so no descendant, is left.
func reapChildren() <-chan reaped {
	waits := make(chan reaped, 16)
	go func() {
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				close(waits)
				return
			}
			waits <- reaped{pid, ws}
		}
	}()
	return waits
}

// run is the guard's life after the agent started: it carries out stops and
// reports the agent's exit until no descendant is left (exit status 0), or
// gives up on processes it cannot kill (1).
func (g *guard) run(ctl *os.File, parentGone <-chan struct{}) int {
	cmds, waits := readControl(ctl), reapChildren()
	var (
		stopping bool
		killing  bool
		deadline <-chan time.Time // the end of the grace period
		tick     <-chan time.Time // the next walk of a stop
		killedAt time.Time
	)
	ticker := time.NewTicker(walkEvery)
	defer ticker.Stop()
	stop := func(kill bool) {
		switch {
		case kill && !killing:
			killing, stopping = true, true
			killedAt = time.Now()
			tick = ticker.C
			g.killTree()
		case !stopping:
			stopping = true
			tick = ticker.C
			deadline = time.After(g.grace)
			g.signalTree(syscall.SIGTERM)
		}
	}
	for {
		select {
		case <-parentGone:
			parentGone = nil
			stop(false)
		case c, ok := <-cmds:
			if !ok {
				cmds = nil
				stop(false)
				continue
			}
			stop(c == 'k')
		case w, ok := <-waits:
			if !ok {
				return 0
			}
			if w.pid == g.leader.pid && !g.reaped {
				g.reaped = true
				fmt.Fprintf(g.status, "X %d %d\n", uint32(w.ws), int(g.lastSig))
				stop(false) // what the agent left behind
			}
		case <-deadline:
			deadline = nil
			stop(true)
		case <-tick:
			if killing {
				if time.Since(killedAt) > giveUp {
					return 1
				}
				g.killTree()
			} else {
				g.signalTree(syscall.SIGTERM)
			}
		}
	}
}

// signalTree sends sig to every live process below the guard, and returns
// how many it reached. SIGTERM goes to each process at most once per stop;
// SIGKILL to every process each time.
func (g *guard) signalTree(sig syscall.Signal) int {
	n := 0
	for _, m := range walk(os.Getpid()) {
		if sig == syscall.SIGTERM {
			if g.termed[m] {
				continue
			}
			g.termed[m] = true
		}
		if !send(m, sig) {
			continue
		}
		n++
		if m == g.leader && !g.reaped {
			g.lastSig = sig
		}
	}
	return n
}

// killTree SIGKILLs the tree, walking it again at once while a walk finds
// someone: a process that forks and exits faster than one walk (a re-forking
// "hydra") is caught by the next, without waiting for the ticker. A process
// SIGKILLed forks no more, so the walks converge.
func (g *guard) killTree() {
	for i := 0; i < 1000 && g.signalTree(syscall.SIGKILL) > 0; i++ {
	}
}

// parseStatus parses one status line of the guard: its kind ('P', 'E', 'X')
// and integer fields.
func parseStatus(line string) (kind byte, fields []int64, ok bool) {
	parts := strings.Fields(line)
	if len(parts) == 0 || len(parts[0]) != 1 {
		return 0, nil, false
	}
	for _, p := range parts[1:] {
		n, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return 0, nil, false
		}
		fields = append(fields, n)
	}
	return parts[0][0], fields, true
}
