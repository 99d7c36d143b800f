package hubtest

// The real-CLI tests of structured answers (SPEC §6.2): a real agent CLI
// given --schema, with a mock model that answers what the prompt says
// (mockllm.Answer: one answer per turn), checked in run.finished, in what
// the model was asked, and on hub's stdout with --output answer.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/answer"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/mockllm"
)

// StructuredSchema is the schema of the structured-answer tests: a closed
// object with a bounded integer and an optional date.
const StructuredSchema = `{"type":"object","properties":{"score":{"type":"integer","minimum":0,"maximum":10},` +
	`"when":{"type":"string","format":"date"}},"required":["score"],"additionalProperties":false}`

// StructuredStrictSchema is StructuredSchema in OpenAI's strict subset
// (every property required, "when" nullable), for Codex.
const StructuredStrictSchema = `{"type":"object","properties":{"score":{"type":"integer","minimum":0,"maximum":10},` +
	`"when":{"type":["string","null"],"format":"date"}},"required":["score","when"],"additionalProperties":false}`

// StructuredAgent is how an agent's structured-answer tests run.
type StructuredAgent struct {
	Agent Agent
	// Schema is the --schema of the tests: StructuredSchema, or
	// StructuredStrictSchema for a CLI that takes only OpenAI's subset.
	Schema string
	// Valid is an answer that matches Schema with score 3.
	Valid string
	// Native says the CLI delivers the answer through its own tool
	// (Info.AnswerTool, Claude Code's StructuredOutput) and checks it
	// against the schema itself (all but formats): an answer it refuses is
	// retried inside the CLI, and hub sees only what it accepted.
	Native bool
	// InPrompt says hub gives the CLI the schema in the prompt
	// (answer.Schema.WithInstructions); else it is a flag the CLI has
	// (Claude Code's --json-schema, Codex's --output-schema).
	InPrompt bool
}

