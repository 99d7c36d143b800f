package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
)

// TestGiveUpAfterSaturates: a --timeout or --grace so large that the stall
// watch's sum overflows (2562047h is the largest Duration) means never; it
// gave up at once when the sum wrapped to a negative wait. A real limit
// still gives up stallMargin after timeout+grace, or after grace once ctx
// is done.
func TestGiveUpAfterSaturates(t *testing.T) {
	t.Parallel()
	const huge = time.Duration(math.MaxInt64)
	const never = 100 * 365 * 24 * time.Hour // not within a century
	for _, tc := range []struct {
		name           string
		timeout, grace time.Duration
		cancel         bool          // cancel ctx at the start
		want           time.Duration // when it gives up
	}{
		{"huge timeout", huge, time.Second, false, never},
		{"huge timeout and grace", huge, huge, false, never},
		{"huge grace, cancelled", time.Second, huge, true, never},
		{"timeout", time.Second, 2 * time.Second, false, 3*time.Second + stallMargin},
		{"cancelled", time.Minute, 2 * time.Second, true, 2*time.Second + stallMargin},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				if tc.cancel {
					cancel()
				}
				start := time.Now()
				giveUp, stop := giveUpAfter(ctx, tc.timeout, tc.grace)
				defer stop()
				century := time.NewTimer(never)
				defer century.Stop()
				select {
				case <-giveUp:
					if got := time.Since(start); got != tc.want {
						t.Errorf("giveUpAfter(%s, %s) gave up after %s, want after %s", tc.timeout, tc.grace, got, tc.want)
					}
				case <-century.C:
					if tc.want != never {
						t.Errorf("giveUpAfter(%s, %s) did not give up within %s, want after %s", tc.timeout, tc.grace, never, tc.want)
					}
				}
			})
		})
	}
}

