package proc

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
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

// SnapshotEvery is how often a Supervisor records the descendants of a
// running process, so that tools in process groups of their own are still
// found and killed after the process that started them is gone.
const SnapshotEvery = time.Second

// ReapWait bounds the wait for the last processes of a tree after SIGKILL
// (Supervisor.Wait).
const ReapWait = 2 * time.Second

// Spec is a command for Launch.
type Spec struct {
	Path string
	Args []string // not including argv[0]
	Dir  string   // working directory; "" for this process's
	Env  []string // the whole environment, K=V
	// Stdin, when not nil, is written to the process's stdin, which is then
	// closed. When nil, stdin is /dev/null: never inherited.
	Stdin []byte
	// Grace is the time between SIGTERM and SIGKILL in Stop; 0 sends
	// SIGKILL right after SIGTERM.
	Grace time.Duration
	// StderrTail is how many of the last stderr bytes Exit.Stderr keeps;
	// 0 means DefaultStderrTail.
	StderrTail int
	// Marker, Orphans and Sole are Group's fields of the same names: an
	// environment entry in Env unique to this process's tree, whether this
	// process is a child subreaper that takes the tree's orphans, and
	// whether it runs no other children.
	Marker  string
	Orphans bool
	Sole    bool
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
	// cause), nil when it exited before any was acted on.
	Cause error
}

// Supervisor runs one process as the leader of its own process group and
// owns it and every process it starts until they are all gone: it follows
// the descendants (Group.Snapshot every SnapshotEvery, and the run's marker
// at every stop), stops the whole tree on request (SIGTERM, Spec.Grace,
// SIGKILL), reaps, and reports one Exit. It keeps a tail of stderr; stdout
// is the caller's to read (Stdout).
//
// Stop, Kill, Stopped, Exited, StderrSoFar and PID are safe for concurrent
// use; Wait must be called exactly once, after Stdout has been read to its
// end (or abandoned).
type Supervisor struct {
	g      *Group
	cmd    *exec.Cmd
	stdout *pipeReader
	stderr *pipeReader
	tail   *Tail
	grace  time.Duration

	mu      sync.Mutex
	cause   error         // the first Stop or Kill cause
	stopReq chan struct{} // closed by the first Stop or Kill
	killReq chan struct{} // closed by the first Kill
	sent    atomic.Int32  // the last signal sent to the leader, 0 if none
	acted   atomic.Bool   // a stop signal went out before the process exited

	exited chan struct{} // closed once the leader has been waited for
	done   sync.WaitGroup
}

// Launch starts spec as a new process group (see Start: Setpgid, and
// Pdeathsig SIGKILL should this process die) with its stdout and stderr on
// pipes, and begins supervising it. The error is exec's, for a process that
// could not be started; nothing is left running then.
func Launch(spec Spec) (*Supervisor, error) {
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir, cmd.Env = spec.Dir, spec.Env
	if spec.Stdin != nil {
		cmd.Stdin = bytes.NewReader(spec.Stdin)
	}
	// Real pipes, read here rather than by os/exec's copy goroutines: Wait
	// then never waits on (or, after WaitDelay, cuts off) output that a
	// slow consumer has not read yet.
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		stdoutR.Close()
		stdoutW.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = stdoutW, stderrW
	cmd.WaitDelay = PipeDrain // bounds only the stdin copy when Stdin is set
	g, err := Start(cmd)
	stdoutW.Close()
	stderrW.Close()
	if err != nil {
		stdoutR.Close()
		stderrR.Close()
		return nil, err
	}
	g.Orphans, g.Sole, g.Marker = spec.Orphans, spec.Sole, spec.Marker
	tail := spec.StderrTail
	if tail <= 0 {
		tail = DefaultStderrTail
	}
	s := &Supervisor{
		g: g, cmd: cmd, grace: max(spec.Grace, 0),
		stdout: newPipeReader(stdoutR), stderr: newPipeReader(stderrR),
		tail:    &Tail{Max: tail},
		stopReq: make(chan struct{}), killReq: make(chan struct{}), exited: make(chan struct{}),
	}
	s.done.Add(3)
	go s.stopper()
	go s.waiter()
	go func() {
		defer s.done.Done()
		_, _ = io.Copy(s.tail, s.stderr)
	}()
	return s, nil
}

// PID is the leader's pid, which is also the process group id.
func (s *Supervisor) PID() int { return s.g.PGID }

// Stdout is the process's stdout. Until the process exits it blocks like any
// pipe; after that it returns only what the pipe still holds and then
// io.EOF, whatever still holds the pipe open (a detached grandchild). Read it
// from one goroutine.
func (s *Supervisor) Stdout() io.Reader { return s.stdout }

// StderrSoFar returns the stderr tail kept so far.
func (s *Supervisor) StderrSoFar() string { return s.tail.String() }

// Exited is closed once the leader has exited and been waited for.
func (s *Supervisor) Exited() <-chan struct{} { return s.exited }

// Stop asks for the whole tree to be stopped: SIGTERM to the group and every
// descendant seen, then SIGKILL after Spec.Grace unless the leader exited.
// The first cause of Stop or Kill is the one Exit reports. It does not block
// and is a no-op once the process has exited or a stop is under way.
func (s *Supervisor) Stop(cause error) { s.request(cause, false) }

