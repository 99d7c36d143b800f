package proc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// DefaultStderrTail is how much of a process's stderr a Supervisor keeps
// when Spec.StderrTail is 0: the last 64 KiB.
const DefaultStderrTail = 64 << 10

// PipeDrain bounds a read of stdout or stderr that was already waiting when
// the process exited (see Supervisor.Stdout), and the copy of Spec.Stdin.
const PipeDrain = time.Second

// ReapWait bounds the wait for the last processes of a tree after the
// grace period (Supervisor.Wait).
const ReapWait = 2 * time.Second

// Spec is a command for Launch.
type Spec struct {
	Path string   // the program: a path, or a name looked up in PATH
	Args []string // not including argv[0]
	Dir  string   // working directory; "" for this process's
	Env  []string // the whole environment, K=V
	// Stdin, when not nil, is written to the process's stdin, which is then
	// closed. When nil, stdin is /dev/null: never inherited.
	Stdin []byte
	// StdinPipe, with Stdin nil, makes the process's stdin a pipe that
	// stays open: the caller writes to it through Supervisor.Stdin (a
	// protocol spoken over stdin and stdout, ACP) and closes it when done;
	// Wait closes it too. A write after the process has gone fails (EPIPE).
	StdinPipe bool
	// Interrupt, when not nil, is how a Stop asks the process first to
	// stop on its own terms (ACP's session/cancel): Stop calls it once, on
	// a goroutine of its own, and, when it reports that it asked, sends the
	// SIGTERM Grace later if the process has not exited by then (a Stop
	// then takes up to twice Grace before the SIGKILL); when it did not
	// ask (nothing to cancel), the SIGTERM follows at once. Kill does not
	// call it.
	Interrupt func() (asked bool)
	// Grace is the time between SIGTERM and SIGKILL in a stop, for every
	// process of the tree; 0 sends SIGKILL right after SIGTERM.
	Grace time.Duration
	// StderrTail is how many of the last stderr bytes Exit.Stderr keeps;
	// 0 means DefaultStderrTail.
	StderrTail int
	// Stderr, when not nil, is also given every byte of stderr as it
	// arrives, from one goroutine, until the pipe ends; Wait returns only
	// after its last Write. A Write that blocks holds up the reading of
	// stderr (and so, once the pipe is full, the process's writes to it);
	// its error is ignored.
	Stderr io.Writer
	// TTY runs the process on pseudo-terminals (creack/pty): its stdout
	// and its stderr are each a terminal of TTYCols × TTYRows with echo
	// off, the stdout one its controlling terminal; stdin stays as above.
	// Stdout and the stderr tail are still the bytes the process wrote
	// (the terminal's "\r\n" for "\n" undone), and stops, kills and the
	// end of the output after the exit are as with pipes; see tty.go.
	TTY bool
	// Orphans says this process is a child subreaper (BecomeSubreaper)
	// that starts no children but through Launch: should a guard die
	// before its tree is gone (an agent can SIGKILL its parent), the
	// tree's orphans are re-parented here, and Wait SIGKILLs every child
	// of this process that is not a live guard, and its descendants.
	Orphans bool
}

// Exit is how a supervised process ended.
type Exit struct {
	// Code is the exit status, nil when a signal ended the process.
	Code *int
	// Signal names the signal that ended it ("SIGTERM"), "" if none. A
	// process that caught hub's signal n and exited with status 128+n
	// (Claude Code exits 143 on SIGTERM) is reported as ended by n.
	Signal string
	// Stderr is the last Spec.StderrTail bytes of its stderr.
	Stderr string
	// Cause is why the Supervisor signalled it (the first Stop or Kill
	// cause), nil when it exited before any was asked for.
	Cause error
}

