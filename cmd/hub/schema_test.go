package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubcli/hub/events"
)

// answerBody is a fake OpenCode that records its prompt in $HUB_FAKE_OUT
// (appending) and answers $HUB_FAKE_FIRST, or $HUB_FAKE_SECOND when
// resumed (--session=ses_x).
const answerBody = `cat >> "$HUB_FAKE_OUT"; printf '\n--\n' >> "$HUB_FAKE_OUT"
text="$HUB_FAKE_FIRST"
case "$*" in *--session=ses_x*) text="$HUB_FAKE_SECOND";; esac
echo '{"type":"step_start","sessionID":"ses_x","part":{}}'
printf '{"type":"text","sessionID":"ses_x","part":{"type":"text","text":"%s"}}\n' "$text"
echo '{"type":"step_finish","sessionID":"ses_x","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}'`

func writeSchema(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "schema.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOutputAnswer: --output answer prints only the answer on stdout — the
// structured value as one JSON line with --schema, else the final text —
// and a failure only on stderr, with the bin's exit status.
func TestOutputAnswer(t *testing.T) {
	bin := fakeAgent(t, answerBody)
	schema := writeSchema(t, `{"type":"object","properties":{"score":{"type":"integer","maximum":10}},"required":["score"],"additionalProperties":false}`)
	tests := []struct {
		name, first, second string
		schema              bool
		retries             string
		code                int
		stdout              string
		stderr              string
		prompts             int
	}{
		{name: "structured", first: `{ \"score\": 3 }`, schema: true, stdout: "{\"score\":3}\n", prompts: 1},
		{name: "fenced", first: "```json\\n{\\\"score\\\": 4}\\n```", schema: true, stdout: "{\"score\":4}\n", prompts: 1},
		{name: "repaired", first: `{\"score\":11}`, second: `{\"score\":9}`, schema: true, stdout: "{\"score\":9}\n", prompts: 2},
		{name: "text", first: "plain words", stdout: "plain words\n", prompts: 1},
		{name: "still invalid", first: `{\"score\":11}`, second: `{\"score\":12}`, schema: true,
			code: events.BinAgentFailed.ExitCode(), stderr: "agent_failed/invalid_output: the answer does not match --schema: /score: maximum: got 12, want 10", prompts: 2},
		{name: "no repair", first: `{\"score\":11}`, schema: true, retries: "0",
			code: events.BinAgentFailed.ExitCode(), stderr: "/score: maximum: got 11, want 10; no repair asked for (--schema-retries 0)", prompts: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "prompts")
			args := []string{"run", "--agent", "opencode", "--bin", bin, "--output", "answer",
				"--env", "HUB_FAKE_OUT=" + out, "--env", "HUB_FAKE_FIRST=" + tt.first, "--env", "HUB_FAKE_SECOND=" + tt.second}
			if tt.schema {
				args = append(args, "--schema", schema)
			}
			if tt.retries != "" {
				args = append(args, "--schema-retries", tt.retries)
			}
			code, stdout, stderr := hubCLI(t, "", append(args, "score it")...)
			if code != tt.code || stdout != tt.stdout {
				t.Errorf("exit %d, stdout %q, want %d, %q (stderr %q)", code, stdout, tt.code, tt.stdout, stderr)
			}
			if tt.stderr != "" && !strings.Contains(stderr, tt.stderr) {
				t.Errorf("stderr %q, want it to contain %q", stderr, tt.stderr)
			}
			if tt.stderr == "" && stderr != "" {
				t.Errorf("stderr %q, want nothing", stderr)
			}
			b, _ := os.ReadFile(out)
			if n := strings.Count(string(b), "\n--\n"); n != tt.prompts {
				t.Errorf("the agent ran %d times, want %d (prompts %q)", n, tt.prompts, b)
			}
		})
	}
}

// TestSchemaUsageErrors: a --schema that is not a usable JSON Schema file,
// or a negative --schema-retries, is a usage error (exit 2) that names the
// file and what is wrong, and nothing starts.
func TestSchemaUsageErrors(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started")
	bin := fakeAgent(t, "touch "+marker+"\n"+okBody)
	dir := t.TempDir()
	tests := []struct {
		name   string
		schema string // file content; "" for a file that does not exist
		flags  []string
		want   string
	}{
		{name: "missing file", want: "no such file"},
		{name: "not JSON", schema: "type: object", want: "not a JSON Schema"},
		{name: "not a schema", schema: `{"type":"objet"}`, want: "not a valid JSON Schema"},
		{name: "unresolvable ref", schema: `{"$ref":"#/$defs/missing"}`, want: "$ref does not resolve"},
		{name: "remote ref", schema: `{"$ref":"https://example.com/x.json"}`, want: "only within the schema file"},
		{name: "negative retries", schema: `{}`, flags: []string{"--schema-retries", "-1"}, want: "--schema-retries must be a count"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".json")
			if tt.schema != "" {
				if err := os.WriteFile(p, []byte(tt.schema), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			args := append([]string{"run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--schema", p}, tt.flags...)
			code, stdout, stderr := hubCLI(t, "", append(args, "x")...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want 2, nothing, and %q", code, stdout, stderr, tt.want)
			}
			if tt.schema != "" && !strings.Contains(stderr, p) && tt.flags == nil {
				t.Errorf("stderr %q does not name the file %s", stderr, p)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Fatalf("the agent started")
			}
		})
	}
}

// TestTextOutputSchema: with --schema, text output's stdout is the value
// that matched and nothing else (the answer hub sent back is not it); the
// agent's text streams on stderr with the summary.
func TestTextOutputSchema(t *testing.T) {
	bin := fakeAgent(t, answerBody)
	schema := writeSchema(t, `{"type":"object","properties":{"score":{"type":"integer","maximum":10}},"required":["score"],"additionalProperties":false}`)
	out := filepath.Join(t.TempDir(), "prompts")
	code, stdout, stderr := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "text", "--schema", schema,
		"--env", "HUB_FAKE_OUT="+out, "--env", `HUB_FAKE_FIRST={\"score\":11}`, "--env", `HUB_FAKE_SECOND={\"score\":9}`, "score it")
	if code != 0 || stdout != "{\"score\":9}\n" {
		t.Errorf("exit %d, stdout %q; want 0 and only the value that matched", code, stdout)
	}
	for _, want := range []string{`{"score":11}`, `{"score":9}`, "schema_retry", "── ok"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q, want it to show %q", stderr, want)
		}
	}
}

// TestSchemaRefusedFirst: a --schema the agent cannot carry is refused
// before anything starts, the version probe included: a missing binary is
// not even looked for.
func TestSchemaRefusedFirst(t *testing.T) {
	open := writeSchema(t, `{"type":"object","properties":{"a":{"type":"string"}}}`)
	array := writeSchema(t, `{"type":"array"}`)
	for _, tt := range []struct{ agent, schema, want string }{
		{"codex", open, `an object must have "additionalProperties": false`},
		{"claude", array, `the root must be {"type": "object"`},
	} {
		code, stdout, stderr := hubCLI(t, "", "run", "--agent", tt.agent, "--bin", "/nonexistent/"+tt.agent, "--output", "json", "--schema", tt.schema, "hi")
		if code != events.BinInvalidInput.ExitCode() || !strings.Contains(stdout, `"reason":"bad_request"`) || !strings.Contains(stderr, tt.want) {
			t.Errorf("%s: exit %d, stdout %s, stderr %q; want invalid_input/bad_request naming %q", tt.agent, code, stdout, stderr, tt.want)
		}
	}
}
