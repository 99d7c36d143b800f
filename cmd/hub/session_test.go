package main

// hub run --session-in and hub chat (issue 35): sessions of many turns
// through hub's own process, with the fake agent (hubtest/fakeagent, which
// speaks the live protocols) and the real Claude Code against mockllm.
// Each checks what happened: the exit status, the events, and the
// process table after hub exited.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/hubtest/fakeagent"
	"github.com/hubcli/hub/internal/proc"
	"github.com/hubcli/hub/mockllm"
)

// writeLines writes the JSONL lines to a new file and returns its path.
func writeLines(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// sessionEvent is event with the fields of a session's events.
type sessionEvent struct {
	event
	TS          string `json:"ts"`
	Turn        int64  `json:"turn"`
	Interrupted bool   `json:"interrupted"`
}

// sessionEvents returns the events of type typ in a JSONL stream.
func sessionEvents(t *testing.T, stream []byte, typ string) []sessionEvent {
	t.Helper()
	var out []sessionEvent
	for _, line := range bytes.Split(bytes.TrimSpace(stream), []byte("\n")) {
		var e sessionEvent
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("event %.200s: %v", line, err)
		}
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// turnsOf returns the run's turn.finished events, in order.
func (r *hubRun) turnsOf(t *testing.T) []sessionEvent {
	return sessionEvents(t, r.stdout, "turn.finished")
}

// wantOneProcess checks that the session ran in one agent process: one
// run.started, with a pid.
func wantOneProcess(t *testing.T, r *hubRun) {
	t.Helper()
	starts := r.of("run.started")
	if len(starts) != 1 || starts[0].PID == nil {
		t.Errorf("%d run.started (pid %v), want 1 with the agent's pid: one process takes every turn", len(starts), starts)
	}
}

// TestSessionInThreeTurns: the positional prompt and two lines of the
// input are three turns of one session in one agent process, for each
// agent that holds a live session; the end of the input ends it, exit 0.
func TestSessionInThreeTurns(t *testing.T) {
	t.Parallel()
	in := writeLines(t, `{"prompt":"two"}`, "", `{"prompt":"three"}`)
	for _, d := range []string{"claude", "pi"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			r := runHub(t, d, "ok", runOpts{args: []string{"--session-in", in}, prompt: "one"})
			wantOK(t, r, "Hello from the fake agent.")
			wantOneProcess(t, r)
			tfs := r.turnsOf(t)
			if len(tfs) != 3 || len(r.of("turn.started")) != 3 {
				t.Fatalf("%d turn.finished, %d turn.started; want 3 of each", len(tfs), len(r.of("turn.started")))
			}
			for i, tf := range tfs {
				if !tf.OK || tf.Turn != int64(i+1) {
					t.Errorf("turn.finished %d: ok=%v turn=%d, want ok, turn %d", i+1, tf.OK, tf.Turn, i+1)
				}
			}
			if left := hubtest.Leftovers("HOME=" + r.dir); len(left) > 0 {
				t.Errorf("processes %v of the session outlived hub", left)
			}
		})
	}
}

// TestSessionInText: --output text renders each turn's answer on stdout
// and a line for each turn's end on stderr, then the session's totals.
func TestSessionInText(t *testing.T) {
	t.Parallel()
	in := writeLines(t, `{"prompt":"two"}`)
	r := runHub(t, "claude", "ok", runOpts{args: []string{"--session-in", in}, prompt: "one", output: "text"})
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %s", r.code, r.stderr)
	}
	if got, want := string(r.stdout), "Hello from the fake agent.\nHello from the fake agent.\n"; got != want {
		t.Errorf("stdout %q, want %q", got, want)
	}
	errs := string(r.stderr)
	for _, want := range []string{"── turn 1 · ", "── turn 2 · ", "── ok · ", "2 turns ("} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
}