// Supervisor runs one process and owns it and every process it starts
// until they are all gone. Its guard (see guard.go) is the process's
// parent: a child subreaper that holds the whole tree, stops it on request
// (SIGTERM to each process once, Spec.Grace for all, then SIGKILL), stops
// what the process leaves behind when it exits, and stops everything should
// this process die, even by SIGKILL. The Supervisor keeps a tail of
// stderr; stdout is the caller's to read (Stdout).
//
// Stop, Kill, Stopped, Exited, StderrSoFar and PID are safe for concurrent
// use; Wait must be called exactly once, after Stdout has been read to its
// end (or abandoned).
type Supervisor struct {
	cmd    *exec.Cmd // the guard
	pid    int       // the supervised process
	orphan bool
	grace  time.Duration
	ctl    *os.File // the control pipe's write end
	status *bufio.Reader
	stdout *pipeReader
	stderr *pipeReader
	out    io.Reader // stdout as Stdout gives it
	tail   *Tail
	stdin  *os.File // the write end of Spec.StdinPipe, nil without
	// interrupt is Spec.Interrupt, nil once called.
	interrupt func() bool

	mu      sync.Mutex
	cause   error // the first Stop or Kill cause
	asked   bool  // a Stop or Kill was sent before the exit was known
	killed  bool  // a Kill was sent
	ws      syscall.WaitStatus
	lastSig syscall.Signal // the last signal the guard sent the process

	pidfd     int           // the process's pidfd, -1 if none
	exitOnce  sync.Once     // markExited
	exited    chan struct{} // closed once the process has been waited for
	guardDone chan struct{} // closed once the guard has exited and been waited for
	done      sync.WaitGroup
}

// guardExe is what Launch executes as the guard: the running binary.
const guardExe = "/proc/self/exe"

// guardStartWait bounds the wait for a new guard's first report: it is
// this program starting again, then a fork and an exec.
const guardStartWait = 30 * time.Second

// ErrGuard is the error of a Launch whose guard could not be started or
// did not report (is: errors.Is). The program cannot exec /proc/self/exe,
// /proc is not mounted, or the system is out of processes: it is not the
// supervised program's fault.
var ErrGuard = errors.New("proc: the process guard failed")

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// teeWriter writes to the tail and then to the caller's writer, whose
// error is ignored (io.MultiWriter would stop at it).
type teeWriter struct{ tail, w io.Writer }

func (t teeWriter) Write(p []byte) (int, error) {
	_, _ = t.tail.Write(p)
	_, _ = t.w.Write(p)
	return len(p), nil
}

