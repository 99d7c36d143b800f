package main

import (
	"strings"
	"testing"
)

// A second breaker's reproductions (each failed before its fix): credential
// pieces that reached hub's output in the clear. Each case sets FOO_TOKEN (named like a token, 17 bytes) and has an
// opencode-shaped fake agent write it in two pieces, or cut by hub itself.
const b2Secret = "fooTokCanary42val"

func b2Run(t *testing.T, body string) (int, string, string) {
	t.Helper()
	t.Setenv("FOO_TOKEN", b2Secret)
	bin := fakeAgent(t, body)
	return hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "x")
}

// pieces reports which pieces of the secret appear in s unredacted.
func b2Pieces(s string, pieces ...string) []string {
	var found []string
	for _, p := range pieces {
		if strings.Contains(s, p) {
			found = append(found, p)
		}
	}
	return found
}

// Two text events (two message events) that each hold one part of the
// secret: neither part is redacted, so the messages put together hold it.
func TestBreaker2SecretSplitOverMessages(t *testing.T) {
	_, stdout, _ := b2Run(t, `echo '{"type":"step_start","sessionID":"ses_h","part":{}}'
echo '{"type":"text","sessionID":"ses_h","part":{"type":"text","text":"first fooTokCanar"}}'
echo '{"type":"text","sessionID":"ses_h","part":{"type":"text","text":"y42val second"}}'
echo '{"type":"step_finish","sessionID":"ses_h","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}'`)
	if f := b2Pieces(stdout, "fooTokCanar", "y42val"); len(f) == 2 {
		t.Errorf("both halves of the secret are in the output: %q", f)
	}
}

// Two stderr lines that each hold one part: the error message joins the
// stderr tail with " | ", so one string of run.finished holds the secret.
func TestBreaker2SecretSplitOverStderrLines(t *testing.T) {
	_, stdout, stderr := b2Run(t, `printf 'error: token fooTokCanar\ny42val rejected\n' >&2; exit 3`)
	if strings.Contains(stdout, "fooTokCanar | y42val") {
		t.Errorf("run.finished's error message holds the whole secret, split by ' | ':\n%s\nstderr: %s", stdout, stderr)
	}
}

// A tool output hub cuts at 16 KiB right after 11 bytes of the secret:
// the 11 bytes are sent (hub cut the text, not the agent).
func TestBreaker2SecretAtOutputCut(t *testing.T) {
	_, stdout, _ := b2Run(t, `python3 - <<'PY'
import json
o = "x"*(16384-11) + "fooTokCanary42val" + "tail"*10
print(json.dumps({"type":"step_start","sessionID":"ses_h","part":{}}))
print(json.dumps({"type":"tool_use","sessionID":"ses_h","part":{"type":"tool","tool":"bash","callID":"c1","state":{"status":"completed","input":{"command":"cat"},"output":o,"metadata":{"exit":0}}}}))
print(json.dumps({"type":"step_finish","sessionID":"ses_h","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}))
PY`)
	if strings.Contains(stdout, "fooTokCanar") {
		t.Errorf("the cut tool output ends in 11 bytes of the secret")
	}
}

// False positive: a Go format string is read as a URL password.
func TestBreaker2FormatStringNotAPassword(t *testing.T) {
	_, stdout, _ := b2Run(t, `echo '{"type":"step_start","sessionID":"ses_h","part":{}}'
echo '{"type":"text","sessionID":"ses_h","part":{"type":"text","text":"fmt.Sprintf(\"%s://%s:%s@%s\", a, b, c, d)"}}'
echo '{"type":"step_finish","sessionID":"ses_h","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}'`)
	if !strings.Contains(stdout, `%s://%s:%s@%s`) {
		t.Errorf("ordinary code mangled: %s", stdout)
	}
}

// Two lines of stdout that are not JSON, each with one part of the secret:
// they become two non_json_output notices, redacted as one text.
func TestBreaker2SecretSplitOverStrayLines(t *testing.T) {
	_, stdout, _ := b2Run(t, `echo 'log fooTokCan'
echo 'ary42val end'
echo '{"type":"step_start","sessionID":"ses_h","part":{}}'
echo '{"type":"text","sessionID":"ses_h","part":{"type":"text","text":"ok"}}'
echo '{"type":"step_finish","sessionID":"ses_h","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}'`)
	if f := b2Pieces(stdout, "fooTokCan", "ary42val"); len(f) == 2 {
		t.Errorf("both halves of the secret are in the notices: %q", f)
	}
}
