package hub_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/answer"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
)

const scoreSchema = `{"type":"object","properties":{"score":{"type":"integer","minimum":0,"maximum":10}},"required":["score"],"additionalProperties":false}`

// TestRunSchema: with Request.Schema, the answer of an ok run must be one
// JSON value that matches; one that does not is sent back to the session
// with its problems, SchemaRetries times, each repair a resume on the same
// stream (a schema_retry notice, then its events; its usage in the totals);
// an answer still invalid is agent_failed/invalid_output with the problems,
// text the raw answer, structured null. The fake agent plays OpenCode,
// which gets the schema in its prompt.
func TestRunSchema(t *testing.T) {
	t.Parallel()
	sch, err := answer.Compile([]byte(scoreSchema))
	if err != nil {
		t.Fatal(err)
	}
	const rs = "\x1e"
	tests := []struct {
		name      string
		answers   string
		retries   int
		noSID     bool
		maxTokens int64
		maxTurns  int64
		bin       events.Bin
		reason    events.Reason
		want      string   // structured, when ok
		text      string   // run.finished.text
		prompts   int      // how many times the agent ran
		message   []string // in the error message
	}{
		{name: "valid", answers: `{"score":3}`, want: `{"score":3}`, text: `{"score":3}`, prompts: 1},
		{name: "fenced", answers: "```json\n{ \"score\": 10 }\n```", want: `{"score":10}`, text: "```json\n{ \"score\": 10 }\n```", prompts: 1},
		{name: "repaired", answers: `{"score":11}` + rs + `{"score":7}`, want: `{"score":7}`, text: `{"score":7}`, prompts: 2},
		{name: "trailing JSON repaired", answers: `{"score":1}{"score":2}` + rs + `{"score":2}`, want: `{"score":2}`, text: `{"score":2}`, prompts: 2},
		{name: "still invalid", answers: `{"score":11}` + rs + `{"score":7,"why":"x"}`, bin: events.BinAgentFailed, reason: events.ReasonInvalidOutput,
			text: `{"score":7,"why":"x"}`, prompts: 2, message: []string{"additional properties 'why' not allowed", "after 1 repair(s)"}},
		{name: "two repairs", answers: `no JSON here` + rs + `{"score":-1}` + rs + `{"score":0}`, retries: 2, want: `{"score":0}`, text: `{"score":0}`, prompts: 3},
		{name: "no repairs", answers: `{"score":"3"}`, retries: -1, bin: events.BinAgentFailed, reason: events.ReasonInvalidOutput,
			text: `{"score":"3"}`, prompts: 1, message: []string{"/score: got string, want integer", "--schema-retries 0"}},
		{name: "no session id", answers: `Sure! {"score":3}`, noSID: true, bin: events.BinAgentFailed, reason: events.ReasonInvalidOutput,
			text: `Sure! {"score":3}`, prompts: 1, message: []string{"begins with text", "no session id"}},
		{name: "session not resumable", answers: `{"score":11}` + rs + `BADSESSION`, bin: events.BinAgentFailed, reason: events.ReasonInvalidOutput,
			text: `{"score":11}`, prompts: 2, message: []string{"/score: maximum: got 11, want 10", "no repair: resuming session ses_fake1 failed: Error: Session not found"}},
		{name: "tokens used up", answers: `{"score":11}` + rs + `{"score":1}`, maxTokens: 18, bin: events.BinAgentFailed, reason: events.ReasonInvalidOutput,
			text: `{"score":11}`, prompts: 1, message: []string{"no repair: --max-tokens 18 is used up (18)"}},
		{name: "turns used up", answers: `{"score":11}` + rs + `{"score":1}`, maxTurns: 1, bin: events.BinAgentFailed, reason: events.ReasonInvalidOutput,
			text: `{"score":11}`, prompts: 1, message: []string{"no repair: --max-turns 1 is used up (1)"}},
		{name: "repair over the token budget", answers: `[]` + rs + `{"score":1}`, maxTokens: 30, bin: events.BinBudgetExceeded, reason: events.ReasonTokens, prompts: 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "prompts")
			res := runFake(t, t.Context(), "answers", func(r *hub.Request) {
				r.Schema, r.SchemaRetries, r.Prompt = sch, tt.retries, "rate this"
				r.Limits.MaxTokens, r.Limits.MaxTurns = tt.maxTokens, tt.maxTurns
				r.Env = append(r.Env, "HUB_FAKE_OUT="+out, "HUB_FAKE_ANSWERS="+tt.answers)
				if tt.noSID {
					r.Env = append(r.Env, "HUB_FAKE_NOSID=1")
				}
			})
			wantBin(t, res.fin, tt.bin, tt.reason)
			if tt.bin == "" && string(res.fin.Structured) != tt.want {
				t.Errorf("structured = %s, want %s", res.fin.Structured, tt.want)
			}
			if tt.bin != "" && string(res.fin.Structured) != "null" {
				t.Errorf("structured = %s, want null", res.fin.Structured)
			}
			if tt.text != "" && res.fin.Text != tt.text {
				t.Errorf("text = %q, want the raw answer %q", res.fin.Text, tt.text)
			}
			for _, m := range tt.message {
				if !strings.Contains(res.fin.Error.Message, m) {
					t.Errorf("error message = %q, want it to contain %q", res.fin.Error.Message, m)
				}
			}
			// What the agent was asked, on disk.
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			prompts := strings.Split(strings.TrimSuffix(string(b), "\n--\n"), "\n--\n")
			if len(prompts) != tt.prompts {
				t.Fatalf("the agent ran %d times (%q), want %d", len(prompts), prompts, tt.prompts)
			}
			if !strings.HasPrefix(prompts[0], "rate this\n\n") || !strings.Contains(prompts[0], scoreSchema) {
				t.Errorf("first prompt = %q, want the caller's prompt, then the schema", prompts[0])
			}
			for i, p := range prompts[1:] {
				if !strings.HasPrefix(p, "Your answer did not match the JSON Schema") || !strings.Contains(p, scoreSchema) {
					t.Errorf("repair prompt %d = %q, want the problems, then the schema", i+1, p)
				}
			}
			notices := res.notices(events.NoticeSchemaRetry)
			if len(notices) != tt.prompts-1 {
				t.Errorf("%d schema_retry notices, want %d", len(notices), tt.prompts-1)
			}
			for i, n := range notices {
				var d struct {
					Attempt     int              `json:"attempt"`
					MaxAttempts int              `json:"max_attempts"`
					SessionID   string           `json:"session_id"`
					Problems    []answer.Problem `json:"problems"`
				}
				if err := json.Unmarshal(n.Data, &d); err != nil || d.Attempt != i+1 || d.MaxAttempts != max(tt.retries, 1) || d.SessionID != sid || len(d.Problems) == 0 {
					t.Errorf("notice %d data = %s (%v), want attempt %d with problems", i, n.Data, err, i+1)
				}
			}
			// Every attempt's usage counts: 18 tokens each.
			reported := tt.prompts // attempts that reported usage
			if strings.HasSuffix(tt.answers, "BADSESSION") {
				reported--
			}
			if got, want := res.fin.Usage.Sum(), int64(18*reported); got != want {
				t.Errorf("run.finished tokens = %d, want %d (%d attempts)", got, want, reported)
			}
			if c := res.fin.CostUSD; tt.bin != events.BinBudgetExceeded && (c == nil || *c != 0.25*float64(reported)) {
				t.Errorf("run.finished cost = %v, want $%.2f (%d attempts of $0.25)", c, 0.25*float64(reported), reported)
			}
		})
	}
}