// TestSessionInMalformedLine: a line that is not an input ends the session
// at once: run.finished invalid_input/bad_request naming the line, exit 5,
// the error on stderr, and no process of the session left.
func TestSessionInMalformedLine(t *testing.T) {
	t.Parallel()
	in := writeLines(t, `{"prompt":"two"}`, `{"prompt":"three"`, `{"prompt":"never"}`)
	r := runHub(t, "claude", "ok", runOpts{args: []string{"--session-in", in}, prompt: "one"})
	wantErr(t, r, "invalid_input", "bad_request", 5)
	if want := in + " line 2: not one JSON object"; !strings.Contains(r.fin.Error.Message, want) {
		t.Errorf("run.finished message %q, want it to name %q", r.fin.Error.Message, want)
	}
	if !strings.Contains(string(r.stderr), "line 2") {
		t.Errorf("stderr does not name the line: %s", r.stderr)
	}
	for _, tf := range r.turnsOf(t) {
		if tf.Turn > 2 {
			t.Errorf("turn %d ran: nothing after the bad line may", tf.Turn)
		}
	}
	if left := hubtest.Leftovers("HOME=" + r.dir); len(left) > 0 {
		t.Errorf("processes %v of the session outlived hub", left)
	}
}

// TestSessionInUsage: what a session cannot take is a usage error, before
// anything starts.
func TestSessionInUsage(t *testing.T) {
	in := writeLines(t, `{"prompt":"x"}`)
	schema := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(schema, []byte(`{"type":"object"}`), 0o600)
	tests := [][]string{
		{"run", "--agent", "claude", "--session-in", filepath.Join(t.TempDir(), "missing.jsonl")},
		{"run", "--agent", "claude", "--session-in", t.TempDir()},
		{"run", "--agent", "claude", "--session-in", "-", "-"}, // stdin twice
		{"run", "--agent", "claude", "--session-in", in, "--schema", schema},
		{"run", "--agent", "claude", "--session-in", in, "--sandbox", "copy"},
		{"run", "--agent", "claude", "--session-in", in, "--turn-timeout", "-1s"},
		{"run", "--agent", "claude", "--session-in", in, "--session-idle", "10"},
		{"acp", "--agent", "claude", "--session-in", in},
		{"chat", "--agent", "claude", "--session-in", in},
		{"chat", "--agent", "claude", "--output", "jsonl"},
		{"chat", "--agent", "claude", "--prompt-file", in},
	}
	for _, args := range tests {
		code, stdout, stderr := hubCLI(t, "", args...)
		if code != 2 || stdout != "" {
			t.Errorf("hub %q = exit %d, stdout %q; want 2 and nothing on stdout (stderr %q)", args, code, stdout, stderr)
		}
	}
	// A batch request is one run.
	batch := writeLines(t, `{"id":"a","agent":"claude","session-in":"`+in+`","prompt":"x"}`)
	if code, _, stderr := hubCLI(t, "", "batch", batch); code != 2 || !strings.Contains(stderr, "session-in") {
		t.Errorf("hub batch with session-in = exit %d, stderr %q; want 2 naming session-in", code, stderr)
	}
}

// TestSessionInRefused: a session that cannot start is reported as a run
// that did not start (run.started, run.finished with the bin), with the
// bin's exit status, as hub run reports one.
func TestSessionInRefused(t *testing.T) {
	in := writeLines(t, `{"prompt":"x"}`)
	code, out, stderr := hubCLI(t, "", "run", "--agent", "claude", "--bin", filepath.Join(t.TempDir(), "no-claude"), "--output", "jsonl", "--session-in", in)
	if code != 3 {
		t.Errorf("exit %d, want 3 (not_installed); stderr %s", code, stderr)
	}
	if err := hubtest.ValidateStream([]byte(out)); err != nil {
		t.Fatalf("stream: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var fin event
	json.Unmarshal([]byte(lines[len(lines)-1]), &fin)
	if len(lines) != 2 || fin.Type != "run.finished" || fin.Error == nil || fin.Error.Bin != "not_installed" {
		t.Errorf("events %s, want run.started then run.finished not_installed", out)
	}
	// Without a terminal hub chat says what to use instead.
	code, _, stderr = hubCLI(t, "", "chat", "--agent", "claude")
	if code != 2 || !strings.Contains(stderr, "hub run --session-in -") {
		t.Errorf("hub chat off a terminal = exit %d, stderr %q; want 2 naming hub run --session-in -", code, stderr)
	}
}

// fakeBin writes the script that runs this test binary as the fake agent
// of dialect playing fault, with marker in its environment.
func fakeBin(t *testing.T, dialect, fault, marker string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), dialect)
	script := fmt.Sprintf("#!/bin/sh\nGORACE=atexit_sleep_ms=0 %s %s=%s %s=%s exec %q \"$@\"\n",
		marker, fakeagent.EnvDialect, dialect, fakeagent.EnvFault, fault, exe)
	if err := hubtest.WriteScript(bin, []byte(script)); err != nil {
		t.Fatal(err)
	}
	return bin
}