// Structured runs a's CLI through every case of SPEC §6.2 that a real CLI
// can be made to show:
//
//   - a valid answer arrives in run.finished.structured, and alone on hub's
//     stdout with --output answer;
//   - an answer outside the schema is sent back once (a schema_retry
//     notice, a second model call that quotes the problem) and the
//     corrected one is the result, both calls' usage in the totals;
//   - answers that stay outside the schema (out of range, an extra
//     property, trailing JSON) end as agent_failed/invalid_output with the
//     problems in the message, structured null;
//   - a fenced answer is taken from its block (text answers only).
func Structured(t *testing.T, a StructuredAgent) {
	sch, err := answer.Compile([]byte(a.Schema))
	if err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, prompt string, edit ...func(*hub.Request)) (Result, *Env) {
		e := a.Agent.Prepare(t, Setup{})
		res := e.Run(t, prompt, budget.Limits{}, append([]func(*hub.Request){func(r *hub.Request) { r.Schema = sch }}, edit...)...)
		return res, e
	}
	valid := compact(t, a.Valid)
	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		res, e := run(t, "Rate it. MOCK_ANSWER "+a.Valid)
		if !res.Fin.OK || string(res.Fin.Structured) != valid {
			t.Fatalf("run.finished ok=%v error=%v structured=%s, want ok and %s", res.Fin.OK, res.Fin.Error, res.Fin.Structured, valid)
		}
		if n := len(ModelCalls(e.Server)); n != 1 {
			t.Errorf("%d model calls, want 1", n)
		}
		asked := ModelCalls(e.Server)[0].UserText
		if a.Agent.Prompt == PromptLastUser {
			asked = ModelCalls(e.Server)[0].LastUserText
		}
		if a.InPrompt != strings.Contains(asked, a.Schema) {
			t.Errorf("the prompt's user text %q holds the schema: %v, want %v", asked, !a.InPrompt, a.InPrompt)
		}
		if !a.InPrompt && !schemaFlag(res, a.Schema) {
			t.Errorf("run.started argv %q does not give the CLI the schema", res.Events[0].Body.(events.RunStarted).Argv)
		}
	})
	if a.Native {
		t.Run("no effect at permission none", func(t *testing.T) {
			t.Parallel()
			res, _ := run(t, "Rate it. MOCK_ANSWER "+a.Valid, func(r *hub.Request) { r.Permission = grant.None })
			if !res.Fin.OK || string(res.Fin.Structured) != valid {
				t.Fatalf("run.finished ok=%v error=%v structured=%s, want ok and %s: the answer tool is no effect", res.Fin.OK, res.Fin.Error, res.Fin.Structured, valid)
			}
		})
	}
	t.Run("output answer", func(t *testing.T) {
		t.Parallel()
		e := a.Agent.Prepare(t, Setup{})
		stdout, stderr, code := e.Hub(t, "--schema", e.Write(t, "schema.json", a.Schema), "--output", "answer", "--", "Rate it. MOCK_ANSWER "+a.Valid)
		if code != 0 || stdout != valid+"\n" {
			t.Errorf("hub run --output answer: exit %d, stdout %q, want 0 and %q alone (stderr %q)", code, stdout, valid+"\n", stderr)
		}
	})
	// The first answer is outside the schema in a way the CLI does not
	// check itself: a Native CLI takes a date that is no date (formats are
	// not checked), a text CLI a score out of range.
	first := `{"score":11}`
	problem := "/score: maximum: got 11, want 10"
	if a.Native {
		first, problem = `{"score":3,"when":"yesterday"}`, "/when: 'yesterday' is not valid date"
	}
	t.Run("repaired", func(t *testing.T) {
		t.Parallel()
		res, e := run(t, "Rate it. MOCK_ANSWER "+first+mockllm.Then+a.Valid)
		if !res.Fin.OK || string(res.Fin.Structured) != valid {
			t.Fatalf("run.finished ok=%v error=%v structured=%s, want ok and %s", res.Fin.OK, res.Fin.Error, res.Fin.Structured, valid)
		}
		calls := ModelCalls(e.Server)
		if len(calls) != 2 {
			t.Fatalf("%d model calls, want 2 (the answer, then its repair)", len(calls))
		}
		if last := calls[1].LastUserText; !strings.Contains(last, problem) || !strings.Contains(last, "corrected JSON") {
			t.Errorf("the repair call's last user text = %q, want the problem %q and the request", last, problem)
		}
		if n := res.Notices(events.NoticeSchemaRetry); len(n) != 1 || !strings.Contains(n[0].Message, problem) {
			t.Errorf("schema_retry notices = %v, want one naming %q", n, problem)
		}
		if got, want := res.Fin.Usage.Output, int64(2*mockllm.CompletionTokens); got != want {
			t.Errorf("run.finished usage.output = %d, want %d: both calls count", got, want)
		}
		if res.Fin.CostUSD == nil || res.Fin.CostSource == events.CostUnknown {
			t.Fatalf("run.finished cost %v (%s), want the cost of both calls", res.Fin.CostUSD, res.Fin.CostSource)
		}
		// Both calls cost the same: the run's cost is twice one's (Claude
		// Code reports a resumed session's cost as the session's total).
		one, _ := run(t, "Rate it. MOCK_ANSWER "+a.Valid)
		if c := one.Fin.CostUSD; c == nil || math.Abs(*res.Fin.CostUSD-2**c) > 1e-9 {
			t.Errorf("run.finished cost $%v, want twice one call's $%v", *res.Fin.CostUSD, c)
		}
	})
	invalid := []struct{ name, answer, native, text string }{
		{"out of range", `{"score":11}`, "must be <= 10", "/score: maximum: got 11, want 10"},
		{"extra property", `{"score":1,"note":"x"}`, "must NOT have additional properties", "additional properties 'note' not allowed"},
		{"trailing JSON", `{"score":1}{"score":2}`, "never called the StructuredOutput tool", "trailing JSON"},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, _ := run(t, "Rate it. MOCK_ANSWER "+tt.answer, func(r *hub.Request) {
				// Claude Code's own retries of a refused call: 2, not 5.
				r.Env = append(r.Env, "MAX_STRUCTURED_OUTPUT_RETRIES=2")
			})
			WantErr(t, res.Fin, events.BinAgentFailed, events.ReasonInvalidOutput, 0)
			want := tt.text
			if a.Native {
				want = tt.native
			}
			if !strings.Contains(res.Fin.Error.Message, want) {
				t.Errorf("error message = %q, want it to name %q", res.Fin.Error.Message, want)
			}
			if string(res.Fin.Structured) != "null" {
				t.Errorf("structured = %s, want null", res.Fin.Structured)
			}
			if !a.Native && res.Fin.Text != tt.answer {
				t.Errorf("text = %q, want the raw answer %q", res.Fin.Text, tt.answer)
			}
		})
	}
	if !a.Native {
		t.Run("fenced", func(t *testing.T) {
			t.Parallel()
			res, _ := run(t, "Rate it. MOCK_ANSWER ```json\\n"+a.Valid+"\\n```")
			if !res.Fin.OK || string(res.Fin.Structured) != valid {
				t.Fatalf("run.finished ok=%v error=%v structured=%s, want ok and %s", res.Fin.OK, res.Fin.Error, res.Fin.Structured, valid)
			}
		})
	}
}

