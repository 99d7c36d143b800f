package codex_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/normalize"
	"github.com/hubcli/hub/normalize/codex"
)

func decode(d *codex.Decoder, lines ...string) []events.Body {
	var out []events.Body
	for _, l := range lines {
		out = d.Decode(out, []byte(l))
	}
	return out
}

func exit(code int) normalize.End { return normalize.End{ExitCode: &code} }

func usages(bodies []events.Body) []events.Usage {
	var out []events.Usage
	for _, b := range bodies {
		if u, ok := b.(events.Usage); ok {
			out = append(out, u)
		}
	}
	return out
}

func notices(bodies []events.Body, kind events.NoticeKind) []events.Notice {
	var out []events.Notice
	for _, b := range bodies {
		if n, ok := b.(events.Notice); ok && n.Kind == kind {
			out = append(out, n)
		}
	}
	return out
}

const (
	started   = `{"type":"thread.started","thread_id":"t1"}`
	turn      = `{"type":"turn.started"}`
	answer    = `{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"done"}}`
	completed = `{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":200,"cache_write_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":10}}`
)

// TestUsage: input excludes cached tokens, the cost is left to hub's meter
// (unknown here; the root package's TestMeterCodex checks the price), and a second
// report of the running total yields only its growth.
func TestUsage(t *testing.T) {
	d := codex.New(codex.Options{Model: "gpt-5.5"})
	second := `{"type":"turn.completed","usage":{"input_tokens":2500,"cached_input_tokens":700,"cache_write_input_tokens":100,"output_tokens":80,"reasoning_output_tokens":10}}`
	us := usages(decode(d, started, turn, answer, completed, second))
	if len(us) != 2 {
		t.Fatalf("%d usage events, want 2", len(us))
	}
	s := us[0].Step
	if s.Input != 800 || s.CacheRead != 200 || s.Output != 50 || s.Reasoning != 10 {
		t.Errorf("first step = %+v, want input 800 (1000 − 200 cached), cache read 200, output 50, reasoning 10", s)
	}
	if us[0].CostSource != events.CostUnknown || s.CostUSD != nil || us[0].Total.CostUSD != nil {
		t.Errorf("first cost = %v/%v %s, want null and unknown (the meter prices it)", s.CostUSD, us[0].Total.CostUSD, us[0].CostSource)
	}
	if us[0].Model == nil || *us[0].Model != "gpt-5.5" {
		t.Errorf("usage model = %v, want gpt-5.5 (the meter prices by it)", us[0].Model)
	}
	// Running total 2500/700/100 written/80: growth is input (2500−700−100)−800
	// = 900, cache read 500, cache write 100, output 30.
	g := us[1].Step
	if g.Input != 900 || g.CacheRead != 500 || g.CacheWrite != 100 || g.Output != 30 || g.Reasoning != 0 {
		t.Errorf("second step = %+v, want the growth 900/500/100/30/0", g)
	}
	tot := us[1].Total
	if tot.Input != 1700 || tot.CacheRead != 700 || tot.CacheWrite != 100 || tot.Output != 80 {
		t.Errorf("total = %+v, want the last running total 1700/700/100/80", tot)
	}
	if n := notices(decode(d), events.NoticeCostUnknown); len(n) != 0 {
		t.Errorf("cost_unknown from the decoder: %+v", n)
	}
}

// TestUnknownModelCost: without a model (or with any model: the decoder
// has no price table) the cost is null and unknown, and the tokens count.
// The cost_unknown notice for a model without a price comes from hub's
// meter (the root package's TestMeterCodex, budget's TestMeterPrice).
func TestUnknownModelCost(t *testing.T) {
	for _, model := range []string{"", "mock-model"} {
		d := codex.New(codex.Options{Model: model})
		bodies := decode(d, started, turn, answer, completed, completed)
		us := usages(bodies)
		if len(us) != 2 || us[1].Total.CostUSD != nil || us[1].CostSource != events.CostUnknown {
			t.Fatalf("model %q: usage = %+v, want cost null and unknown", model, us)
		}
		if us[0].Total.Input != 800 {
			t.Errorf("tokens not counted: %+v", us[0].Total)
		}
	}
}

