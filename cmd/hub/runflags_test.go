package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters/adaptertest"
)

// TestFlagAfterPrompt: a flag (or an option-shaped word) after the prompt
// is a usage error naming it, before anything starts: the fake agent,
// which records any start (even a version probe), never runs.
func TestFlagAfterPrompt(t *testing.T) {
	started := filepath.Join(t.TempDir(), "started")
	bin := fakeAgent(t, okBody)
	// Record every start, --version included, before the script's first line.
	script, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	marked := strings.Replace(string(script), "#!/bin/sh\n", "#!/bin/sh\necho \"$@\" >> "+started+"\n", 1)
	if err := adaptertest.WriteScript(bin, []byte(marked)); err != nil {
		t.Fatal(err)
	}
	oc := []string{"run", "--agent", "opencode", "--bin", bin}
	tests := []struct {
		args []string
		want string // in stderr
	}{
		{[]string{"run", "--agent", "claude", "hi", "--timeout", "1s"}, "--timeout"},
		{[]string{"run", "--agent", "claude", "--bin", bin, "hi", "--timeout", "1s"}, "--timeout"},
		{append(oc, "hi", "--timeout=1s"), "--timeout"},
		{append(oc, "hi", "-timeout", "1s"), "--timeout"},
		{append(oc, "two", "words", "--env", "K=V"), "--env"},
		{append(oc, "hi", "--output", "json"), "--output"},
		{append(oc, "-", "--grace", "1s"), "--grace"},
		{[]string{"run", "hi", "--agent", "opencode"}, "--agent"},
		{append(oc, "hi", "-v"), `"-v"`},
		{append(oc, "hi", "--verbose"), `"--verbose"`},
		{append(oc, "hi", "--", "there"), "put -- before"},
	}
	for _, tt := range tests {
		code, stdout, stderr := hub(t, "from stdin", tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("hub %q = exit %d, stderr %q; want 2 naming %s", tt.args, code, stderr, tt.want)
		}
		if stdout != "" {
			t.Errorf("hub %q wrote %q on stdout, want nothing", tt.args, stdout)
		}
	}
	if b, err := os.ReadFile(started); err == nil {
		t.Errorf("the agent was started: %q", b)
	}
	// The message says what to do.
	_, _, stderr := hub(t, "", "run", "--agent", "claude", "hi", "--timeout", "1s")
	if !strings.Contains(stderr, "move it before the prompt") || !strings.Contains(stderr, "after --") {
		t.Errorf("stderr %q: want it to say to move the flag before the prompt or put the prompt after --", stderr)
	}
}

// TestPromptWords: after "--" every word is prompt, dashes included; "-"
// among words, dash-words that are not options, and "help" are prompt text.
func TestPromptWords(t *testing.T) {
	// The fake answers with the prompt it got on stdin.
	bin := fakeAgent(t, `in=$(cat)
printf '{"type":"text","sessionID":"s","part":{"type":"text","text":"stdin=%s"}}\n' "$in"
echo '{"type":"step_finish","sessionID":"s","part":{"reason":"stop","tokens":{},"cost":0}}'`)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--", "hi", "--timeout", "1s"}, "stdin=hi --timeout 1s"},
		{[]string{"--", "-v", "--", "x"}, "stdin=-v -- x"},
		{[]string{"--timeout", "10s", "--", "--grace"}, "stdin=--grace"},
		{[]string{"hi", "-"}, "stdin=hi -"},
		{[]string{"what", "is", "-5"}, "stdin=what is -5"},
		{[]string{"help"}, "stdin=help"},
		{[]string{"help", "me"}, "stdin=help me"},
	}
	for _, tt := range tests {
		args := append([]string{"run", "--agent", "opencode", "--bin", bin, "--output", "json"}, tt.args...)
		code, out, errOut := hub(t, "", args...)
		var fin struct{ Text string }
		json.Unmarshal([]byte(out), &fin)
		if code != 0 || fin.Text != tt.want {
			t.Errorf("hub %q = exit %d text %q (stderr %q), want %q", tt.args, code, fin.Text, errOut, tt.want)
		}
	}
}