// schemaFlag reports whether the run's argv gives the CLI schema as a
// flag: --json-schema=<it>, or --output-schema=<a file that holds it>.
func schemaFlag(res Result, schema string) bool {
	rs, ok := res.Events[0].Body.(events.RunStarted)
	if !ok {
		return false
	}
	for _, a := range rs.Argv {
		if v, ok := strings.CutPrefix(a, "--json-schema="); ok && v == schema {
			return true
		}
		if p, ok := strings.CutPrefix(a, "--output-schema="); ok {
			b, err := os.ReadFile(p)
			return err == nil && string(b) == schema
		}
	}
	return false
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return b.String()
}

// The hub binary, built once per test binary (see Env.Hub).
var (
	hubOnce sync.Once
	hubBin  string
	hubErr  error
)

// Hub runs the hub binary — built from this module with `go build`, once
// per test binary — as `hub run --agent <agent> --bin <CLI> --cwd e.Work
// --model <model> ARGS…` with e.Env on top of the test's environment, and
// returns its stdout, stderr and exit status. It bounds the run by the
// test's deadline (Unbounded) and checks that no process of the run is left.
func (e *Env) Hub(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	hubOnce.Do(func() {
		dir, err := os.MkdirTemp("", "hub-bin-")
		if err != nil {
			hubErr = err
			return
		}
		hubBin = filepath.Join(dir, "hub")
		build := exec.Command("go", "build", "-o", hubBin, "./cmd/hub")
		build.Dir = Root()
		out, err := build.CombinedOutput()
		if err != nil {
			hubErr = fmt.Errorf("go build ./cmd/hub: %v\n%s", err, out)
		}
	})
	if hubErr != nil {
		t.Fatal(hubErr)
	}
	bin := Bin(t, e.Agent.Name)
	defer e.Agent.TakeSlot(t)()
	var lim budget.Limits
	Unbounded(t, &lim)
	argv := []string{"run", "--agent", e.Agent.Name, "--bin", bin, "--cwd", e.Work, "--timeout", lim.Timeout.String()}
	if e.Agent.Model != "" {
		argv = append(argv, "--model", e.Agent.Model)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lim.Timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, hubBin, append(argv, args...)...)
	cmd.Dir = Root()
	cmd.Env = append(slices.Clone(os.Environ()), e.Env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("hub %q: %v", args, err)
	}
	if left := Leftovers(e.Dir); len(left) > 0 {
		t.Errorf("processes of the run still alive after hub exited: %v", left)
	}
	return out.String(), errb.String(), code
}

// Schema compiles s as a --schema (answer.Compile), failing t fatally when
// it does not compile.
func Schema(t testing.TB, s string) *answer.Schema {
	t.Helper()
	sch, err := answer.Compile([]byte(s))
	if err != nil {
		t.Fatalf("answer.Compile(%.80s) = %v", s, err)
	}
	return sch
}