// terminalHub is this test binary running as hub on a new pseudo-terminal
// (stdin, stdout and stderr), as a person at a terminal runs it.
type terminalHub struct {
	t      *testing.T
	cmd    *exec.Cmd
	ptmx   *os.File
	mu     sync.Mutex
	screen bytes.Buffer // everything hub wrote, escapes and all
	exited chan struct{}
}

// startTerminalHub starts `hub args…` on a 120×40 pseudo-terminal with env
// added to the test's environment.
func startTerminalHub(t *testing.T, env []string, args ...string) *terminalHub {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := &terminalHub{t: t, cmd: exec.Command(exe, args...), exited: make(chan struct{})}
	h.cmd.Env = append(append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0", "TERM=xterm-256color", "NO_COLOR=1"), env...)
	h.ptmx, err = pty.StartWithSize(h.cmd, &pty.Winsize{Cols: 120, Rows: 40})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !isDone(h.exited) {
			_ = h.cmd.Process.Kill()
			<-h.exited
		}
		h.ptmx.Close()
	})
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := h.ptmx.Read(buf)
			h.mu.Lock()
			h.screen.Write(buf[:n])
			h.mu.Unlock()
			if err != nil { // EIO once hub's side is closed
				return
			}
		}
	}()
	go func() {
		_ = h.cmd.Wait()
		close(h.exited)
	}()
	return h
}

func (h *terminalHub) output() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.screen.String()
}