func TestAddSat(t *testing.T) {
	t.Parallel()
	const huge = time.Duration(math.MaxInt64)
	for _, tc := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{nil, 0},
		{[]time.Duration{time.Second, 2 * time.Second}, 3 * time.Second},
		{[]time.Duration{huge, 1}, huge},
		{[]time.Duration{huge - 1, 1}, huge},
		{[]time.Duration{huge / 2, huge / 2, huge / 2}, huge},
	} {
		if got := addSat(tc.in...); got != tc.want {
			t.Errorf("addSat(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// hubProc is a hub process (this test binary as hub) that a test drives.
type hubProc struct {
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	start  time.Time
	done   chan struct{}
}

// startHub starts `hub args…` with stdin (nil: /dev/null).
func startHub(t *testing.T, stdin io.Reader, args ...string) *hubProc {
	t.Helper()
	return startHubWith(t, stdin, nil, args...)
}

// startHubWith is startHub with the process attributes attr (nil: none).
func startHubWith(t *testing.T, stdin io.Reader, attr *syscall.SysProcAttr, args ...string) *hubProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := &hubProc{cmd: exec.Command(exe, args...), stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	h.cmd.Env = append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0")
	h.cmd.Stdin, h.cmd.Stdout, h.cmd.Stderr, h.cmd.SysProcAttr = stdin, h.stdout, h.stderr, attr
	h.start = time.Now()
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	t.Cleanup(func() {
		select {
		case <-h.done:
		default:
			_ = h.cmd.Process.Kill()
			<-h.done
		}
	})
	return h
}

// wait waits up to limit for hub to exit and returns how long it ran; past
// limit it kills hub and fails t.
func (h *hubProc) wait(t *testing.T, limit time.Duration) time.Duration {
	t.Helper()
	select {
	case <-h.done:
		return time.Since(h.start)
	case <-time.After(limit):
		_ = h.cmd.Process.Kill()
		<-h.done
		t.Fatalf("hub %q still running after %s; killed\nstdout: %s\nstderr: %s", h.cmd.Args[1:], limit, h.stdout, h.stderr)
		return 0
	}
}

// wantExit checks that hub exited (not killed by a signal) with code, its
// stream valid with run.finished last, as bin/reason.
func (h *hubProc) wantExit(t *testing.T, code int, bin, reason string) {
	t.Helper()
	ws, _ := h.cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Fatalf("hub died of %v (the default action of a signal), want exit %d\nstdout: %s\nstderr: %s", ws.Signal(), code, h.stdout, h.stderr)
	}
	if got := h.cmd.ProcessState.ExitCode(); got != code {
		t.Errorf("hub exit %d, want %d\nstderr: %s", got, code, h.stderr)
	}
	out := h.stdout.String()
	if err := hubtest.ValidateStream([]byte(out)); err != nil {
		t.Fatalf("stream: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if want := fmt.Sprintf(`"bin":%q,"reason":%q`, bin, reason); !strings.Contains(lines[len(lines)-1], want) {
		t.Errorf("run.finished = %s, want %s/%s", lines[len(lines)-1], bin, reason)
	}
}

// waitFor polls until ok or hub exits; false if hub exited first.
func (h *hubProc) waitFor(ok func() bool) bool {
	for !ok() {
		select {
		case <-h.done:
			return false
		case <-time.After(5 * time.Millisecond):
		}
	}
	return true
}

// neverClosed returns a pipe whose writing end the test holds open until it
// ends: a stdin that never reaches end of file.
func neverClosed(t *testing.T) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r
}

// notRun returns a fake agent that creates marker when it runs (not for
// --version), and marker's path.
func notRun(t *testing.T) (bin, marker string) {
	marker = filepath.Join(t.TempDir(), "ran")
	return fakeAgent(t, "touch "+marker+"\n"+okBody), marker
}

// TestPromptReadStops (issue 14, item 5): the read of the prompt from stdin
// (-) or --prompt-file is bounded by --timeout and stopped by SIGINT, even
// when its input never ends (a stdin nobody closes, a FIFO with no writer,
// or one that writes nothing): hub reports the run (timeout/wall, exit 8;
// cancelled/caller, exit 130) and never starts the agent. Before, hub
// blocked in the read until its input ended, signals and --timeout
// notwithstanding.
//
// Bounds: the read ends at --timeout; what follows is the run's report of
// an agent that did not start (its version probe, cancelled at once, is
// killed and reaped within hub.StopWait), which also covers hub's
// start-up here. The test's own deadline, past which it kills hub, is
// twice that.
func TestPromptReadStops(t *testing.T) {
	t.Parallel()
	const timeout = time.Second
	bound := timeout + hub.StopWait
	fifo := func(t *testing.T) string {
		p := filepath.Join(t.TempDir(), "prompt.fifo")
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("stdin never closed, --timeout", func(t *testing.T) {
		t.Parallel()
		bin, marker := notRun(t)
		h := startHub(t, neverClosed(t), "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--timeout", timeout.String(), "-")
		took := h.wait(t, 2*bound)
		h.wantExit(t, 8, "timeout", "wall")
		if took < timeout || took > bound {
			t.Errorf("hub ran %s, want between --timeout %s and %s (+ hub.StopWait)", took, timeout, bound)
		}
		if !strings.Contains(h.stdout.String(), "while hub read the prompt from stdin") {
			t.Errorf("run.finished does not say the prompt read ran out of time: %s", h.stdout)
		}
		wantNotRun(t, marker)
	})
	t.Run("FIFO without a writer, --timeout", func(t *testing.T) {
		t.Parallel()
		bin, marker := notRun(t)
		h := startHub(t, nil, "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--timeout", timeout.String(), "--prompt-file", fifo(t))
		took := h.wait(t, 2*bound)
		h.wantExit(t, 8, "timeout", "wall")
		if took < timeout || took > bound {
			t.Errorf("hub ran %s, want between --timeout %s and %s (+ hub.StopWait)", took, timeout, bound)
		}
		wantNotRun(t, marker)
	})
	t.Run("stdin never closed, SIGINT", func(t *testing.T) {
		t.Parallel()
		bin, marker := notRun(t)
		// hub opens --raw-log just before it reads the prompt: once the
		// file is there, hub is reading (or about to), its signals caught.
		raw := filepath.Join(t.TempDir(), "raw.jsonl")
		h := startHub(t, neverClosed(t), "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--raw-log", raw, "-")
		if !h.waitFor(func() bool { return fileExists(raw) }) {
			t.Fatalf("hub exited before it read the prompt\nstderr: %s", h.stderr)
		}
		sent := time.Now()
		_ = h.cmd.Process.Signal(os.Interrupt)
		h.wait(t, 2*hub.StopWait)
		h.wantExit(t, 130, "cancelled", "caller")
		if took := time.Since(sent); took > hub.StopWait {
			t.Errorf("hub exited %s after SIGINT, want within hub.StopWait %s", took, hub.StopWait)
		}
		wantNotRun(t, marker)
	})
	t.Run("FIFO that writes nothing, SIGINT", func(t *testing.T) {
		t.Parallel()
		bin, marker := notRun(t)
		p := fifo(t)
		h := startHub(t, nil, "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--prompt-file", p)
		// Opening the FIFO for writing returns once hub opened it to read.
		opened := make(chan *os.File, 1)
		go func() {
			w, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
			}
			opened <- w
		}()
		select {
		case w := <-opened:
			defer w.Close()
		case <-h.done:
			t.Fatalf("hub exited before it opened the FIFO\nstderr: %s", h.stderr)
		}
		sent := time.Now()
		_ = h.cmd.Process.Signal(os.Interrupt)
		h.wait(t, 2*hub.StopWait)
		h.wantExit(t, 130, "cancelled", "caller")
		if took := time.Since(sent); took > hub.StopWait {
			t.Errorf("hub exited %s after SIGINT, want within hub.StopWait %s", took, hub.StopWait)
		}
		wantNotRun(t, marker)
	})
}

func wantNotRun(t *testing.T, marker string) {
	t.Helper()
	if fileExists(marker) {
		t.Errorf("the agent ran; it must not start when hub has no prompt")
	}
}

// endless is a stdin that never ends within what a test reads: 'x' bytes,
// counted, up to limit, then EOF.
type endless struct {
	n, limit int64
}

func (e *endless) Read(p []byte) (int, error) {
	if e.n >= e.limit {
		return 0, io.EOF
	}
	k := min(int64(len(p)), e.limit-e.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	e.n += k
	return int(k), nil
}

// TestPromptTooLarge (issue 14, item 5): a prompt over MaxPromptBytes from
// stdin or --prompt-file is invalid_input/prompt_too_large (exit 5), reported
// as a run (run.started, run.finished) in jsonl and on stderr in text, and
// hub reads no more of it than the cap and a byte: before, it read all of
// it (an endless stdin, or --prompt-file /dev/zero, until memory ran out).
func TestPromptTooLarge(t *testing.T) {
	bin, marker := notRun(t)
	in := &endless{limit: 4 * MaxPromptBytes}
	var out, errb bytes.Buffer
	code := run(t.Context(), nil, []string{"hub", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "-"}, in, &out, &errb)
	if code != 5 || !strings.Contains(out.String(), `"bin":"invalid_input","reason":"prompt_too_large"`) {
		t.Errorf("stdin over the cap: exit %d, stdout %.2000s; want 5 and run.finished invalid_input/prompt_too_large", code, out.String())
	}
	if err := hubtest.ValidateStream(out.Bytes()); err != nil {
		t.Errorf("stream: %v", err)
	}
	if in.n > MaxPromptBytes+1 {
		t.Errorf("hub read %d bytes of the prompt, want at most MaxPromptBytes+1 = %d", in.n, MaxPromptBytes+1)
	}

	in = &endless{limit: 4 * MaxPromptBytes}
	out.Reset()
	errb.Reset()
	code = run(t.Context(), nil, []string{"hub", "run", "--agent", "opencode", "--bin", bin, "-"}, in, &out, &errb)
	if code != 5 || !strings.Contains(errb.String(), "prompt_too_large") || !strings.Contains(errb.String(), "over 16777216 bytes") {
		t.Errorf("--output text: exit %d, stderr %q; want 5 naming prompt_too_large and the cap", code, errb.String())
	}

	big := filepath.Join(t.TempDir(), "big.txt")
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, MaxPromptBytes+1); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--prompt-file", big)
	if code != 5 || !strings.Contains(stdout, `"reason":"prompt_too_large","message":"the prompt from --prompt-file `+big+` is over 16777216 bytes`) {
		t.Errorf("--prompt-file over the cap: exit %d, %s; want 5, prompt_too_large naming the file and the cap", code, stdout)
	}
	wantNotRun(t, marker)
}

// TestReadPromptCap: the cap is MaxPromptBytes exactly.
func TestReadPromptCap(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, MaxPromptBytes - 1, MaxPromptBytes, MaxPromptBytes + 1} {
		p := runPlan{prompt: promptStdin}
		got, err := p.readPrompt(t.Context(), strings.NewReader(strings.Repeat("x", n)))
		var stop stopBeforeStart
		var he *events.Error
		switch {
		case n <= MaxPromptBytes && (err != nil || len(got) != n):
			t.Errorf("readPrompt(%d bytes) = %d bytes, %v; want them all", n, len(got), err)
		case n > MaxPromptBytes && (!errors.As(err, &stop) || !errors.As(stop.cause, &he) || he.Reason != events.ReasonPromptTooLarge):
			t.Errorf("readPrompt(%d bytes) = %v, want prompt_too_large", n, err)
		}
	}
}

// TestSignalsWhileExiting (issue 14, item 5): SIGINT after SIGINT, without a
// pause, from the moment the agent runs until hub has exited. The first
// stops the run (cancelled/caller), the second kills the agent; the rest
// arrive while hub reports the run and exits. None may end hub by the
// signal's default action: hub keeps its signals caught until it exits,
// and exits 130. Before, hub gave SIGINT back to its default action once the
// run returned, and one more SIGINT killed it: no exit status, and a
// wrapper saw death by signal instead of cancelled/caller.
func TestSignalsWhileExiting(t *testing.T) {
	t.Parallel()
	// Five runs: hub as it was died of the signal in about 4 runs of 10.
	for i := range 5 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			t.Parallel()
			bin := fakeAgent(t, `echo '{"type":"step_start","sessionID":"ses_flood","part":{}}'
sleep 300 & wait`)
			h := startHub(t, nil, "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--grace", "200ms", "x")
			// The agent's first event: hub is well into main by then.
			if !h.waitFor(func() bool { return strings.Contains(h.stdout.String(), "ses_flood") }) {
				t.Fatalf("hub exited before the agent ran\nstderr: %s", h.stderr)
			}
			for {
				select {
				case <-h.done:
				default:
					_ = h.cmd.Process.Signal(os.Interrupt)
					continue
				}
				break
			}
			h.wantExit(t, 130, "cancelled", "caller")
		})
	}
}

