package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
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
	if err := hubtest.WriteScript(bin, []byte(marked)); err != nil {
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
		code, stdout, stderr := hubCLI(t, "from stdin", tt.args...)
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
	_, _, stderr := hubCLI(t, "", "run", "--agent", "claude", "hi", "--timeout", "1s")
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
		code, out, errOut := hubCLI(t, "", args...)
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
	code, _, stderr := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "json",
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
//
// The bounds are hub's own: a stop with no grace ends within
// hub.StopWait of its cause, which is less than either default, so a 0
// read as "the default" would show.
func TestZeroMeansNone(t *testing.T) {
	if hub.StopWait >= budget.DefaultLinger || hub.StopWait >= budget.DefaultGrace {
		t.Fatalf("hub.StopWait %s is not below the default linger %s and grace %s: this test cannot tell 0 from the default",
			hub.StopWait, budget.DefaultLinger, budget.DefaultGrace)
	}

	// --grace 0 too, so that the stop at the terminal event is bounded by
	// StopWait alone.
	bin := fakeAgent(t, okBody+"\nsleep 30")
	code, out, stderr := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--linger", "0", "--grace", "0", "x")
	evs := jsonlEvents(t, out)
	if code != 0 || !strings.Contains(out, `"kind":"linger_kill"`) {
		t.Errorf("--linger 0: exit %d, stderr %q; want 0 with a linger_kill notice\n%s", code, stderr, out)
	} else if terminal, ok := evs.last(events.TypeUsage); !ok {
		t.Errorf("--linger 0: no usage event (the terminal step_finish)\n%s", out)
	} else if d := evs.finished().TS.Sub(terminal.TS); d > hub.StopWait {
		t.Errorf("--linger 0: run.finished %s after the terminal event; want within hub.StopWait %s (the default linger is %s)\n%s",
			d, hub.StopWait, budget.DefaultLinger, out)
	}

	// The timeout covers the version probe and the agent's start-up: an
	// attempt whose timeout ran out before the agent's first line tested
	// nothing, and runs again with the timeout doubled.
	bin = fakeAgent(t, `trap '' TERM
echo '{"type":"step_start","sessionID":"ses_g","part":{}}'
sleep 30`)
	timeout := 300 * time.Millisecond
	for attempt := 1; ; attempt++ {
		code, out, _ = hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--timeout", timeout.String(), "--grace", "0", "x")
		if code == 8 && !strings.Contains(out, `"ses_g"`) && attempt < 5 {
			t.Logf("attempt %d: --timeout %s ran out before the agent's first line; doubling it", attempt, timeout)
			timeout *= 2
			continue
		}
		break
	}
	took := time.Duration(jsonlEvents(t, out).finished().DurationMS) * time.Millisecond
	if max := timeout + hub.StopWait; code != 8 || took > max || !strings.Contains(out, `"signal":"SIGKILL"`) {
		t.Errorf("--grace 0 on an agent that ignores SIGTERM: exit %d in %s; want 8 (timeout) within %s (--timeout + hub.StopWait), SIGKILL\n%s", code, took, max, out)
	}

	bin = fakeAgent(t, "sleep 0.2\n"+okBody)
	code, out, stderr = hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--timeout", "0", "--idle-timeout", "0", "x")
	if code != 0 || !strings.Contains(out, `"timeout_ms":null,"idle_timeout_ms":null`) {
		t.Errorf("--timeout 0 --idle-timeout 0: exit %d, stderr %q; want 0 and no limits in run.started\n%s", code, stderr, out)
	}
}

// jsonlEvent is what the timing checks read of one line of --output jsonl.
type jsonlEvent struct {
	Type       events.Type `json:"type"`
	TS         time.Time   `json:"ts"`
	DurationMS int64       `json:"duration_ms"`
}

type jsonlStream []jsonlEvent

// jsonlEvents parses hub's --output jsonl, failing t on a line that is not
// an event.
func jsonlEvents(t *testing.T, out string) jsonlStream {
	t.Helper()
	var evs jsonlStream
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev jsonlEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line %q: %v", line, err)
		}
		evs = append(evs, ev)
	}
	return evs
}

// last returns the last event of type typ, and whether there is one.
func (s jsonlStream) last(typ events.Type) (jsonlEvent, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i].Type == typ {
			return s[i], true
		}
	}
	return jsonlEvent{}, false
}

// finished returns run.finished (the zero event if there is none).
func (s jsonlStream) finished() jsonlEvent {
	ev, _ := s.last(events.TypeRunFinished)
	return ev
}

// TestRunHelp: the help says that 0 is none for each duration flag, and
// where flags go.
func TestRunHelp(t *testing.T) {
	code, out, _ := hubCLI(t, "", "run", "--help")
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
	// No limit of its own on the waits: the agent has none either (it
	// sleeps 30 s), and the test's deadline is the one bound.
	select {
	case <-out.seen:
	case code := <-done:
		t.Fatalf("run ended (exit %d) before the agent's first event; stdout %q", code, out.String())
	case <-t.Context().Done():
		t.Fatalf("the agent's first event never came; stdout %q", out.String())
	}
	start := time.Now()
	close(kill)
	select {
	case code := <-done:
		if code != 130 || !strings.Contains(out.String(), `"signal":"SIGKILL"`) {
			t.Errorf("run after kill = exit %d; want 130 and SIGKILL\n%s", code, out.String())
		}
		// A kill skips the grace: the run ends within hub's own bounded
		// waits, well before --grace 30s would.
		if took := time.Since(start); took > hub.StopWait {
			t.Errorf("run took %s after kill; want at most hub.StopWait %s, not after --grace 30s", took, hub.StopWait)
		}
	case <-t.Context().Done():
		t.Fatal("run did not end after kill was closed")
	}
}