// waitFor waits until hub's output holds what, after the offset from (an
// earlier output's length), and returns the output's length; it fails the
// test if hub exits first or nothing comes for two minutes (a bound for a
// busy machine, not a timing the test relies on).
func (h *terminalHub) waitFor(from int, what string) int {
	h.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out := h.output()
		if i := strings.Index(out[min(from, len(out)):], what); i >= 0 {
			return from + i + len(what)
		}
		if isDone(h.exited) || time.Now().After(deadline) {
			h.t.Fatalf("the terminal never showed %q after offset %d; it shows:\n%s", what, from, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// keys types s on the terminal.
func (h *terminalHub) keys(s string) {
	h.t.Helper()
	if _, err := h.ptmx.Write([]byte(s)); err != nil {
		h.t.Fatal(err)
	}
}

// exitCode waits (two minutes at most) for hub to exit and returns its
// exit status.
func (h *terminalHub) exitCode() int {
	h.t.Helper()
	select {
	case <-h.exited:
	case <-time.After(2 * time.Minute):
		h.t.Fatalf("hub did not exit; the terminal shows:\n%s", h.output())
	}
	return h.cmd.ProcessState.ExitCode()
}

// TestChatTwoTurns: hub chat on a terminal with the fake agent: two
// prompts typed are two turns of one session, each answered and ended by
// its turn line; Ctrl-C at the prompt clears the line, Ctrl-D at an empty
// prompt ends the session with its totals and exit 0, and nothing of the
// session is left.
func TestChatTwoTurns(t *testing.T) {
	t.Parallel()
	marker := "HUB_CHAT_TEST=" + t.TempDir()
	bin := fakeBin(t, "claude", "ok", marker)
	h := startTerminalHub(t, nil, "chat", "--agent", "claude", "--bin", bin, "--timeout", "2m", "--grace", "500ms", "--", "first prompt")
	at := h.waitFor(0, "── turn 1 · ")
	at = h.waitFor(at, chatPrompt)
	h.keys("typed then cleared\x03")
	h.keys("second prompt\r")
	at = h.waitFor(at, "Hello from the fake agent.")
	at = h.waitFor(at, "── turn 2 · ")
	at = h.waitFor(at, chatPrompt)
	h.keys("\x04")
	h.waitFor(at, "── ok · ")
	if code := h.exitCode(); code != 0 {
		t.Errorf("exit %d, want 0; the terminal shows:\n%s", code, h.output())
	}
	out := h.output()
	if strings.Contains(out, "── turn 3") || !strings.Contains(out, "2 turns (") {
		t.Errorf("want two turns and the session's totals; the terminal shows:\n%s", out)
	}
	if left := hubtest.Leftovers(marker); len(left) > 0 {
		t.Errorf("processes %v of the session outlived hub", left)
	}
}

// realClaude returns the real Claude Code and the environment that points
// it at srv, with a home of its own under a new directory whose HOME=…
// entry marks its processes (hubtest.Leftovers).
func realClaude(t *testing.T, srv *mockllm.Server) (bin string, env []string, marker string) {
	t.Helper()
	bin = hubtest.Bin(t, "claude")
	env = mockEnv(t, "claude", srv, filepath.Join(t.TempDir(), "env"))
	for _, kv := range env {
		if strings.HasPrefix(kv, "HOME=") {
			marker = kv
		}
	}
	if marker == "" {
		t.Fatal("mock-env.sh set no HOME")
	}
	return bin, env, marker
}

// TestChatInterruptRealClaude: hub chat on a terminal with the real
// Claude Code against the mock server: a first turn answers; a turn whose
// answer stalls (only an interrupt ends it) is interrupted by Ctrl-C and
// the session goes on: the next turn's answer comes, in the same
// conversation; Ctrl-D at the prompt ends the session, exit 0, nothing
// left.
func TestChatInterruptRealClaude(t *testing.T) {
	srv, err := mockllm.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	bin, env, marker := realClaude(t, srv)
	work := t.TempDir()
	h := startTerminalHub(t, env, "chat", "--agent", "claude", "--bin", bin, "--cwd", work, "--timeout", "5m")
	at := h.waitFor(0, chatPrompt)
	h.keys("first MOCK_ANSWER first-answer\r")
	at = h.waitFor(at, "first-answer")
	at = h.waitFor(at, "── turn 1 · ")
	at = h.waitFor(at, chatPrompt)
	h.keys("a long answer " + string(mockllm.Stall) + "\r")
	at = h.waitFor(at, "Hello") // the stalled answer's first words
	h.keys("\x03")
	at = h.waitFor(at, "── turn 2 interrupted")
	at = h.waitFor(at, chatPrompt)
	h.keys("after MOCK_ANSWER still-here\r")
	at = h.waitFor(at, "still-here")
	at = h.waitFor(at, "── turn 3 · ")
	at = h.waitFor(at, chatPrompt)
	h.keys("\x04")
	h.waitFor(at, "── ok · ")
	if code := h.exitCode(); code != 0 {
		t.Errorf("exit %d, want 0; the terminal shows:\n%s", code, h.output())
	}
	calls := hubtest.ModelCalls(srv)
	if last := calls[len(calls)-1]; !strings.Contains(last.UserText, "first") {
		t.Errorf("the last model call's first user text %q: want the session's first prompt (one conversation)", last.UserText)
	}
	if left := hubtest.Leftovers(marker); len(left) > 0 {
		t.Errorf("processes %v of the session outlived hub", left)
	}
}

// sessionHub runs `hub run --session-in - …` with its stdin a pipe the
// test writes, reading its JSONL events as they come.
type sessionHub struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	stderr syncBuffer
	all    [][]byte
}

// startSessionHub starts `hub run --output jsonl --session-in input args…`
// with env added to the test's environment; stdin is a pipe.
func startSessionHub(t *testing.T, env []string, input string, args ...string) *sessionHub {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := &sessionHub{t: t, lines: make(chan []byte, 1024)}
	h.cmd = exec.Command(exe, append([]string{"run", "--output", "jsonl", "--session-in", input}, args...)...)
	h.cmd.Env = append(append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0"), env...)
	h.cmd.Stderr = &h.stderr
	if h.stdin, err = h.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.cmd.Process.Kill() })
	go func() {
		defer close(h.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			h.lines <- bytes.Clone(sc.Bytes())
		}
	}()
	return h
}

// next returns hub's next event line, failing the test if it has none
// within two minutes.
func (h *sessionHub) next() (sessionEvent, bool) {
	h.t.Helper()
	select {
	case b, ok := <-h.lines:
		if !ok {
			return sessionEvent{}, false
		}
		h.all = append(h.all, b)
		var e sessionEvent
		if err := json.Unmarshal(b, &e); err != nil {
			h.t.Fatalf("event %s: %v", b, err)
		}
		return e, true
	case <-time.After(2 * time.Minute):
		h.t.Fatalf("no event from hub in two minutes; stderr %s", h.stderr.String())
	}
	return sessionEvent{}, false
}

// until reads events up to the first of type typ and returns it.
func (h *sessionHub) until(typ string) sessionEvent {
	h.t.Helper()
	for {
		e, ok := h.next()
		if !ok {
			h.t.Fatalf("hub's output ended before a %s; stderr %s", typ, h.stderr.String())
		}
		if e.Type == typ {
			return e
		}
	}
}

// finish reads the rest of the events, waits for hub's exit, and returns
// its exit status and run.finished; the whole stream must be valid.
func (h *sessionHub) finish() (int, sessionEvent) {
	h.t.Helper()
	for {
		if _, ok := h.next(); !ok {
			break
		}
	}
	err := h.cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		h.t.Fatal(err)
	}
	stream := append(bytes.Join(h.all, []byte("\n")), '\n')
	if err := hubtest.ValidateStream(stream); err != nil {
		h.t.Errorf("hub's event stream is invalid: %v", err)
	}
	var fin sessionEvent
	json.Unmarshal(h.all[len(h.all)-1], &fin)
	return h.cmd.ProcessState.ExitCode(), fin
}