// TestRawLogFile (issue 14, item 6): --raw-log is always a new file, mode
// 0600, holding the agent's stdout byte for byte: an existing file is
// replaced, not truncated, so that a reader that held it open and another
// hard link to it see only what they had (before, hub wrote the log into
// the same file, under their eyes). A symbolic link as the last component
// is refused, dangling or not, as a usage error before anything starts,
// and what it points to is untouched (before, hub followed it, truncated
// the target, made it 0600 and wrote the log into it). A link among the
// parent directories is followed (see openRawLog).
func TestRawLogFile(t *testing.T) {
	t.Parallel()
	agentOut := strings.ReplaceAll(okBody, "echo '", "")
	agentOut = strings.ReplaceAll(agentOut, "'", "") + "\n"
	runWith := func(t *testing.T, raw string) (*hubProc, string) {
		bin, marker := notRun(t)
		h := startHub(t, nil, "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--raw-log", raw, "x")
		h.wait(t, time.Minute)
		return h, marker
	}
	wantLog := func(t *testing.T, h *hubProc, raw string) {
		t.Helper()
		h.wantExitOK(t)
		b, err := os.ReadFile(raw)
		if err != nil || string(b) != agentOut {
			t.Errorf("raw log = %q (%v), want the agent's stdout %q", b, err, agentOut)
		}
		fi, err := os.Lstat(raw)
		if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
			t.Errorf("raw log mode %v (%v), want a regular file, 0600", fi.Mode(), err)
		}
	}
	wantRefused := func(t *testing.T, h *hubProc, marker string) {
		t.Helper()
		if code := h.cmd.ProcessState.ExitCode(); code != 2 || !strings.Contains(h.stderr.String(), "is a symbolic link") {
			t.Errorf("hub exit %d, stderr %q; want 2 (usage), saying the raw log is a symbolic link", code, h.stderr)
		}
		if h.stdout.String() != "" {
			t.Errorf("hub printed %q; want nothing: nothing starts", h.stdout)
		}
		wantNotRun(t, marker)
	}

	t.Run("new file", func(t *testing.T) {
		t.Parallel()
		raw := filepath.Join(t.TempDir(), "raw.jsonl")
		h, _ := runWith(t, raw)
		wantLog(t, h, raw)
	})
	t.Run("existing file, open and linked", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		raw, other := filepath.Join(dir, "raw.jsonl"), filepath.Join(dir, "other")
		const old = "old contents\n"
		if err := os.WriteFile(raw, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(raw, other); err != nil {
			t.Fatal(err)
		}
		reader, err := os.Open(raw) // another reader, holding it open
		if err != nil {
			t.Fatal(err)
		}
		defer reader.Close()
		h, _ := runWith(t, raw)
		wantLog(t, h, raw)
		if b, err := io.ReadAll(reader); string(b) != old {
			t.Errorf("a reader that held the old file open reads %q (%v), want only its old contents %q", b, err, old)
		}
		if b, _ := os.ReadFile(other); string(b) != old {
			t.Errorf("another hard link to the old file holds %q, want its old contents %q", b, old)
		}
	})
	t.Run("symlink", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		target, raw := filepath.Join(dir, "target"), filepath.Join(dir, "raw.jsonl")
		const old = "the target's own contents\n"
		if err := os.WriteFile(target, []byte(old), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, raw); err != nil {
			t.Fatal(err)
		}
		h, marker := runWith(t, raw)
		wantRefused(t, h, marker)
		fi, err := os.Stat(target)
		if b, _ := os.ReadFile(target); string(b) != old || err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("the link's target holds %q, mode %v (%v); want it untouched: %q, 0644", b, fi.Mode(), err, old)
		}
	})
	t.Run("dangling symlink", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		target, raw := filepath.Join(dir, "target"), filepath.Join(dir, "raw.jsonl")
		if err := os.Symlink(target, raw); err != nil {
			t.Fatal(err)
		}
		h, marker := runWith(t, raw)
		wantRefused(t, h, marker)
		if fileExists(target) {
			t.Errorf("hub created the link's target %s", target)
		}
	})
	t.Run("symlinked parent directory", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		real, link := filepath.Join(dir, "real"), filepath.Join(dir, "link")
		if err := os.Mkdir(real, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, link); err != nil {
			t.Fatal(err)
		}
		h, _ := runWith(t, filepath.Join(link, "raw.jsonl"))
		wantLog(t, h, filepath.Join(real, "raw.jsonl"))
	})
}

