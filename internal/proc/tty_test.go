package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

func launchTTY(t *testing.T, script string, grace time.Duration, stdin []byte) *Supervisor {
	t.Helper()
	s, err := Launch(Spec{Path: "/bin/sh", Args: []string{"-c", script}, Env: os.Environ(), Grace: grace, TTY: true, Stdin: stdin})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTTYTerminals: under Spec.TTY the process's stdout and stderr are two
// terminals, the stdout one its controlling terminal (/dev/tty), of
// TTYCols × TTYRows with echo off; stdin is not one. Stdout holds the bytes
// as the process wrote them (the terminal's "\r\n" for "\n" undone, its own
// "\r" kept) and stderr comes apart, in Exit.Stderr.
func TestTTYTerminals(t *testing.T) {
	t.Parallel()
	script := `
[ -t 0 ] && echo "stdin terminal" || echo "stdin not a terminal"
[ -t 1 ] && echo "stdout terminal"
[ -t 2 ] && echo "stderr terminal" >&2
stty size <&1
stty size <&2
for fd in 1 2; do case " $(stty -a </proc/$$/fd/$fd) " in *" -echo "*) echo "echo off";; *) echo "echo on";; esac; done
[ "/dev/$(ps -o tty= -p $$ | tr -d ' ')" = "$(readlink /proc/$$/fd/1)" ] && echo "controlling terminal is stdout"
[ "$(readlink /proc/$$/fd/1)" != "$(readlink /proc/$$/fd/2)" ] && echo "stderr apart"
printf 'crlf\r\nbare\rcr\n'
printf 'no newline'`
	s := launchTTY(t, script, time.Second, nil)
	out, err := io.ReadAll(s.Stdout())
	exit := s.Wait()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("stdin not a terminal\nstdout terminal\n%[1]d %[2]d\n%[1]d %[2]d\necho off\necho off\ncontrolling terminal is stdout\nstderr apart\ncrlf\r\nbare\rcr\nno newline", TTYRows, TTYCols)
	if string(out) != want {
		t.Errorf("stdout = %q\nwant     %q", out, want)
	}
	if exit.Stderr != "stderr terminal\n" || exit.Code == nil || *exit.Code != 0 {
		t.Errorf("Exit = %+v (code %v), want stderr %q and exit 0", exit, exit.Code, "stderr terminal\n")
	}
}

// TestTTYDrainAfterExit: what the process wrote before it exited is all
// returned, though nothing read it until then (it waited in the terminal's
// buffers), and the stream then ends although a grandchild still holds the
// terminal open.
func TestTTYDrainAfterExit(t *testing.T) {
	t.Parallel()
	const size = 8000 // under what a pseudo-terminal holds (about 15 KiB)
	s := launchTTY(t, `(trap "" HUP; exec sleep 300) & echo $!; head -c `+strconv.Itoa(size)+` /dev/zero | tr '\0' x; echo END`, 0, nil)
	<-s.Exited()
	out, err := io.ReadAll(s.Stdout())
	exit := s.Wait()
	if err != nil {
		t.Fatal(err)
	}
	pid, rest, _ := strings.Cut(string(out), "\n")
	if want := strings.Repeat("x", size) + "END\n"; rest != want {
		t.Errorf("stdout after the pid = %d bytes ending %q, want %d bytes ending END", len(rest), rest[max(0, len(rest)-10):], len(want))
	}
	if exit.Code == nil || *exit.Code != 0 {
		t.Errorf("Exit = %+v, want exit 0", exit)
	}
	if n, err := strconv.Atoi(pid); err != nil || !gone(n) {
		t.Errorf("grandchild %q still alive after Wait (%v)", pid, err)
	}
}

// TestTTYEndsDespiteWriter: a grandchild that ignores SIGHUP and SIGTERM
// and writes without pause to the terminal after the process exited adds
// at most ttyDrainMax bytes to the stream, which ends; Wait returns once
// the grace period's SIGKILL has taken it.
func TestTTYEndsDespiteWriter(t *testing.T) {
	t.Parallel()
	s := launchTTY(t, `(trap "" HUP TERM; exec yes late) & echo $!; echo END`, 100*time.Millisecond, nil)
	pid := readPID(t, s.Stdout())
	out, err := io.ReadAll(s.Stdout())
	exit := s.Wait()
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := bytes.Cut(out, []byte("END\n"))
	if !ok {
		t.Fatalf("no END in stdout (%d bytes)", len(out))
	}
	// The bytes the writer got in before the process's exit are owed too:
	// at most what the terminal holds, well under ttyDrainMax.
	if len(after) > 2*ttyDrainMax {
		t.Errorf("%d bytes after END, want at most about ttyDrainMax (%d)", len(after), ttyDrainMax)
	}
	if exit.Code == nil || *exit.Code != 0 || !gone(pid) {
		t.Errorf("Exit = %+v, grandchild %d gone: %v; want exit 0 and the writer gone", exit, pid, gone(pid))
	}
}

// TestTTYStopsTree: a stop reaches the whole tree of a terminal's session:
// the process ignores SIGTERM, a grandchild in a session of its own holds
// the terminal and ignores SIGTERM and SIGHUP; after the grace period both
// are SIGKILLed and Wait returns once they are gone, with the stop's cause.
func TestTTYStopsTree(t *testing.T) {
	t.Parallel()
	s := launchTTY(t, `trap "" TERM; setsid sh -c 'trap "" TERM HUP; echo $$; exec sleep 300' & sleep 300 & wait`, 200*time.Millisecond, nil)
	child := readPID(t, s.Stdout())
	cause := errors.New("test stop")
	s.Stop(cause)
	_, _ = io.Copy(io.Discard, s.Stdout())
	exit := s.Wait()
	if exit.Cause != cause || exit.Signal != "SIGKILL" {
		t.Errorf("Exit = %+v, want SIGKILL (SIGTERM ignored) with the stop's cause", exit)
	}
	if !gone(child) || !gone(s.PID()) {
		t.Errorf("after Wait: grandchild %d gone %v, process %d gone %v; want both gone", child, gone(child), s.PID(), gone(s.PID()))
	}
	if left := Descendants(s.PID()); len(left) > 0 {
		t.Errorf("descendants %v left", left)
	}
}

// TestTTYStdin: Spec.Stdin still arrives on a pipe: a single line far over
// a terminal's 4096-byte canonical line arrives whole, then EOF.
func TestTTYStdin(t *testing.T) {
	t.Parallel()
	in := append(bytes.Repeat([]byte("p"), 100_000), '\n')
	s := launchTTY(t, `[ -t 0 ] || wc -c`, time.Second, in)
	out, _ := io.ReadAll(s.Stdout())
	s.Wait()
	if got := strings.TrimSpace(string(out)); got != strconv.Itoa(len(in)) {
		t.Errorf("the process read %q bytes of stdin, want %d", got, len(in))
	}
}

// TestTTYNoLeak: a run in terminal mode leaves no file descriptor open.
func TestTTYNoLeak(t *testing.T) {
	before := openFDs(t)
	for range 3 {
		s := launchTTY(t, `echo hi; echo err >&2`, time.Second, nil)
		_, _ = io.ReadAll(s.Stdout())
		s.Wait()
	}
	if after := openFDs(t); after > before {
		t.Errorf("%d open fds after 3 runs, %d before", after, before)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// TestONLCRReader: every "\r\n" becomes "\n", whatever the reads' sizes;
// other carriage returns stay, a last one too.
func TestONLCRReader(t *testing.T) {
	cases := map[string]string{
		"a\r\nb\r\n":   "a\nb\n",
		"a\r\r\nb":     "a\r\nb",
		"x\ry\r":       "x\ry\r",
		"\r":           "\r",
		"\r\r\r\n\n\r": "\r\r\n\n\r",
		"":             "",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		b := make([]byte, rng.IntN(3000))
		for i := range b {
			b[i] = "ab\r\n"[rng.IntN(4)]
		}
		cases[string(b)] = strings.ReplaceAll(string(b), "\r\n", "\n")
	}
	for in, want := range cases {
		for name, r := range map[string]io.Reader{
			"whole":   strings.NewReader(in),
			"bytes":   iotest.OneByteReader(strings.NewReader(in)),
			"halves":  iotest.HalfReader(strings.NewReader(in)),
			"dataerr": iotest.DataErrReader(strings.NewReader(in)),
		} {
			got, err := io.ReadAll(newONLCRReader(r))
			if err != nil || string(got) != want {
				t.Fatalf("%s: undo(%q) = %q, %v; want %q", name, in, got, err, want)
			}
		}
	}
}