// Launch starts spec under a guard (see Supervisor) with its stdout and
// stderr on pipes (on pseudo-terminals with Spec.TTY), stdin from
// Spec.Stdin or /dev/null, in a session and process group of its own, and
// begins supervising it. The error is an *exec.Error when Spec.Path is not
// found in PATH, an *fs.PathError (Op "fork/exec") when the program cannot
// be executed (EACCES, ENOEXEC, …), an error opening a pseudo-terminal
// (Spec.TTY), or the guard's own failure; nothing is left running then.
func Launch(spec Spec) (*Supervisor, error) {
	path := spec.Path
	if !strings.ContainsRune(path, '/') {
		lp, err := exec.LookPath(path)
		if err != nil {
			return nil, err
		}
		path = lp
	}
	var files []*os.File
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			files = append(files, r, w)
		}
		return r, w, err
	}
	output := pipe
	if spec.TTY {
		output = func() (r, w *os.File, err error) {
			r, w, err = openTTY()
			if err == nil {
				files = append(files, r, w)
			}
			return r, w, err
		}
	}
	stdoutR, stdoutW, err1 := output()
	if err1 == nil && !spec.TTY {
		growPipe(stdoutR)
	}
	stderrR, stderrW, err2 := output()
	ctlR, ctlW, err3 := pipe()
	statusR, statusW, err4 := pipe()
	var stdinR, stdinW *os.File
	var err5 error
	if spec.StdinPipe && spec.Stdin == nil {
		stdinR, stdinW, err5 = pipe()
	}
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		closeAll()
		return nil, err
	}
	cmd := guardCommand(spec, path, []*os.File{ctlR, statusW, stdoutW, stderrW})
	if stdinR != nil {
		cmd.Stdin = stdinR // an *os.File: the guard's own fd 0, no copy
	}
	if err := guards.start(cmd); err != nil {
		closeAll()
		return nil, fmt.Errorf("%w: starting %s: %w", ErrGuard, guardExe, err)
	}
	if stdinR != nil {
		stdinR.Close()
	}
	stdoutW.Close()
	stderrW.Close()
	ctlR.Close()
	statusW.Close()
	tail := spec.StderrTail
	if tail <= 0 {
		tail = DefaultStderrTail
	}
	s := &Supervisor{
		cmd: cmd, orphan: spec.Orphans, grace: max(spec.Grace, 0), ctl: ctlW, status: bufio.NewReader(statusR),
		stdout: newPipeReader(stdoutR, spec.TTY), stderr: newPipeReader(stderrR, spec.TTY), tail: &Tail{Max: tail},
		exited: make(chan struct{}), guardDone: make(chan struct{}), pidfd: -1,
		stdin: stdinW, interrupt: spec.Interrupt,
	}
	s.out = s.stdout
	var errOut io.Reader = s.stderr
	if spec.TTY {
		s.out, errOut = newONLCRReader(s.stdout), newONLCRReader(s.stderr)
	}
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		var w io.Writer = s.tail
		if spec.Stderr != nil {
			w = teeWriter{s.tail, spec.Stderr}
		}
		_, _ = io.Copy(w, errOut)
	}()
	kind, fields := s.firstReport(statusR)
	if kind != 'P' || len(fields) != 1 {
		return nil, s.notStarted(path, kind, fields, statusR)
	}
	s.pid = int(fields[0])
	if fd, err := unix.PidfdOpen(s.pid, 0); err == nil {
		s.pidfd = fd
	}
	go s.follow(statusR)
	return s, nil
}

// startPoll is how often Launch looks at a guard that has not reported yet.
const startPoll = 50 * time.Millisecond

// firstReport waits for the guard's first report (kind 0 when none came
// within guardStartWait). It is bounded: a guard that cannot run, or that
// a process stopped, must not hold the caller.
//
// The process the guard just started can SIGSTOP it (its parent, same
// user) before the guard has written its report; on a busy machine the
// guard may not have run since the fork. Left alone, Launch would wait
// guardStartWait whatever the run's --timeout, and a hub SIGKILLed
// meanwhile would leave the stopped guard and its tree behind. So a guard
// seen stopped is sent SIGCONT, and its pid is read from the guard's
// children (the one leading a session of its own): the run goes on as if
// the guard had reported, and should the guard stay stopped, the next Stop
// or Kill finds it unresponsive and takes over (takeOver). Its report, when
// it comes, is the same pid and is ignored (follow reads only exits).
func (s *Supervisor) firstReport(statusR *os.File) (kind byte, fields []int64) {
	type report struct {
		kind   byte
		fields []int64
	}
	got := make(chan report, 1)
	go func() {
		k, f, _ := s.readStatus()
		got <- report{k, f}
	}()
	// stopReading ends the read above (a report is one write of a short
	// line: atomic on a pipe, so none is cut in two) and returns what it
	// read, if anything.
	stopReading := func() report {
		_ = statusR.SetReadDeadline(time.Now())
		r := <-got
		_ = statusR.SetReadDeadline(time.Time{})
		return r
	}
	guard := s.cmd.Process.Pid
	deadline := time.NewTimer(guardStartWait)
	defer deadline.Stop()
	tick := time.NewTicker(startPoll)
	defer tick.Stop()
	for {
		select {
		case r := <-got:
			return r.kind, r.fields
		case <-deadline.C:
			r := stopReading()
			return r.kind, r.fields
		case <-tick.C:
			if st, ok := readStat(guard); !ok || !st.stopped {
				continue
			}
			_ = s.cmd.Process.Signal(syscall.SIGCONT)
			leader, ok := sessionLeaderChild(guard)
			if !ok {
				continue // stopped before it forked: SIGCONT, and wait on
			}
			if r := stopReading(); r.kind != 0 {
				return r.kind, r.fields
			}
			return 'P', []int64{int64(leader)}
		}
	}
}