// TestEnvWhole: each --env value reaches the agent's environment whole:
// commas (urfave/cli's slice separator), JSON and spaces kept.
func TestEnvWhole(t *testing.T) {
	dir := t.TempDir()
	bin := fakeAgent(t, `printf '%s' "$K" > `+filepath.Join(dir, "K")+`
printf '%s' "$S" > `+filepath.Join(dir, "S")+`
`+okBody)
	const k, s = `{"a":1,"b":2}`, " a, b "
	code, _, stderr := hub(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "json",
		"--env", "K="+k, "--env", "S="+s, "x")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	for name, want := range map[string]string{"K": k, "S": s} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != want {
			t.Errorf("--env %s=%s: the agent's $%s = %q (%v), want %q", name, want, name, got, err, want)
		}
	}
}

// TestZeroMeansNone: 0 is none for every duration flag. --grace 0 SIGKILLs
// right after SIGTERM, --linger 0 stops the agent at its terminal event
// (the defaults are 5 s each), --timeout 0 and --idle-timeout 0 are no
// limit. (--finalize-timeout 0: TestRunFinalizeFlags.)
func TestZeroMeansNone(t *testing.T) {
	// Well under the 5 s defaults, with room for a busy machine.
	const within = 4 * time.Second

	bin := fakeAgent(t, okBody+"\nsleep 30")
	start := time.Now()
	code, out, stderr := hub(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--linger", "0", "x")
	if took := time.Since(start); code != 0 || took > within || !strings.Contains(out, `"kind":"linger_kill"`) {
		t.Errorf("--linger 0: exit %d in %s, stderr %q; want 0 within %s with a linger_kill notice\n%s", code, took, stderr, within, out)
	}

	bin = fakeAgent(t, `trap '' TERM
echo '{"type":"step_start","sessionID":"ses_g","part":{}}'
sleep 30`)
	start = time.Now()
	code, out, _ = hub(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--timeout", "300ms", "--grace", "0", "x")
	if took := time.Since(start); code != 8 || took > within || !strings.Contains(out, `"signal":"SIGKILL"`) {
		t.Errorf("--grace 0 on an agent that ignores SIGTERM: exit %d in %s; want 8 (timeout) within %s, SIGKILL\n%s", code, took, within, out)
	}

	bin = fakeAgent(t, "sleep 0.2\n"+okBody)
	code, out, stderr = hub(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--timeout", "0", "--idle-timeout", "0", "x")
	if code != 0 || !strings.Contains(out, `"timeout_ms":null,"idle_timeout_ms":null`) {
		t.Errorf("--timeout 0 --idle-timeout 0: exit %d, stderr %q; want 0 and no limits in run.started\n%s", code, stderr, out)
	}
}

// TestRunHelp: the help says that 0 is none for each duration flag, and
// where flags go.
func TestRunHelp(t *testing.T) {
	code, out, _ := hub(t, "", "run", "--help")
	if code != 0 {
		t.Fatalf("hub run --help: exit %d", code)
	}
	for _, flag := range []string{"--timeout", "--idle-timeout", "--grace", "--linger", "--finalize-timeout"} {
		i := strings.Index(out, flag+" value")
		if i < 0 {
			t.Errorf("hub run --help does not list %s:\n%s", flag, out)
			continue
		}
		line, _, _ := strings.Cut(out[i:], "\n")
		if !strings.Contains(line, "0 = none") {
			t.Errorf("hub run --help: %q does not say 0 = none", line)
		}
	}
	if !strings.Contains(out, "a flag after it is a usage error") {
		t.Errorf("hub run --help does not say where flags go:\n%s", out)
	}
}

// TestKillChannel: the kill channel given to run reaches the run: closing it
// SIGKILLs an agent that ignores SIGTERM at once, without waiting out
// --grace, and the run ends cancelled/caller (exit 130).
func TestKillChannel(t *testing.T) {
	bin := fakeAgent(t, `trap '' TERM
echo '{"type":"step_start","sessionID":"ses_k","part":{}}'
sleep 30`)
	kill := make(chan struct{})
	out := &notifyWriter{seen: make(chan struct{}), want: "ses_k"}
	done := make(chan int, 1)
	go func() {
		done <- run(t.Context(), kill, []string{"hub", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--grace", "30s", "x"},
			strings.NewReader(""), out, io.Discard)
	}()
	select {
	case <-out.seen:
	case <-time.After(20 * time.Second):
		t.Fatalf("the agent's first event never came; stdout %q", out.String())
	}
	start := time.Now()
	close(kill)
	select {
	case code := <-done:
		if code != 130 || !strings.Contains(out.String(), `"signal":"SIGKILL"`) {
			t.Errorf("run after kill = exit %d; want 130 and SIGKILL\n%s", code, out.String())
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("run took %s after kill; want it at once, not after --grace 30s", took)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("run did not end after kill was closed")
	}
}
