package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
)

// loopBody is a fake OpenCode that calls tools until stopped; resumed
// (--session=ses_x) it records its stdin in $HUB_FAKE_OUT and answers.
const loopBody = `case "$*" in *--session=ses_x*)
  cat > "$HUB_FAKE_OUT"
  echo '{"type":"step_start","sessionID":"ses_x","part":{}}'
  echo '{"type":"text","sessionID":"ses_x","part":{"type":"text","text":"best so far"}}'
  echo '{"type":"step_finish","sessionID":"ses_x","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}'
  exit 0;;
esac
echo '{"type":"step_start","sessionID":"ses_x","part":{}}'
for i in 1 2 3 4 5; do
  echo '{"type":"tool_use","sessionID":"ses_x","part":{"type":"tool","tool":"bash","callID":"c'$i'","state":{"status":"completed","input":{"command":"true"},"output":""}}}'
  sleep 0.05
done
sleep 30`

// TestRunFinalizeFlags: --max-tool-steps stops the loop and resumes it for a
// final answer (exit 9, partial: true, the answer as text, the final-answer
// prompt on the resume's stdin); --finalize-timeout 0 runs no resume.
func TestRunFinalizeFlags(t *testing.T) {
	bin := fakeAgent(t, loopBody)
	for _, tt := range []struct {
		finalize string
		partial  bool
		text     string
	}{
		{"", true, "best so far"},
		{"0", false, ""},
	} {
		out := filepath.Join(t.TempDir(), "stdin")
		args := []string{"run", "--agent", "opencode", "--bin", bin, "--output", "json", "--grace", "200ms", "--permission", "full", "--yes",
			"--max-tool-steps", "2", "--env", "HUB_FAKE_OUT=" + out}
		if tt.finalize != "" {
			args = append(args, "--finalize-timeout", tt.finalize)
		}
		code, stdout, stderr := hubCLI(t, "", append(args, "loop")...)
		var ev struct {
			Partial bool          `json:"partial"`
			Text    string        `json:"text"`
			Error   *events.Error `json:"error"`
		}
		if err := json.Unmarshal([]byte(stdout), &ev); err != nil || code != 9 || ev.Error == nil || ev.Error.Reason != events.ReasonToolSteps {
			t.Fatalf("--finalize-timeout %q: exit %d, %q (%v), stderr %q; want exit 9, budget_exceeded/tool_steps", tt.finalize, code, stdout, err, stderr)
		}
		if ev.Partial != tt.partial || ev.Text != tt.text {
			t.Errorf("--finalize-timeout %q: partial %v text %q, want %v %q", tt.finalize, ev.Partial, ev.Text, tt.partial, tt.text)
		}
		got, err := os.ReadFile(out)
		switch {
		case tt.partial && string(got) != hub.FinalAnswerPrompt:
			t.Errorf("resume stdin = %q, %v; want the final-answer prompt", got, err)
		case !tt.partial && err == nil:
			t.Errorf("--finalize-timeout 0 resumed the session (stdin %q)", got)
		}
		if tt.partial && !strings.Contains(ev.Error.Message, "resumed session ses_x") {
			t.Errorf("error message %q does not say the session was resumed", ev.Error.Message)
		}
	}
}

// TestAgentRetriesWarning: --agent-retries for an agent whose retries hub
// cannot fully bound says so on stderr, and runs.
func TestAgentRetriesWarning(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pi")
	// pi prints its version on stderr; the run itself fails (no output),
	// which is not what is tested: that it runs, after the warning.
	if err := hubtest.WriteScript(bin, []byte("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 0.73.1 >&2; exit 0; fi\nexit 0\n")); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := hubCLI(t, "", "run", "--agent", "pi", "--bin", bin, "--output", "json", "--agent-retries", "2", "x")
	if code == 2 || !strings.Contains(stdout, `"type":"run.finished"`) || !strings.Contains(stderr, "hub: warning: --agent-retries 2: pi takes its retry counts only from settings.json") {
		t.Errorf("exit %d, stderr %q; want a run and the warning", code, stderr)
	}
	// OpenCode's retries hub counts from its log: no warning.
	code, _, stderr = hubCLI(t, "", "run", "--agent", "opencode", "--bin", fakeAgent(t, okBody), "--output", "json", "--agent-retries", "2", "x")
	if code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("opencode: exit %d, stderr %q; want 0 and no warning", code, stderr)
	}
}
