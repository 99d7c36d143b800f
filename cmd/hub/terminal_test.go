package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/mockllm"
)

// fakeCodex writes a Codex that starts a shell command, waits until the
// file gate exists ("" for no wait, else at most 60s), and then finishes
// with answer; it answers --version with a tested version.
func fakeCodex(t *testing.T, gate, answer string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "codex")
	wait := ""
	if gate != "" {
		wait = fmt.Sprintf("i=0; while [ ! -e %q ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n", gate)
	}
	msg, _ := json.Marshal(answer)
	dir := t.TempDir()
	head, tail := filepath.Join(dir, "head.jsonl"), filepath.Join(dir, "tail.jsonl")
	for _, f := range []struct{ path, body string }{
		{head, `{"type":"thread.started","thread_id":"thr_1"}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"make test","aggregated_output":"","exit_code":null,"status":"in_progress"}}
`},
		{tail, `{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"make test","aggregated_output":"ok\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":` + string(msg) + `}}
{"type":"turn.completed","usage":{"input_tokens":2000,"cached_input_tokens":400,"cache_write_input_tokens":0,"output_tokens":100,"reasoning_output_tokens":0}}
`},
	} {
		if err := os.WriteFile(f.path, []byte(f.body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// The pause lets a redraw (every statusEvery) happen while the tool runs.
	script := fmt.Sprintf("#!/bin/sh\nif [ \"$1\" = --version ]; then echo codex-cli 0.169.0; exit 0; fi\ncat %q\n%ssleep 0.6\ncat %q\n", head, wait, tail)
	if err := hubtest.WriteScript(path, []byte(script)); err != nil {
		t.Fatal(err)
	}
	return path
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// tmuxPane is one tmux server (on a socket of its own) with one pane.
type tmuxPane struct {
	t      *testing.T
	socket string
}

func (p tmuxPane) tmux(args ...string) (string, error) {
	out, err := exec.Command("tmux", append([]string{"-L", p.socket, "-f", "/dev/null"}, args...)...).CombinedOutput()
	return string(out), err
}

func (p tmuxPane) capture() string {
	out, err := p.tmux("capture-pane", "-p", "-t", "hub")
	if err != nil {
		p.t.Fatalf("tmux capture-pane: %v: %s", err, out)
	}
	return out
}

// waitScreen polls the pane until ok(screen) or hub's shell line has
// printed HUB-EXIT (then ok's last chance), for at most limit.
func (p tmuxPane) waitScreen(limit time.Duration, what string, ok func(string) bool) string {
	p.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s := p.capture()
		if ok(s) {
			return s
		}
		if strings.Contains(s, "HUB-EXIT=") || time.Now().After(deadline) {
			p.t.Fatalf("the terminal never showed %s; screen:\n%s", what, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startInTmux runs `hub args…` (this test binary as hub) in a new tmux
// pane of 100×20 and returns the pane; the tmux server is killed when the
// test ends.
func startInTmux(t *testing.T, env []string, args ...string) tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		if os.Getenv("HUB_REQUIRE_REAL_CLIS") == "1" {
			t.Fatal("tmux is not installed (.ci/run installs it)")
		}
		t.Skip("tmux is not installed")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	p := tmuxPane{t: t, socket: "hub-test-" + hex.EncodeToString(b[:])}
	words := []string{"env", "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0", "TERM=xterm-256color"}
	words = append(words, env...)
	words = append(words, exe)
	words = append(words, args...)
	for i, w := range words {
		words[i] = shellQuote(w)
	}
	line := strings.Join(words, " ") + "; echo HUB-EXIT=$?; sleep 600"
	if out, err := p.tmux("new-session", "-d", "-s", "hub", "-x", "100", "-y", "20", line); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { _, _ = p.tmux("kill-server") })
	return p
}

// statusRe is a drawn status line with a running tool: the spinner, the
// elapsed time, the tokens, the turn and the tool with its own time.
var statusRe = regexp.MustCompile(`(?m)^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] \d+s · [\d,]+ tokens · turn 1 · command_execution (\d+)s\s*$`)

// TestTerminalStatusLine (issue 19, done when): in a real terminal (a tmux
// pane) a run shows one live status line under its tool line, redrawn in
// place as the tool's time moves, and gone when the run ends, where the
// summary is.
func TestTerminalStatusLine(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "go")
	bin := fakeCodex(t, gate, "All tests pass.")
	p := startInTmux(t, nil, "run", "--agent", "codex", "--bin", bin, "--model", "gpt-5", "--timeout", "2m", "--", "run the tests")
	screen := p.waitScreen(time.Minute, "the tool line and a status line with the tool at 1s or more", func(s string) bool {
		m := statusRe.FindStringSubmatch(s)
		return strings.Contains(s, "→ command_execution") && m != nil && m[1] != "0"
	})
	if n := len(statusRe.FindAllString(screen, -1)); n != 1 {
		t.Errorf("%d status lines on the screen, want 1 (redrawn in place):\n%s", n, screen)
	}
	if tool, status := strings.Index(screen, "→ command_execution"), statusRe.FindStringIndex(screen)[0]; tool > status {
		t.Errorf("the status line is above the tool line:\n%s", screen)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	screen = p.waitScreen(time.Minute, "hub's exit", func(s string) bool { return strings.Contains(s, "HUB-EXIT=") })
	if !strings.Contains(screen, "HUB-EXIT=0") || !strings.Contains(screen, "All tests pass.") || !strings.Contains(screen, "── ok ·") {
		t.Errorf("after the run, want the answer, the summary and exit 0:\n%s", screen)
	}
	if strings.ContainsAny(screen, "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏") {
		t.Errorf("the status line is still on the screen after the run:\n%s", screen)
	}
}

// runWithTerminalStderr runs hub with its stderr on a new pseudo-terminal
// and stdout on a pipe (pipedStdout) or a file, and returns what each
// received.
func runWithTerminalStderr(t *testing.T, pipedStdout bool, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd := exec.Command(exe, args...)
	cmd.Env = append(append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0", "NO_COLOR=", "TERM=xterm-256color"), env...)
	cmd.Stdout, cmd.Stderr = &out, tty // stdout a pipe
	outFile := filepath.Join(t.TempDir(), "stdout")
	if !pipedStdout {
		f, err := os.Create(outFile)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.Stdout = f // `> answer.txt`
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	read := make(chan []byte)
	go func() {
		b, err := io.ReadAll(ptmx) // ends with EIO once hub's end is closed
		var pe *os.PathError
		if err != nil && !(errors.As(err, &pe) && errors.Is(pe.Err, syscall.EIO)) {
			t.Errorf("reading the terminal: %v", err)
		}
		read <- b
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	select {
	case b := <-read:
		stderr = string(b)
	case <-time.After(time.Minute):
		t.Fatal("the terminal's output never ended")
	}
	if !pipedStdout {
		b, err := os.ReadFile(outFile)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(b)
	}
	return out.String(), stderr, cmd.ProcessState.ExitCode()
}

// sgr matches a colour or attribute sequence (ESC [ … m).
var sgr = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// TestTerminalColorAndEscapes (issue 19, done when): on a terminal, tool
// lines, notices and the summary are coloured unless NO_COLOR is set or
// --color never; the model's escape sequences never reach the terminal
// or the answer; TERM=dumb gets no escape byte at all; and piped output
// has no escape byte unless --color always asks for colour.
func TestTerminalColorAndEscapes(t *testing.T) {
	const answer = "Done \x1b[2J\x1b]0;owned\a ok."
	bin := fakeCodex(t, "", answer)
	args := []string{"run", "--agent", "codex", "--bin", bin, "--model", "gpt-5", "--timeout", "2m"}
	tests := []struct {
		name             string
		env, flags       []string
		colour, controls bool // SGR sequences; the status line's \r ESC[2K
		pipe             bool // stdout a pipe, not a file
	}{
		{name: "auto", colour: true, controls: true},
		{name: "NO_COLOR", env: []string{"NO_COLOR=1"}, controls: true},
		{name: "--color never", flags: []string{"--color", "never"}, controls: true},
		{name: "--color always beats NO_COLOR", env: []string{"NO_COLOR=1"}, flags: []string{"--color", "always"}, colour: true, controls: true},
		{name: "TERM=dumb", env: []string{"TERM=dumb"}},
		// `| tee`, `| less`: the pipe's reader may write to this terminal,
		// on the status line, where a redraw would erase it.
		{name: "stdout a pipe", pipe: true, colour: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errs, code := runWithTerminalStderr(t, tt.pipe, tt.env, append(append(append([]string{}, args...), tt.flags...), "--", "go")...)
			if code != 0 {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errs)
			}
			if want := "Done ␛[2J␛]0;owned␇ ok.\n"; out != want {
				t.Errorf("stdout = %q, want %q", out, want)
			}
			if got := sgr.MatchString(errs); got != tt.colour {
				t.Errorf("colour on the terminal = %v, want %v: %q", got, tt.colour, errs)
			}
			if got := strings.Contains(errs, "\r\x1b[2K"); got != tt.controls {
				t.Errorf("status line drawn = %v, want %v: %q", got, tt.controls, errs)
			}
			if rest := sgr.ReplaceAllString(strings.ReplaceAll(errs, "\r\x1b[2K", ""), ""); strings.Contains(rest, "\x1b") || strings.Contains(rest, "\a") {
				t.Errorf("an escape that hub did not write reached the terminal: %q", rest)
			}
			if !strings.Contains(errs, "── ok") {
				t.Errorf("no summary on the terminal: %q", errs)
			}
		})
	}
	t.Run("piped", func(t *testing.T) {
		for _, color := range []string{"auto", "always"} {
			code, out, errs := hubCLI(t, "", append(append([]string{}, args...), "--color", color, "--", "go")...)
			if code != 0 || out != "Done ␛[2J␛]0;owned␇ ok.\n" {
				t.Fatalf("--color %s: exit %d, stdout %q", color, code, out)
			}
			if strings.Contains(out, "\x1b") {
				t.Errorf("--color %s: escape byte on stdout: %q", color, out)
			}
			if got, want := strings.Contains(errs, "\x1b"), color == "always"; got != want || strings.Contains(errs, "\x1b[2K") {
				t.Errorf("--color %s: escape bytes on stderr = %v, want %v (colour only, never the status line): %q", color, got, want, errs)
			}
		}
	})
}

// mockEnv is the environment scripts/mock-env.sh gives agent to run
// against srv with its home under dir (the settings the real-CLI tests
// use; adapters/<agent>/mockenv_test.go holds the script to them).
func mockEnv(t *testing.T, agent string, srv *mockllm.Server, dir string) []string {
	t.Helper()
	out, err := exec.Command("bash", filepath.Join(hubtest.Root(), "scripts", "mock-env.sh"), agent, srv.URL(), dir).Output()
	if err != nil {
		t.Fatalf("mock-env.sh %s: %v", agent, err)
	}
	var env []string
	for _, line := range strings.Split(string(out), "\n") {
		if kv, ok := strings.CutPrefix(line, "export "); ok {
			k, v, _ := strings.Cut(kv, "=")
			env = append(env, k+"="+strings.Trim(v, `'"`))
		}
	}
	return env
}

// TestTerminalStatusLineRealCodex: the real Codex CLI, in a tmux pane,
// against the mock server: while its shell command runs (it waits for a
// file the test creates once it has seen the screen), the status line
// names the command's tool call and how long it has run.
func TestTerminalStatusLineRealCodex(t *testing.T) {
	bin := hubtest.Bin(t, "codex")
	srv, err := mockllm.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	cmd := fmt.Sprintf(`i=0; while [ ! -e %s ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; echo gate open`, gate)
	input, _ := json.Marshal(map[string]string{"cmd": cmd})
	project := filepath.Join(dir, "project")
	if err := os.MkdirAll(project, 0o755); err != nil {
		t.Fatal(err)
	}
	p := startInTmux(t, mockEnv(t, "codex", srv, filepath.Join(dir, "env")),
		"run", "--agent", "codex", "--bin", bin, "--cwd", project, "--timeout", "5m", "--", "Wait for the gate. MOCK_CALL exec_command "+string(input))
	screen := p.waitScreen(3*time.Minute, "the real codex's tool line and a status line with its command at 1s or more", func(s string) bool {
		m := statusRe.FindStringSubmatch(s)
		return strings.Contains(s, "→ command_execution") && m != nil && m[1] != "0"
	})
	if n := len(statusRe.FindAllString(screen, -1)); n != 1 {
		t.Errorf("%d status lines on the screen, want 1:\n%s", n, screen)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	screen = p.waitScreen(3*time.Minute, "hub's exit", func(s string) bool { return strings.Contains(s, "HUB-EXIT=") })
	// The tool's output, on a line of its own in the answer (the tool line
	// holds the command, with more around it).
	if !strings.Contains(screen, "HUB-EXIT=0") || !strings.Contains(screen, "── ok ·") || !regexp.MustCompile(`(?m)^gate open\s*$`).MatchString(screen) {
		t.Errorf("after the run, want the tool's output in the answer, the summary and exit 0:\n%s", screen)
	}
	if strings.ContainsAny(screen, "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏") {
		t.Errorf("the status line is still on the screen after the run:\n%s", screen)
	}
}