// TestReroute: the warning "model rerouted: a -> b" changes the model of
// the usage events, by which hub prices them (the root package's TestMeterCodex).
func TestReroute(t *testing.T) {
	d := codex.New(codex.Options{Model: "mock-model"})
	bodies := decode(d, started,
		`{"type":"item.completed","item":{"id":"item_0","type":"error","message":"model rerouted: mock-model -> gpt-5.4 (HighRiskCyberActivity)"}}`,
		completed)
	us := usages(bodies)
	if len(us) != 1 || us[0].Model == nil || *us[0].Model != "gpt-5.4" {
		t.Errorf("usage = %+v, want model gpt-5.4", us)
	}
	if n := notices(bodies, events.NoticeRecoveredError); len(n) != 1 || !strings.Contains(n[0].Message, "rerouted") {
		t.Errorf("warning notices = %+v", n)
	}
}

func TestResumedNotice(t *testing.T) {
	d := codex.New(codex.Options{Model: "gpt-5.5", Resume: "t1"})
	bodies := decode(d, started, completed)
	found := false
	for _, n := range notices(bodies, events.NoticeCostUnknown) {
		found = found || strings.Contains(n.Message, "resumed session")
	}
	if !found {
		t.Error("no notice that a resumed session's usage includes earlier turns")
	}
	if d.Status().Abort != nil {
		t.Errorf("abort %v for the session asked for", d.Status().Abort)
	}
}

// TestResumedOtherSession: Codex starting another session than the one to
// resume (it reads an unknown name as a new thread) stops the run.
func TestResumedOtherSession(t *testing.T) {
	d := codex.New(codex.Options{Resume: "01a22aff-1a95-7700-bf1c-36219f65fb8a"})
	decode(d, started)
	a := d.Status().Abort
	if a == nil || a.Bin != events.BinInvalidInput || a.Reason != events.ReasonBadSession {
		t.Fatalf("abort = %+v, want invalid_input/bad_session", a)
	}
	if o := d.Outcome(normalize.End{Signal: "SIGTERM", Stopped: true}); o.OK || o.Error.Reason != events.ReasonBadSession {
		t.Errorf("outcome = %+v", o)
	}
}