// Kill is Stop without the grace period: SIGKILL at once, also during a
// Stop's grace period.
func (s *Supervisor) Kill(cause error) { s.request(cause, true) }

func (s *Supervisor) request(cause error, kill bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cause == nil {
		s.cause = cause
		close(s.stopReq)
	}
	if kill {
		select {
		case <-s.killReq:
		default:
			close(s.killReq)
		}
	}
}

// Stopped reports whether a stop signal went out to the process before it
// exited.
func (s *Supervisor) Stopped() bool { return s.acted.Load() }

// stopper records descendants while the leader runs and carries out the
// first stop request.
func (s *Supervisor) stopper() {
	defer s.done.Done()
	tick := time.NewTicker(SnapshotEvery)
	defer tick.Stop()
wait:
	select {
	case <-s.exited:
		return
	case <-tick.C:
		s.g.Snapshot()
		goto wait
	case <-s.stopReq:
	}
	select {
	case <-s.exited: // exited on its own at the same moment
		return
	default:
	}
	s.acted.Store(true)
	sig := syscall.SIGTERM
	select {
	case <-s.killReq:
		sig = syscall.SIGKILL
	default:
	}
	// The group and the descendants already recorded at once, and the
	// grace period starts; then those a fresh walk of /proc (and of the
	// marker) finds. The walks take milliseconds: they delay neither the
	// polite signal nor the SIGKILL.
	_ = s.g.Signal(sig)
	s.sent.Store(int32(sig))
	t := time.NewTimer(s.grace)
	defer t.Stop()
	s.g.Snapshot()
	s.g.SnapshotMarked()
	s.g.SignalNew(sig)
	select {
	case <-s.exited:
	case <-t.C:
	case <-s.killReq:
	}
	_ = s.g.Signal(syscall.SIGKILL)
	s.g.Snapshot()
	s.g.SignalNew(syscall.SIGKILL)
	select {
	case <-s.exited:
	default:
		s.sent.Store(int32(syscall.SIGKILL))
	}
}

// waiter reaps the leader; what is left of its group and the descendants
// seen are orphans of a finished process, so it kills them; then it lets
// the pipe readers drain what the pipes still hold.
func (s *Supervisor) waiter() {
	defer s.done.Done()
	_ = s.cmd.Wait() // the exit status comes from ProcessState
	close(s.exited)
	if s.g.Orphans {
		s.g.Snapshot() // the leader's orphans are children of this process now
	}
	s.g.SnapshotMarked() // and those re-parented to init
	_ = s.g.Signal(syscall.SIGKILL)
	s.stdout.agentExited()
	s.stderr.agentExited()
}

// Wait blocks until the leader has exited, stderr is drained and every
// process of the tree is gone (SIGKILLed and waited for, up to 2 s), then
// closes the pipes and returns the Exit record. Call it once, after reading
// Stdout to io.EOF.
func (s *Supervisor) Wait() Exit {
	s.done.Wait()
	s.g.Reap(ReapWait)
	s.stdout.f.Close()
	s.stderr.f.Close()
	code, sig := ExitStatus(s.cmd.ProcessState)
	if sent := syscall.Signal(s.sent.Load()); sig == "" && sent != 0 && code != nil && *code == 128+int(sent) {
		sig = unix.SignalName(sent)
	}
	var cause error
	if s.acted.Load() {
		s.mu.Lock()
		cause = s.cause
		s.mu.Unlock()
	}
	return Exit{Code: code, Signal: sig, Stderr: s.tail.String(), Cause: cause}
}

// pipeReader reads one of the process's output pipes. Until the process
// exits it blocks like any pipe. After agentExited it returns only what is
// still queued in the pipe (FIONREAD): everything the process wrote before
// it exited is there, however slowly the caller reads, and the stream ends
// (io.EOF) as soon as the pipe is empty, whatever still holds it open or
// keeps writing to it (a detached grandchild). A read already waiting when
// the process exits gives up after PipeDrain.
type pipeReader struct {
	f      *os.File
	rc     syscall.RawConn
	exited atomic.Bool
}

func newPipeReader(f *os.File) *pipeReader {
	// SyscallConn, not Fd: Fd would switch the pipe to blocking mode and
	// disable read deadlines.
	rc, _ := f.SyscallConn()
	return &pipeReader{f: f, rc: rc}
}

func (p *pipeReader) agentExited() {
	p.exited.Store(true)
	_ = p.f.SetReadDeadline(time.Now().Add(PipeDrain)) // a read waiting now
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
	if p.exited.Load() {
		q := p.queued()
		if q == 0 {
			return 0, io.EOF
		}
		if q > 0 {
			// Data is queued: this read cannot block, and the deadline
			// agentExited set for a waiting read must not cut it off.
			b = b[:min(len(b), q)]
			_ = p.f.SetReadDeadline(time.Time{})
		}
	}
	n, err := p.f.Read(b)
	if errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, os.ErrClosed) {
		return n, io.EOF
	}
	return n, err
}
