package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// holder is the start of a script whose process leaves a grandchild on
// its terminal, running cmd with SIGHUP and SIGTERM ignored: the script
// goes on once the grandchild has set them (else the SIGHUP of the
// process's exit can come first). pid returns the grandchild's pid.
func holder(t *testing.T, cmd string) (script string, pid func() int) {
	f := filepath.Join(t.TempDir(), "pid")
	script = fmt.Sprintf(`sh -c 'trap "" HUP TERM; echo $$ >%[1]s.tmp; mv %[1]s.tmp %[1]s; %[2]s' &
while [ ! -e %[1]s ]; do sleep 0.01; done
`, f, cmd)
	return script, func() int {
		b, err := os.ReadFile(f)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || n <= 0 {
			t.Fatalf("grandchild pid %q: %v", b, err)
		}
		return n
	}
}

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
// terminal open (the grace period of an hour keeps it; a Kill then takes
// it).
func TestTTYDrainAfterExit(t *testing.T) {
	t.Parallel()
	const size = 4000 // under what a pseudo-terminal holds (its line discipline's 4 KiB and more)
	script, grandchild := holder(t, `exec sleep 300`)
	s := launchTTY(t, script+`head -c `+strconv.Itoa(size)+` /dev/zero | tr '\0' x; echo END`, time.Hour, nil)
	<-s.Exited()
	out, err := io.ReadAll(s.Stdout())
	pid := grandchild()
	holding := Running(pid) // the grace period keeps it: no EIO ended the stream
	s.Kill(errors.New("test kill"))
	exit := s.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("x", size) + "END\n"; string(out) != want {
		t.Errorf("stdout = %d bytes ending %q, want %d bytes ending END", len(out), out[max(0, len(out)-10):], len(want))
	}
	if exit.Code == nil || *exit.Code != 0 {
		t.Errorf("Exit = %+v, want exit 0", exit)
	}
	if !holding || !gone(pid) {
		t.Errorf("grandchild %d: running when the stream ended %v, gone after Wait %v; want both", pid, holding, gone(pid))
	}
}

// TestTTYEndsDespiteWriter: a grandchild that ignores SIGHUP and SIGTERM
// and writes without pause to the terminal does not hold the stream open
// after the process exited: it ends (at most ttyDrainMax bytes after the
// exit) while the writer still runs — the grace period is an hour — and a
// Kill then takes the writer.
func TestTTYEndsDespiteWriter(t *testing.T) {
	t.Parallel()
	script, grandchild := holder(t, `exec yes late`)
	s := launchTTY(t, script+`echo END`, time.Hour, nil)
	out, err := io.ReadAll(s.Stdout())
	pid := grandchild()
	writing := Running(pid)
	s.Kill(errors.New("test kill"))
	exit := s.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte("END\n")) {
		t.Errorf("no END in stdout (%d bytes)", len(out))
	}
	if !writing {
		t.Errorf("the writer %d was gone when the stream ended: the end was not the drain's", pid)
	}
	if exit.Code == nil || *exit.Code != 0 || !gone(pid) {
		t.Errorf("Exit = %+v, writer %d gone: %v; want exit 0 and the writer gone after the Kill", exit, pid, gone(pid))
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