// TestSessionInRealClaude: hub run --session-in with the real Claude Code
// against the mock server.
func TestSessionInRealClaude(t *testing.T) {
	// EOFMidTurn: stdin ends while a turn streams its answer (the mock
	// sends it a chunk at a time): the turn goes on to its end, then the
	// session closes: exit 0, the answer whole, nothing left.
	t.Run("EOFMidTurn", func(t *testing.T) {
		t.Parallel()
		srv, err := mockllm.StartWith(mockllm.Options{ChunkDelay: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		bin, env, marker := realClaude(t, srv)
		h := startSessionHub(t, env, "-", "--agent", "claude", "--bin", bin, "--cwd", t.TempDir(), "--timeout", "5m")
		fmt.Fprintln(h.stdin, `{"prompt":"say hello MOCK_TEXT"}`)
		h.until("text.delta")
		closedAt := time.Now()
		h.stdin.Close()
		tf := h.until("turn.finished")
		code, fin := h.finish()
		if code != 0 || !fin.OK {
			t.Errorf("exit %d, run.finished ok=%v %+v; want 0 and ok", code, fin.OK, fin.Error)
		}
		if !tf.OK || tf.Text != mockllm.TextAnswer {
			t.Errorf("turn.finished ok=%v text %q, want ok with the whole answer %q", tf.OK, tf.Text, mockllm.TextAnswer)
		}
		if ts, err := time.Parse(time.RFC3339Nano, tf.TS); err != nil || !closedAt.Before(ts) {
			t.Errorf("turn.finished at %s (%v), stdin closed at %s: want the input's end in the middle of the turn", tf.TS, err, closedAt.UTC().Format(time.RFC3339Nano))
		}
		if left := hubtest.Leftovers(marker); len(left) > 0 {
			t.Errorf("processes %v of the session outlived hub", left)
		}
	})
	// BudgetInSecondTurn: the second line's turn crosses --max-cost: the
	// session ends there, budget_exceeded/cost (exit 9), the third line
	// never runs, and no process of the session is left.
	t.Run("BudgetInSecondTurn", func(t *testing.T) {
		t.Parallel()
		srv, err := mockllm.Start()
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		bin, env, marker := realClaude(t, srv)
		in := writeLines(t, `{"prompt":"cheap MOCK_TEXT"}`, `{"prompt":"expensive `+string(mockllm.BigUsage)+`"}`, `{"prompt":"never MOCK_TEXT"}`)
		h := startSessionHub(t, env, in, "--agent", "claude", "--bin", bin, "--cwd", t.TempDir(), "--timeout", "5m", "--max-cost", "0.5")
		h.stdin.Close()
		var tfs []sessionEvent
		var pids []int
		for {
			e, ok := h.next()
			if !ok {
				break
			}
			switch e.Type {
			case "turn.finished":
				tfs = append(tfs, e)
			case "run.started":
				if e.PID != nil {
					pids = append(pids, *e.PID)
				}
			}
		}
		code, fin := h.finish()
		if code != 9 || fin.Error == nil || fin.Error.Bin != "budget_exceeded" || fin.Error.Reason != "cost" {
			t.Errorf("exit %d, run.finished error %+v; want 9 and budget_exceeded/cost", code, fin.Error)
		}
		if len(tfs) != 2 || !tfs[0].OK || tfs[1].OK || tfs[1].Error == nil || tfs[1].Error.Bin != "budget_exceeded" {
			t.Errorf("turn.finished events %+v: want turn 1 ok, turn 2 budget_exceeded, no turn 3", tfs)
		}
		if len(pids) != 1 {
			t.Fatalf("agent pids %v, want one process", pids)
		}
		if proc.Running(pids[0]) {
			t.Errorf("the agent (pid %d) is alive after hub exited", pids[0])
		}
		if left := hubtest.Leftovers(marker); len(left) > 0 {
			t.Errorf("processes %v of the session outlived hub", left)
		}
		if n := len(hubtest.ModelCalls(srv)); n == 0 {
			t.Errorf("the mock saw no model call")
		}
		for _, c := range hubtest.ModelCalls(srv) {
			if strings.Contains(c.LastUserText, "never") {
				t.Errorf("the third line's prompt reached the model: nothing may run after the budget is spent")
			}
		}
	})
	// InterruptLine: a program drives the session on hub's stdin: while
	// a turn streams an answer that stalls (only an interrupt ends it),
	// {"interrupt":true} stops it; the next prompt's turn runs in the same
	// process, and the input's end ends the session ok.
	t.Run("InterruptLine", func(t *testing.T) {
		t.Parallel()
		srv, err := mockllm.Start()
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		bin, env, marker := realClaude(t, srv)
		h := startSessionHub(t, env, "-", "--agent", "claude", "--bin", bin, "--cwd", t.TempDir(), "--timeout", "5m")
		fmt.Fprintln(h.stdin, `{"prompt":"a long answer `+string(mockllm.Stall)+`"}`)
		h.until("text.delta")
		fmt.Fprintln(h.stdin, `{"interrupt":true}`)
		first := h.until("turn.finished")
		fmt.Fprintln(h.stdin, `{"prompt":"after MOCK_ANSWER still-here"}`)
		second := h.until("turn.finished")
		h.stdin.Close()
		code, fin := h.finish()
		if code != 0 || !fin.OK {
			t.Errorf("exit %d, run.finished ok=%v %+v; want 0 and ok", code, fin.OK, fin.Error)
		}
		if first.OK || !first.Interrupted || first.Error == nil || first.Error.Bin != "cancelled" {
			t.Errorf("turn 1: ok=%v interrupted=%v error %+v; want interrupted, cancelled", first.OK, first.Interrupted, first.Error)
		}
		if !second.OK || !strings.Contains(second.Text, "still-here") {
			t.Errorf("turn 2: ok=%v text %q; want ok with the answer", second.OK, second.Text)
		}
		var pids int
		for _, b := range h.all {
			if bytes.Contains(b, []byte(`"type":"run.started"`)) {
				pids++
			}
		}
		if pids != 1 {
			t.Errorf("%d run.started, want 1: the interrupt keeps the agent", pids)
		}
		if left := hubtest.Leftovers(marker); len(left) > 0 {
			t.Errorf("processes %v of the session outlived hub", left)
		}
	})
}

// TestChatCtrlCEnds: at an empty prompt a Ctrl-C says how to end, and a
// second one ends the session (exit 0, its totals shown); the agent's
// process goes with it.
func TestChatCtrlCEnds(t *testing.T) {
	t.Parallel()
	marker := "HUB_CHAT_TEST=" + t.TempDir()
	bin := fakeBin(t, "pi", "ok", marker)
	h := startTerminalHub(t, nil, "chat", "--agent", "pi", "--bin", bin, "--timeout", "2m", "--grace", "500ms")
	at := h.waitFor(0, chatPrompt)
	h.keys("hi\r")
	at = h.waitFor(at, "── turn 1 · ")
	at = h.waitFor(at, chatPrompt)
	h.keys("\x03")
	at = h.waitFor(at, "Ctrl-C again, or Ctrl-D, ends the session")
	h.keys("\x03")
	h.waitFor(at, "── ok · ")
	if code := h.exitCode(); code != 0 {
		t.Errorf("exit %d, want 0; the terminal shows:\n%s", code, h.output())
	}
	if left := hubtest.Leftovers(marker); len(left) > 0 {
		t.Errorf("processes %v of the session outlived hub", left)
	}
}

// TestSessionIdle: a session whose input stays open but sends nothing
// ends at --session-idle: hub run --session-in - exits 0 with the turn it
// ran, though its stdin was never closed, and hub chat says why at the
// prompt; nothing of either session is left.
func TestSessionIdle(t *testing.T) {
	t.Parallel()
	t.Run("session-in", func(t *testing.T) {
		t.Parallel()
		marker := "HUB_SESSION_TEST=" + t.TempDir()
		bin := fakeBin(t, "claude", "ok", marker)
		h := startSessionHub(t, nil, "-", "--agent", "claude", "--bin", bin, "--session-idle", "1s", "--grace", "500ms")
		fmt.Fprintln(h.stdin, `{"prompt":"one"}`)
		if tf := h.until("turn.finished"); !tf.OK {
			t.Errorf("turn 1: %+v, want ok", tf.Error)
		}
		code, fin := h.finish() // stdin still open
		if code != 0 || !fin.OK {
			t.Errorf("exit %d, run.finished ok=%v %+v; want 0 and ok", code, fin.OK, fin.Error)
		}
		if left := hubtest.Leftovers(marker); len(left) > 0 {
			t.Errorf("processes %v of the session outlived hub", left)
		}
	})
	t.Run("chat", func(t *testing.T) {
		t.Parallel()
		marker := "HUB_CHAT_TEST=" + t.TempDir()
		bin := fakeBin(t, "claude", "ok", marker)
		h := startTerminalHub(t, nil, "chat", "--agent", "claude", "--bin", bin, "--session-idle", "1s", "--grace", "500ms", "--", "one")
		at := h.waitFor(0, "── turn 1 · ")
		at = h.waitFor(at, "the session ended while waiting for a prompt (--session-idle 1s")
		h.waitFor(at, "── ok · ")
		if code := h.exitCode(); code != 0 {
			t.Errorf("exit %d, want 0; the terminal shows:\n%s", code, h.output())
		}
		if left := hubtest.Leftovers(marker); len(left) > 0 {
			t.Errorf("processes %v of the session outlived hub", left)
		}
	})
}

// TestChatRefused: a session that cannot start ends hub chat before any
// prompt, with the bin's summary and exit status (not_installed, 3).
func TestChatRefused(t *testing.T) {
	t.Parallel()
	h := startTerminalHub(t, nil, "chat", "--agent", "claude", "--bin", filepath.Join(t.TempDir(), "no-claude"))
	h.waitFor(0, "── failed: not_installed")
	if code := h.exitCode(); code != 3 {
		t.Errorf("exit %d, want 3; the terminal shows:\n%s", code, h.output())
	}
	if strings.Contains(h.output(), chatPrompt) {
		t.Errorf("a prompt was shown for a session that never started:\n%s", h.output())
	}
}

// TestChatConfirm: --confirm asks on the terminal once, before the
// session starts: "y" starts it and no turn asks again; "n" refuses it,
// permission_denied/confirmation_required, exit 6, nothing started.
func TestChatConfirm(t *testing.T) {
	t.Parallel()
	for _, answer := range []string{"y", "n"} {
		t.Run(answer, func(t *testing.T) {
			t.Parallel()
			marker := "HUB_CHAT_TEST=" + t.TempDir()
			bin := fakeBin(t, "claude", "ok", marker)
			h := startTerminalHub(t, nil, "chat", "--agent", "claude", "--bin", bin, "--confirm", "--grace", "500ms", "--", "one")
			at := h.waitFor(0, "Run it? [y/N] ")
			h.keys(answer + "\r")
			if answer == "n" {
				h.waitFor(at, "── failed: permission_denied/confirmation_required")
				if code := h.exitCode(); code != 6 {
					t.Errorf("exit %d, want 6; the terminal shows:\n%s", code, h.output())
				}
				return
			}
			at = h.waitFor(at, "── turn 1 · ")
			at = h.waitFor(at, chatPrompt)
			h.keys("two\r")
			at = h.waitFor(at, "── turn 2 · ")
			at = h.waitFor(at, chatPrompt)
			h.keys("\x04")
			h.waitFor(at, "── ok · ")
			if code := h.exitCode(); code != 0 {
				t.Errorf("exit %d, want 0; the terminal shows:\n%s", code, h.output())
			}
			if n := strings.Count(h.output(), "Run it? [y/N]"); n != 1 {
				t.Errorf("asked %d times, want once for the session", n)
			}
			if left := hubtest.Leftovers(marker); len(left) > 0 {
				t.Errorf("processes %v of the session outlived hub", left)
			}
		})
	}
}