// sessionLeaderChild returns the child of guard that leads a session of its
// own (the process the guard started with setsid; an orphan re-parented to
// the guard could lead one too, so the oldest is taken).
func sessionLeaderChild(guard int) (int, bool) {
	kids, _ := children(guard)
	best, found := procInfo{}, false
	for _, c := range kids {
		p, ok := readStat(c)
		if ok && p.ppid == guard && p.sid == c && (!found || p.start < best.start) {
			best, found = p, true
		}
	}
	return best.pid, found
}

// stdoutPipeSize is the size hub asks for the agent's stdout pipe: an
// agent that writes faster than hub reads fills 1 MiB, not the default 64
// KiB, before it waits, so that it and hub take turns less often.
const stdoutPipeSize = 1 << 20

// growPipe asks for a pipe of stdoutPipeSize (F_SETPIPE_SZ), when that
// costs the user's other pipes nothing (pipeGrowFree). It is only a hint:
// past /proc/sys/fs/pipe-max-size the pipe keeps its size.
func growPipe(r *os.File) {
	if !pipeGrowFree() {
		return
	}
	rc, err := r.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_, _ = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, stdoutPipeSize)
	})
}

// GrowPipe grows f to the size of an agent's stdout pipe (see growPipe)
// when f is a pipe (FIFO), as `hub replay -` reads its stdin: a writer
// then fills 1 MiB, not 64 KiB, before it and hub take turns. Anything
// else, and a pipe hub may not grow, is left as it is.
func GrowPipe(f *os.File) {
	if st, err := f.Stat(); err == nil && st.Mode()&os.ModeNamedPipe != 0 {
		growPipe(f)
	}
}

// pipeGrowFree reports whether hub may enlarge pipes without harm. Linux
// counts the pages of all the pipes a user holds against
// fs.pipe-user-pages-soft (16384 pages by default); past it, every new pipe
// of that user, any program's, gets 8 KiB instead of 64 KiB. 1 MiB pipes
// would reach it at about 50 runs at once (hub batch). A process with
// CAP_SYS_RESOURCE or CAP_SYS_ADMIN is not counted, nor is anyone when
// the limit is 0 (see pipe(7), "/proc/sys/fs/pipe-user-pages-soft").
var pipeGrowFree = sync.OnceValue(func() bool {
	if b, err := os.ReadFile("/proc/sys/fs/pipe-user-pages-soft"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return true
	}
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			const sysAdmin, sysResource = 21, 24
			return err == nil && caps&(1<<sysAdmin|1<<sysResource) != 0
		}
	}
	return false
})