// TestRunSchemaRepairTimeout: a repair runs within what is left of
// --timeout; a repair that hangs ends the run as timeout/wall.
func TestRunSchemaRepairTimeout(t *testing.T) {
	t.Parallel()
	sch, err := answer.Compile([]byte(scoreSchema))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "prompts")
	timeout := 10 * time.Second
	res := runFake(t, t.Context(), "answers", func(r *hub.Request) {
		r.Schema = sch
		r.Limits = budget.Limits{Timeout: timeout, Grace: 200 * time.Millisecond}
		// The first turn answers wrong; the repair's turn is the fake's
		// "hang", which never answers.
		r.Env = append(r.Env, "HUB_FAKE_OUT="+out, "HUB_FAKE_ANSWERS={}\x1eHANG")
	})
	wantBin(t, res.fin, events.BinTimeout, events.ReasonWall)
	if !strings.Contains(res.fin.Error.Message, "while hub resumed session ses_fake1 to repair an answer that did not match --schema ((root): missing property 'score')") {
		t.Errorf("error message = %q, want it to say what hub was doing", res.fin.Error.Message)
	}
	if res.took > timeout+2*(200*time.Millisecond+hub.StopWait) {
		t.Errorf("run took %s, want it within --timeout %s and a stop", res.took, timeout)
	}
	if string(res.fin.Structured) != "null" {
		t.Errorf("structured = %s, want null", res.fin.Structured)
	}
}