// wantExitOK checks that hub exited 0 with a valid stream.
func (h *hubProc) wantExitOK(t *testing.T) {
	t.Helper()
	if code := h.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("hub exit %d, want 0\nstdout: %s\nstderr: %s", code, h.stdout, h.stderr)
	}
	if err := hubtest.ValidateStream([]byte(h.stdout.String())); err != nil {
		t.Errorf("stream: %v", err)
	}
}

// TestSecondSignalKeepsRunFinished: a second signal kills the agent, and
// hub still writes run.finished before it exits, when the consumer is slow
// to take it. Here the consumer reads nothing until forceWait/2 after the
// second signal (the agent's output filled the pipe before), then reads
// everything. Before, hub exited 2 s after the second signal whatever the
// run was doing: exit 130 with no run.finished (seen with both cores busy
// in TestSignalsWhileExiting).
func TestSecondSignalKeepsRunFinished(t *testing.T) {
	t.Parallel()
	// 4,000 text events of 200 bytes: more than the stdout pipe holds.
	bin := fakeAgent(t, `echo '{"type":"step_start","sessionID":"ses_slow","part":{}}'
i=0; while [ $i -lt 4000 ]; do echo '{"type":"text","sessionID":"ses_slow","part":{"type":"text","text":"`+strings.Repeat("x", 200)+`"}}'; i=$((i+1)); done
sleep 300 & wait`)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--grace", "1m", "x")
	cmd.Env = append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
		}
	})
	// The first line, then nothing until the pipe is full: hub blocks
	// writing its events.
	r := bufio.NewReader(stdout)
	first, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("hub's first line: %v (stderr: %s)", err, &stderr)
	}
	waitBlocked(t, cmd.Process.Pid)
	// Two signals, each taken by hub before the next is sent (two pending
	// SIGINTs are one).
	for range 2 {
		_ = cmd.Process.Signal(os.Interrupt)
		waitTaken(t, cmd.Process.Pid, syscall.SIGINT)
	}
	time.Sleep(forceWait / 2)
	rest, _ := io.ReadAll(r)
	_ = cmd.Wait()
	close(done)
	if ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() || ws.ExitStatus() != 130 {
		t.Errorf("hub ended %v, want exit 130\nstderr: %s", cmd.ProcessState, &stderr)
	}
	out := first + string(rest)
	if err := hubtest.ValidateStream([]byte(out)); err != nil {
		t.Fatalf("stream: %v\nstderr: %s", err, &stderr)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; !strings.Contains(last, `"bin":"cancelled","reason":"caller"`) {
		t.Errorf("run.finished = %.300s, want cancelled/caller", last)
	}
}

// waitBlocked waits until process pid has written as much as its stdout
// pipe holds and waits in a write (its threads all asleep, one in a pipe
// write): /proc/<pid>/task/*/wchan names pipe_write.
func waitBlocked(t *testing.T, pid int) {
	t.Helper()
	for {
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", pid))
		for _, f := range tasks {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), "pipe_write") {
				return
			}
		}
		if len(tasks) == 0 {
			t.Fatalf("hub (pid %d) is gone", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitTaken waits until signal sig is pending neither for process pid nor
// for any of its threads (/proc/<pid>/status ShdPnd, task/*/status SigPnd):
// the process's handler has taken it.
func waitTaken(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	bit := uint64(1) << (sig - 1)
	pending := func(file, field string) bool {
		b, err := os.ReadFile(file)
		if err != nil {
			return false
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
				return err == nil && mask&bit != 0
			}
		}
		return false
	}
	for {
		files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/status", pid))
		busy := pending(fmt.Sprintf("/proc/%d/status", pid), "ShdPnd")
		for _, f := range files {
			busy = busy || pending(f, "SigPnd")
		}
		if !busy {
			return
		}
		time.Sleep(time.Millisecond)
	}
}