func TestFailFast(t *testing.T) {
	retry401 := `{"type":"error","message":"Reconnecting... 1/5 (unexpected status 401 Unauthorized: Incorrect API key provided)"}`
	retry429 := `{"type":"error","message":"Reconnecting... 1/5 (exceeded retry limit, last status: 429 Too Many Requests)"}`

	d := codex.New(codex.Options{FailFast: true})
	bodies := decode(d, started, turn, retry401)
	st := d.Status()
	if st.Abort == nil || st.Abort.Reason != events.ReasonAuth || st.Abort.HTTPStatus == nil || *st.Abort.HTTPStatus != 401 {
		t.Fatalf("abort = %+v, want unavailable/auth 401", st.Abort)
	}
	rs := notices(bodies, events.NoticeRetry)
	if len(rs) != 1 {
		t.Fatalf("retry notices = %+v", rs)
	}
	var raw map[string]any
	if err := json.Unmarshal(rs[0].Data, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["attempt"] != 1.0 || raw["max_attempts"] != 5.0 || raw["http_status"] != 401.0 {
		t.Errorf("retry data = %v, want attempt 1, max_attempts 5, http_status 401", raw)
	}
	if o := d.Outcome(normalize.End{Signal: "SIGTERM", Stopped: true}); o.OK || o.Error.Reason != events.ReasonAuth {
		t.Errorf("outcome = %+v, want the abort error", o)
	}

	if d := codex.New(codex.Options{FailFast: false}); decode(d, retry401) != nil && d.Status().Abort != nil {
		t.Error("aborted with fail-fast off")
	}
	if d := codex.New(codex.Options{FailFast: true}); decode(d, retry429) != nil && d.Status().Abort != nil {
		t.Error("aborted a 429 retry, which retrying can fix")
	}
}

func TestOutcome(t *testing.T) {
	failed := `{"type":"turn.failed","error":{"message":"Selected model is at capacity. Please try a different model."}}`
	lastErr := `{"type":"error","message":"unexpected status 401 Unauthorized: bad key"}`
	tests := []struct {
		name   string
		lines  []string
		end    normalize.End
		ok     bool
		bin    events.Bin
		reason events.Reason
		text   string
	}{
		{"completed", []string{started, turn, answer, completed}, exit(0), true, "", "", "done"},
		{"completed then exit 1", []string{started, turn, answer, completed}, exit(1), true, "", "", "done"},
		{"failed", []string{started, turn, answer, failed}, exit(1), false, events.BinUnavailable, events.ReasonOverloaded, ""},
		{"failed without message uses the last error", []string{started, turn, lastErr, `{"type":"turn.failed","error":{}}`}, exit(1),
			false, events.BinUnavailable, events.ReasonAuth, ""},
		{"no turn end, exit 0", []string{started, turn, answer}, exit(0), false, events.BinProtocol, events.ReasonNoResult, "done"},
		{"no turn end, last error", []string{started, turn, lastErr}, exit(1), false, events.BinUnavailable, events.ReasonAuth, ""},
		{"killed", []string{started, turn}, normalize.End{Signal: "SIGKILL"}, false, events.BinAgentFailed, events.ReasonCrashed, ""},
	}
	for _, tt := range tests {
		d := codex.New(codex.Options{})
		decode(d, tt.lines...)
		o := d.Outcome(tt.end)
		if o.OK != tt.ok || !tt.ok && (o.Error == nil || o.Error.Bin != tt.bin || o.Error.Reason != tt.reason) {
			t.Errorf("%s: outcome = %v %+v, want ok=%v %s/%s", tt.name, o.OK, o.Error, tt.ok, tt.bin, tt.reason)
		}
		if o.Text != tt.text || o.SessionID != "t1" {
			t.Errorf("%s: text %q session %q, want %q t1", tt.name, o.Text, o.SessionID, tt.text)
		}
		if term := d.Status().Terminal; term != (tt.ok || tt.name == "failed" || strings.HasPrefix(tt.name, "failed")) {
			t.Errorf("%s: terminal = %v", tt.name, term)
		}
	}
}

func TestRecoveredError(t *testing.T) {
	d := codex.New(codex.Options{})
	bodies := decode(d, started, turn,
		`{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion)"}`, answer, completed)
	if n := notices(bodies, events.NoticeRecoveredError); len(n) != 1 {
		t.Errorf("recovered_error notices = %+v, want one", n)
	}
	if o := d.Outcome(exit(0)); !o.OK {
		t.Errorf("outcome %+v, want ok", o)
	}
}

func TestTools(t *testing.T) {
	big := strings.Repeat("x", normalize.DefaultOutputCap+100)
	lines := []string{
		`{"type":"item.started","item":{"id":"c1","type":"command_execution","command":"bash -lc 'false'","aggregated_output":"","exit_code":null,"status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"c1","type":"command_execution","command":"bash -lc 'false'","aggregated_output":"` + big + `","exit_code":1,"status":"failed"}}`,
		`{"type":"item.completed","item":{"id":"c2","type":"command_execution","command":"rm -rf /","aggregated_output":"","exit_code":null,"status":"declined"}}`,
		`{"type":"item.started","item":{"id":"f1","type":"file_change","changes":[{"path":"/w/a.go","kind":"add"}],"status":"in_progress"}}`,
		`{"type":"item.updated","item":{"id":"f1","type":"file_change","changes":[{"path":"/w/a.go","kind":"add"}],"status":"in_progress"}}`,
		`{"type":"item.completed","item":{"id":"f1","type":"file_change","changes":[{"path":"/w/a.go","kind":"add"}],"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"f2","type":"file_change","changes":[{"path":"/w/b.go","kind":"update"}],"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"m1","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{"q":"x"},"result":{"content":[{"type":"text","text":"found"}]},"status":"completed"}}`,
		`{"type":"item.completed","item":{"id":"m2","type":"mcp_tool_call","server":"docs","tool":"search","arguments":{},"error":{"message":"boom"},"status":"failed"}}`,
		`{"type":"item.completed","item":{"id":"w1","type":"web_search","query":"go generics"}}`,
	}
	bodies := decode(codex.New(codex.Options{}), lines...)
	var st []events.ToolStarted
	var fin []events.ToolFinished
	for _, b := range bodies {
		switch b := b.(type) {
		case events.ToolStarted:
			st = append(st, b)
		case events.ToolFinished:
			fin = append(fin, b)
		}
	}
	if len(st) != 7 || len(fin) != 7 {
		t.Fatalf("%d tool.started, %d tool.finished, want 7 each (one per item, item.updated adds none)", len(st), len(fin))
	}
	type want struct {
		name   string
		kind   events.ToolKind
		status events.ToolStatus
		exit   int // -1: null
		output string
	}
	wants := []want{
		{"command_execution", events.ToolShell, events.ToolError, 1, ""},
		{"command_execution", events.ToolShell, events.ToolDenied, -1, ""},
		{"file_change", events.ToolWrite, events.ToolOK, -1, "add /w/a.go"},
		{"file_change", events.ToolEdit, events.ToolOK, -1, "update /w/b.go"},
		{"docs.search", events.ToolMCP, events.ToolOK, -1, "found"},
		{"docs.search", events.ToolMCP, events.ToolError, -1, "boom"},
		{"web_search", events.ToolWeb, events.ToolOK, -1, ""},
	}
	for i, w := range wants {
		f := fin[i]
		if f.Name != w.name || f.Kind != w.kind || f.Status != w.status || st[i].CallID != f.CallID || st[i].Kind != w.kind {
			t.Errorf("tool %d = %+v (started %+v), want %+v", i, f, st[i], w)
		}
		if (w.exit < 0) != (f.ExitCode == nil) || f.ExitCode != nil && *f.ExitCode != w.exit {
			t.Errorf("tool %d exit_code = %v, want %d", i, f.ExitCode, w.exit)
		}
		if i > 0 && f.Output != w.output {
			t.Errorf("tool %d output = %q, want %q", i, f.Output, w.output)
		}
	}
	if f := fin[0]; !f.Truncated || f.OutputBytes != int64(len(big)) || len(f.Output) > normalize.DefaultOutputCap {
		t.Errorf("big output: truncated=%v bytes=%d len=%d, want cut to the cap with the original size", f.Truncated, f.OutputBytes, len(f.Output))
	}
	if in := string(st[4].Input); in != `{"q":"x"}` {
		t.Errorf("mcp input = %s", in)
	}
}

func TestUnknownAndBroken(t *testing.T) {
	d := codex.New(codex.Options{})
	bodies := decode(d, `{"type":"turn.paused"}`,
		`{"type":"item.completed","item":{"id":"x","type":"hologram"}}`,
		`{"type":"item.started","item":{"id":"t","type":"todo_list","items":[{"text":"a","completed":true},{"text":"b","completed":false}]}}`,
		`[1,2]`, `"str"`)
	u := notices(bodies, events.NoticeUnknownEvent)
	if len(u) != 3 || !strings.Contains(u[0].Message, "turn.paused") || !strings.Contains(u[1].Message, "hologram") || !strings.Contains(u[2].Message, "1 of 2 done") {
		t.Errorf("unknown_event notices = %+v", u)
	}
	if p := notices(bodies, events.NoticeParseError); len(p) != 2 {
		t.Errorf("parse_error notices = %+v, want 2", p)
	}
}

func FuzzDecoder(f *testing.F) {
	raws, _ := filepath.Glob("../../testdata/codex/*.jsonl")
	for _, raw := range raws {
		b, _ := os.ReadFile(raw)
		for _, l := range strings.Split(string(b), "\n") {
			f.Add([]byte(l))
		}
	}
	f.Add([]byte(`{"type":"turn.completed","usage":{"input_tokens":-5,"cached_input_tokens":900,"output_tokens":"x"}}`))
	f.Add([]byte(`{"type":"error","message":"Reconnecting... 99999999999999999999/5 (unexpected status 401 x)"}`))
	f.Add([]byte(`{"type":"item.completed","item":{"type":"error","message":"model rerouted: a -> "}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if !gjson.ValidBytes(line) {
			return // the runner never hands a decoder invalid JSON
		}
		d := codex.New(codex.Options{Model: "gpt-5.5", FailFast: true, Resume: "t1"})
		bodies := d.Decode(nil, line)
		bodies = d.Decode(bodies, line)
		o := d.Outcome(exit(0))
		bodies = append(bodies, events.RunFinished{OK: o.OK, Error: o.Error, Text: o.Text, CostSource: events.CostUnknown})
		if err := hubtest.ValidateBodies("codex", bodies); err != nil {
			t.Fatal(err)
		}
		for _, b := range bodies {
			if u, ok := b.(events.Usage); ok && (u.Step.Input < 0 || u.Step.Output < 0 || u.Step.CacheRead < 0) {
				t.Fatalf("negative tokens: %+v", u)
			}
		}
	})
}

// TestUnfinishedTool: a command Codex left running when the turn ended gets
// its tool.finished (status error) before the usage of the turn.
func TestUnfinishedTool(t *testing.T) {
	d := codex.New(codex.Options{Model: "gpt-5.5"})
	bodies := decode(d, started, turn,
		`{"type":"item.started","item":{"id":"item_1","type":"command_execution","command":"sleep 40","aggregated_output":"","exit_code":null,"status":"in_progress"}}`,
		answer, completed)
	var fin *events.ToolFinished
	for i, b := range bodies {
		if f, ok := b.(events.ToolFinished); ok {
			fin = &f
			if _, ok := bodies[i+1].(events.Usage); !ok {
				t.Errorf("event after the closing tool.finished is %T, want the turn's usage", bodies[i+1])
			}
		}
	}
	if fin == nil || fin.CallID != "item_1" || fin.Status != events.ToolError || fin.Kind != events.ToolShell || !strings.Contains(fin.Output, "before this tool call finished") {
		t.Errorf("tool.finished = %+v, want item_1 closed as an error", fin)
	}
	if more := decode(d, completed); len(more) != 1 {
		t.Errorf("a second turn end closed the tool again: %+v", more)
	}
}

// TestSandboxFailed: where Codex's sandbox cannot start, every command
// fails with bubblewrap's message (recorded with 0.169.0 in a user
// namespace with max_user_namespaces 0) and the turn still completes: the
// decoder stops the run as permission_denied/effect_not_granted. A command
// that fails on its own does not.
func TestSandboxFailed(t *testing.T) {
	failed := `{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc 'cat /etc/hostname'","aggregated_output":"bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)\n","exit_code":1,"status":"failed"}}`
	d := codex.New(codex.Options{})
	decode(d, started, turn, failed)
	a := d.Status().Abort
	if a == nil || a.Bin != events.BinPermissionDenied || a.Reason != events.ReasonEffectNotGranted ||
		!strings.Contains(a.Message, "bwrap: Creating new namespace failed") || strings.Contains(a.Message, "\n") {
		t.Fatalf("abort = %+v, want effect_not_granted quoting bubblewrap's first line", a)
	}
	own := strings.Replace(failed, `bwrap: Creating new namespace failed: nesting depth or /proc/sys/user/max_*_namespaces exceeded (ENOSPC)\n`, `cat: /etc/hostname: No such file or directory\n`, 1)
	d = codex.New(codex.Options{})
	decode(d, started, turn, own, answer, completed)
	if a := d.Status().Abort; a != nil {
		t.Errorf("a command failing on its own aborted the run: %+v", a)
	}
}

// TestContinue: a resume of the session an earlier process of the run
// decoded counts its usage from the running total that process saw, so the
// resume's usage is its own; a decoder of another session is ignored.
func TestContinue(t *testing.T) {
	first := codex.New(codex.Options{Model: "gpt-5.5"})
	decode(first, started, completed)
	resumed := `{"type":"turn.completed","usage":{"input_tokens":3000,"cached_input_tokens":600,"output_tokens":90,"reasoning_output_tokens":0}}`
	before := usages(decode(first, completed))[0].Total

	d := codex.New(codex.Options{Model: "gpt-5.5", Resume: "t1"})
	d.Continue(first)
	bodies := decode(d, started, resumed)
	u := usages(bodies)
	if len(u) != 1 || notices(bodies, events.NoticeCostUnknown) != nil {
		t.Fatalf("usages %v, notices %v; want one usage and no cost_unknown notice", u, notices(bodies, events.NoticeCostUnknown))
	}
	want := events.Tokens{Input: 3000 - 600 - before.Input, CacheRead: 600 - before.CacheRead, Output: 90 - before.Output}
	if u[0].Step.Input != want.Input || u[0].Step.CacheRead != want.CacheRead || u[0].Step.Output != want.Output {
		t.Errorf("resume's step = %+v, want the growth since the first process: %+v", u[0].Step, want)
	}

	other := codex.New(codex.Options{Model: "gpt-5.5", Resume: "another"})
	other.Continue(first)
	if n := notices(decode(other, `{"type":"thread.started","thread_id":"another"}`, resumed), events.NoticeCostUnknown); n == nil {
		t.Error("a decoder of another session was continued: no cost_unknown notice")
	}
}