// TestRunNoSchema: without a schema, run.finished has no structured field.
func TestRunNoSchema(t *testing.T) {
	t.Parallel()
	res := runFake(t, t.Context(), "ok", nil)
	if res.fin.Structured != nil || strings.Contains(string(res.stream), `"structured"`) {
		t.Errorf("structured = %s in %s, want none", res.fin.Structured, res.stream)
	}
}

// TestRunSchemaRedacted: a credential in the answer is redacted in
// run.finished.structured like anywhere else; a value that, redacted, no
// longer matches the schema is agent_failed/invalid_output, never a
// structured answer outside it.
func TestRunSchemaRedacted(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-Abc123Def456Ghi789Jkl"
	for _, tt := range []struct {
		name, schema string
		ok           bool
	}{
		{"still matches", `{"type":"object","properties":{"key":{"type":"string"}},"required":["key"]}`, true},
		{"no longer matches", `{"type":"object","properties":{"key":{"type":"string","pattern":"^sk-"}},"required":["key"]}`, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sch, err := answer.Compile([]byte(tt.schema))
			if err != nil {
				t.Fatal(err)
			}
			res := runFake(t, t.Context(), "answers", func(r *hub.Request) {
				r.Schema = sch
				r.Env = append(r.Env, "HUB_FAKE_OUT="+filepath.Join(t.TempDir(), "prompts"), "HUB_FAKE_ANSWERS={\"key\":\""+secret+"\"}", "MY_API_KEY="+secret)
			})
			if strings.Contains(string(res.stream), secret) {
				t.Fatalf("the credential is in the events: %s", res.stream)
			}
			if tt.ok {
				wantBin(t, res.fin, "", "")
				if string(res.fin.Structured) != `{"key":"[REDACTED]"}` {
					t.Errorf("structured = %s, want the value redacted", res.fin.Structured)
				}
				return
			}
			wantBin(t, res.fin, events.BinAgentFailed, events.ReasonInvalidOutput)
			if string(res.fin.Structured) != "null" || !strings.Contains(res.fin.Error.Message, "redacted, it no longer matches") {
				t.Errorf("structured = %s, error %q; want null and why", res.fin.Structured, res.fin.Error.Message)
			}
		})
	}
}

// TestRunSchemaManyProblems: an answer with many problems is sent back
// with the first 20 (and how many there are), in the notice as in the
// repair prompt: an answer can have millions.
func TestRunSchemaManyProblems(t *testing.T) {
	t.Parallel()
	sch, err := answer.Compile([]byte(`{"type":"array","items":{"type":"string"}}`))
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "prompts")
	res := runFake(t, t.Context(), "answers", func(r *hub.Request) {
		r.Schema = sch
		r.Env = append(r.Env, "HUB_FAKE_OUT="+out, "HUB_FAKE_ANSWERS=["+strings.TrimSuffix(strings.Repeat("1,", 1000), ",")+"]\x1e[]")
	})
	wantBin(t, res.fin, "", "")
	n := res.notices(events.NoticeSchemaRetry)
	if len(n) != 1 {
		t.Fatalf("%d schema_retry notices, want 1", len(n))
	}
	var d struct {
		Problems []answer.Problem `json:"problems"`
		Total    int              `json:"problems_total"`
	}
	if err := json.Unmarshal(n[0].Data, &d); err != nil || len(d.Problems) != 20 || d.Total != 1000 {
		t.Errorf("notice data: %d problems of %d (%v), want 20 of 1000", len(d.Problems), d.Total, err)
	}
	b, _ := os.ReadFile(out)
	if repair := strings.Split(string(b), "\n--\n")[1]; !strings.Contains(repair, "- and 980 more") || len(repair) > 4096 {
		t.Errorf("repair prompt (%d bytes) = %.300q…, want 20 problems and the count of the rest", len(repair), repair)
	}
}