// guardCommand is the guard's command for spec (path resolved), with extra
// (the control pipe's read end, the status pipe's write end, the agent's
// stdout and stderr) as fds 3 to 6.
func guardCommand(spec Spec, path string, extra []*os.File) *exec.Cmd {
	cmd := exec.Command(guardExe)
	cmd.Args = append([]string{guardArg0, path}, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = append(append([]string(nil), spec.Env...), guardEnv+"="+strconv.FormatInt(int64(max(spec.Grace, 0)), 10))
	if spec.TTY {
		cmd.Env = append(cmd.Env, guardTTYEnv+"=1")
	}
	if spec.Stdin != nil {
		cmd.Stdin = bytes.NewReader(spec.Stdin)
	}
	// The guard's own stdout and stderr are /dev/null: the init functions of
	// this program's packages run in it too, and what they print must not
	// reach the agent's streams.
	cmd.ExtraFiles = extra // ctlFD, statusFD, outFD, errFD
	// WaitDelay bounds only the stdin copy when Stdin is set.
	cmd.WaitDelay = PipeDrain
	// Its own process group: a Ctrl-C at the terminal reaches hub, which
	// decides; the guard's fate is the control pipe's.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// notStarted cleans up after a guard whose first report (kind, fields) is
// not that the process started: the guard has exited, or is about to, or
// does not answer (then it is killed). It returns Launch's error.
func (s *Supervisor) notStarted(path string, kind byte, fields []int64, statusR *os.File) error {
	if kind != 'E' {
		s.takeOver()
	}
	s.ctl.Close()
	s.stdout.agentExited()
	s.stderr.agentExited()
	_ = s.cmd.Wait()
	guards.remove(s.cmd.Process.Pid)
	s.done.Wait()
	s.stdout.f.Close()
	s.stderr.f.Close()
	statusR.Close()
	if kind == 'E' && len(fields) == 1 {
		return &fs.PathError{Op: "fork/exec", Path: path, Err: syscall.Errno(fields[0])}
	}
	return fmt.Errorf("%w to start %s: %s", ErrGuard, path, cmpOr(strings.TrimSpace(s.tail.String()), "no report within "+guardStartWait.String()))
}

// readStatus reads one line of the guard's status pipe; kind is 0 at its
// end.
func (s *Supervisor) readStatus() (kind byte, fields []int64, ok bool) {
	line, err := s.status.ReadString('\n')
	if err != nil {
		return 0, nil, false
	}
	return parseStatus(line)
}

// follow reads the guard's reports until it exits: the process's exit
// (then stdout and stderr end once drained), and the end of the tree.
func (s *Supervisor) follow(statusR *os.File) {
	for {
		kind, fields, ok := s.readStatus()
		if !ok {
			break
		}
		// Only an exit that really happened: the process can open the
		// guard's status pipe (/proc/<guard>/fd, as root) and write a
		// forged line; its pidfd says whether it is gone.
		if kind == 'X' && len(fields) == 2 && s.gone() {
			s.markExited(syscall.WaitStatus(uint32(fields[0])), syscall.Signal(fields[1]))
		}
	}
	statusR.Close()
	select {
	case <-s.exited:
	default:
		// The guard ended without a (true) report of the exit: it was
		// killed (an agent can SIGKILL its parent), and the process with
		// it (Pdeathsig SIGKILL), which this waits for.
		if s.pidfd >= 0 {
			_ = unix.PidfdSendSignal(s.pidfd, syscall.SIGKILL, nil, 0)
			fds := []unix.PollFd{{Fd: int32(s.pidfd), Events: unix.POLLIN}}
			_, _ = unix.Poll(fds, int(ReapWait.Milliseconds()))
		}
		s.markExited(syscall.WaitStatus(syscall.SIGKILL), 0)
	}
	_ = s.cmd.Wait()
	guards.remove(s.cmd.Process.Pid)
	if s.pidfd >= 0 {
		unix.Close(s.pidfd)
	}
	close(s.guardDone)
}

// gone reports whether the process has exited, from its pidfd (readable
// once it has); true when there is no pidfd to ask.
func (s *Supervisor) gone() bool {
	if s.pidfd < 0 {
		return true
	}
	fds := []unix.PollFd{{Fd: int32(s.pidfd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err != nil || n > 0
}

// markExited records the process's exit, the first time only, and lets
// stdout and stderr end once drained.
func (s *Supervisor) markExited(ws syscall.WaitStatus, lastSig syscall.Signal) {
	s.exitOnce.Do(func() {
		s.mu.Lock()
		s.ws, s.lastSig = ws, lastSig
		s.mu.Unlock()
		close(s.exited)
		s.stdout.agentExited()
		s.stderr.agentExited()
	})
}

// takeOver is for a guard that does not do its job in time — stopped
// (SIGSTOP, a tracer) by the process it guards, or stuck: this process then
// SIGKILLs the guard's tree itself, walking it until no live process is
// left (or ReapWait), and then the guard. Its orphans go to the nearest
// subreaper (see Spec.Orphans).
func (s *Supervisor) takeOver() {
	select {
	case <-s.guardDone:
		return
	default:
	}
	guard := member{pid: s.cmd.Process.Pid, start: startTime(s.cmd.Process.Pid)}
	for deadline := time.Now().Add(ReapWait); time.Now().Before(deadline); time.Sleep(walkEvery) {
		tree := walk(guard.pid)
		if len(tree) == 0 {
			break
		}
		for _, m := range tree {
			send(m, syscall.SIGKILL)
		}
	}
	send(guard, syscall.SIGKILL)
}

// PID is the process's pid, which is also its process group and session id.
func (s *Supervisor) PID() int { return s.pid }

// Stdout is the process's stdout. Until the process exits it blocks like any
// pipe; after that it returns only what the pipe still holds and then
// io.EOF, whatever still holds the pipe open (a detached grandchild); with
// Spec.TTY, what the terminal still holds (see tty.go). Read it from one
// goroutine.
func (s *Supervisor) Stdout() io.Reader { return s.out }

// StderrSoFar returns the stderr tail kept so far.
func (s *Supervisor) StderrSoFar() string { return s.tail.String() }

// Stdin is the process's stdin with Spec.StdinPipe, nil without. Writes
// may come from any goroutine but must not overlap; Close ends the
// process's input (Wait closes it too). Writes block while the pipe is
// full (the process does not read).
func (s *Supervisor) Stdin() io.WriteCloser {
	if s.stdin == nil {
		return nil
	}
	return s.stdin
}

// Exited is closed once the process has exited and been waited for.
func (s *Supervisor) Exited() <-chan struct{} { return s.exited }

// Stop asks for the whole tree to be stopped: SIGTERM to each of its
// processes, then SIGKILL to those left after Spec.Grace. The first cause of
// Stop or Kill is the one Exit reports. It does not block and is a no-op
// once the process has exited or a stop is under way.
//
// Should the guard not report the exit in time (Spec.Grace and ReapWait
// after a Stop, ReapWait after a Kill) — a process of the tree stopped it —
// this process SIGKILLs the guard's tree and the guard itself.
func (s *Supervisor) Stop(cause error) { s.request(cause, 't') }

// Kill is Stop without the grace period: SIGKILL at once, also during a
// Stop's grace period, and to what the process left behind after it
// exited.
func (s *Supervisor) Kill(cause error) { s.request(cause, 'k') }

func (s *Supervisor) request(cause error, c byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.exited:
		// What the process left is being stopped with the grace period:
		// a Kill cuts that short.
		if c == 'k' && !s.killed {
			s.killed = true
			_, _ = s.ctl.Write([]byte{c})
		}
		return
	default:
	}
	if s.cause == nil {
		s.cause = cause
	}
	if s.asked && (c == 't' || s.killed) {
		return
	}
	s.asked = true
	if c == 't' && s.interrupt != nil {
		// Ask first (Spec.Interrupt); the SIGTERM follows after the
		// grace period (at once when it did not ask) unless the process
		// has exited or been killed.
		interrupt := s.interrupt
		s.interrupt = nil
		go func() {
			wait := time.Duration(0)
			if interrupt() {
				wait = s.grace
			}
			time.AfterFunc(wait, func() {
				s.mu.Lock()
				defer s.mu.Unlock()
				select {
				case <-s.exited:
					return
				default:
				}
				if !s.killed {
					s.signal('t')
				}
			})
		}()
		return
	}
	s.signal(c)
}

// signal sends c to the guard ('t' a stop, 'k' a kill) and watches that
// it acts. s.mu is held.
func (s *Supervisor) signal(c byte) {
	s.killed = s.killed || c == 'k'
	_, _ = s.ctl.Write([]byte{c})
	// A guard that a process of the tree stopped (SIGSTOP) can act on it
	// once continued; one stopped again is taken over below. The guard is
	// this process's child, not yet waited for: its pid is still its own.
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	// The guard reports the exit within the grace period (at once after a
	// Kill) unless it cannot act: then this process does its job.
	wait := ReapWait
	if c == 't' {
		wait += s.grace
	}
	time.AfterFunc(wait, func() {
		select {
		case <-s.exited:
		default:
			s.takeOver()
		}
	})
}

// Stopped reports whether a stop was asked for before the process exited.
func (s *Supervisor) Stopped() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked
}

// Wait blocks until the process has exited, stderr is drained and every
// process of the tree is gone (the guard exited; at most the grace period
// and ReapWait more), then closes the pipes and returns the Exit record.
// What the process leaves behind gets SIGTERM when it exits and the grace
// period, as in a stop. Call Wait once, after reading Stdout to io.EOF.
func (s *Supervisor) Wait() Exit {
	<-s.exited
	s.done.Wait() // stderr drained
	t := time.NewTimer(s.grace + ReapWait)
	select {
	case <-s.guardDone:
	case <-t.C:
		// The guard has not emptied the tree: stopped by it, or holding
		// what no one but root may signal.
		s.takeOver()
	}
	t.Stop()
	if s.stdin != nil {
		s.stdin.Close()
	}
	s.ctl.Close()
	s.stdout.f.Close()
	s.stderr.f.Close()
	s.mu.Lock()
	ws, sent, asked, cause := s.ws, s.lastSig, s.asked, s.cause
	s.mu.Unlock()
	if s.orphan {
		sweepOrphans()
	}
	var e Exit
	switch {
	case ws.Signaled():
		e.Signal = unix.SignalName(ws.Signal())
	case ws.Exited():
		c := ws.ExitStatus()
		e.Code = &c
		if sent != 0 && c == 128+int(sent) {
			e.Signal = unix.SignalName(sent)
		}
	}
	if asked {
		e.Cause = cause
	}
	e.Stderr = s.tail.String()
	return e
}

// guards is the set of live guards this process started: a child subreaper
// running nothing but guards tells the orphans of a dead guard by it.
var guards = guardSet{pids: map[int]bool{}}

type guardSet struct {
	mu   sync.Mutex
	pids map[int]bool
}

// start starts cmd (a guard) and records it, under the lock that
// sweepOrphans holds: a guard being started is never taken for an orphan.
func (g *guardSet) start(cmd *exec.Cmd) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	g.pids[cmd.Process.Pid] = true
	return nil
}

func (g *guardSet) remove(pid int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.pids, pid)
}

// SweepOrphans is sweepOrphans for a child subreaper that starts no child
// processes but through Launch (the hub CLI), to call before it exits: what
// a version command or an agent left after SIGKILLing its guard.
func SweepOrphans() { sweepOrphans() }

// sweepOrphans SIGKILLs every child of this process that is not a live
// guard, and their descendants, and reaps those children, for up to
// ReapWait: the orphans of a guard that died, re-parented to this
// subreaper.
func sweepOrphans() {
	self := os.Getpid()
	deadline := time.Now().Add(ReapWait)
	for {
		guards.mu.Lock()
		kids, _ := children(self)
		var left []member
		for _, c := range kids {
			p, ok := readStat(c)
			if !ok || p.ppid != self || guards.pids[c] {
				continue
			}
			if p.zombie {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(c, &ws, syscall.WNOHANG, nil)
				continue
			}
			left = append(append(left, member{pid: c, start: p.start}), walk(c)...)
		}
		guards.mu.Unlock()
		if len(left) == 0 || time.Now().After(deadline) {
			return
		}
		for _, m := range left {
			send(m, syscall.SIGKILL)
		}
		time.Sleep(walkEvery)
	}
}

// pipeReader reads one of the process's output pipes (or, with tty, a
// terminal's master: readTTY, which replaces what follows). Until the process
// exits it blocks like any pipe. After agentExited it returns only the bytes
// that were queued in the pipe at that moment (FIONREAD) and then io.EOF:
// everything the process wrote before it exited, however slowly the caller
// reads, and nothing that a detached grandchild still holding the pipe open
// writes afterwards, however fast. When the count cannot be read, a read
// waiting at the exit gives up after PipeDrain and the stream ends once the
// pipe is empty.
//
// Each read syscall and its accounting run under mu, as agentExited's count
// does: a read either took its bytes out of the pipe before the count (and
// owes nothing) or after it (and is taken off what is owed). Without that,
// a read that returned just before the count but was accounted after it
// was taken off bytes it never read, and the end of the output (the last
// stderr lines) was lost.
type pipeReader struct {
	f       *os.File
	rc      syscall.RawConn
	tty     bool // f is a terminal's master (Spec.TTY): readTTY
	drained int  // bytes readTTY returned after the exit

	mu     sync.Mutex
	exited bool
	left   int64 // bytes still to return after the exit; -1 unknown
}

func newPipeReader(f *os.File, tty bool) *pipeReader {
	// SyscallConn, not Fd: Fd would switch the pipe to blocking mode and
	// disable read deadlines.
	rc, _ := f.SyscallConn()
	return &pipeReader{f: f, rc: rc, tty: tty && rc != nil}
}

func (p *pipeReader) agentExited() {
	if p.tty {
		p.mu.Lock()
		p.exited = true
		p.mu.Unlock()
		_ = p.f.SetReadDeadline(time.Now()) // a read waiting now drains instead
		return
	}
	p.mu.Lock()
	q := p.queued()
	p.left, p.exited = int64(q), true
	p.mu.Unlock()
	if q == 0 {
		_ = p.f.SetReadDeadline(time.Now()) // a read waiting now: nothing more is owed
	} else {
		_ = p.f.SetReadDeadline(time.Now().Add(PipeDrain))
	}
}

// queued returns how many bytes the pipe holds, -1 if unknown.
func (p *pipeReader) queued() int {
	n := -1
	if p.rc != nil {
		_ = p.rc.Control(func(fd uintptr) {
			// TIOCINQ is FIONREAD on Linux: bytes queued for reading.
			if v, err := unix.IoctlGetInt(int(fd), unix.TIOCINQ); err == nil {
				n = v
			}
		})
	}
	return n
}

func (p *pipeReader) Read(b []byte) (int, error) {
	if p.tty {
		return p.readTTY(b)
	}
	if p.rc == nil {
		n, err := p.f.Read(b)
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, os.ErrClosed) {
			return n, io.EOF
		}
		return n, err
	}
	p.mu.Lock()
	owed := p.exited && p.left > 0
	p.mu.Unlock()
	if owed {
		// Owed bytes are queued: this read cannot block, and the deadline
		// agentExited set for a waiting read must not cut it off.
		_ = p.f.SetReadDeadline(time.Time{})
	}
	var n int
	var rerr error
	err := p.rc.Read(func(fd uintptr) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		buf := b
		if p.exited {
			left := p.left
			if left < 0 {
				left = int64(p.queued())
			}
			if left == 0 {
				n, rerr = 0, io.EOF
				return true
			}
			if left > 0 {
				buf = b[:min(int64(len(b)), left)]
			}
		}
		m, e := unix.Read(int(fd), buf)
		switch {
		case e == unix.EAGAIN || e == unix.EINTR:
			return false // wait until the pipe is readable (or the deadline)
		case e != nil:
			n, rerr = 0, e
		case m == 0:
			n, rerr = 0, io.EOF // every write end is closed
		default:
			n = m
			// What more the pipe holds comes in the same read, up to
			// len(buf), as from a file: a caller with a large buffer (the
			// framer) takes a fast agent's output in few reads, and waits
			// no longer than for the first bytes. EAGAIN (nothing more
			// yet), an error or the end stops it; the next read sees
			// the error or the end again.
			for n < len(buf) {
				m, e := unix.Read(int(fd), buf[n:])
				if e != nil || m <= 0 {
					break
				}
				n += m
			}
			if p.exited && p.left > 0 {
				p.left -= int64(n)
			}
		}
		return true
	})
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, os.ErrClosed) {
			return 0, io.EOF
		}
		return 0, err
	}
	return n, rerr
}
