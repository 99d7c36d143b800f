package events_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
)

func ptr[T any](v T) *T { return &v }

var ts = time.Date(2026, 11, 30, 3, 4, 5, 678_000_000, time.UTC)

func sampleBodies() []events.Body {
	cost := 0.0123
	return []events.Body{
		events.RunStarted{Argv: []string{"opencode", "run"}, Cwd: "/tmp", PID: ptr(42), AgentVersion: ptr("1.18.33"),
			Limits: events.Limits{TimeoutMS: ptr(int64(60000))}},
		events.RunStarted{Argv: []string{"opencode"}, Cwd: "/", Limits: events.Limits{}},
		events.SessionStarted{SessionID: "ses_1", Model: ptr("mock/mock-model")},
		events.SessionStarted{SessionID: "ses_1", Tools: []string{"bash", "read"}},
		events.TextDelta{Text: "he"},
		events.Message{Text: "hello\u2028world\u2029!"},
		events.Reasoning{Text: "thinking <&>"},
		events.ToolStarted{CallID: "c1", Name: "bash", Kind: events.ToolShell, Input: json.RawMessage(`{"command":"echo \u2028"}`)},
		events.ToolStarted{CallID: "c1", Name: "bash", Kind: events.ToolShell, Input: json.RawMessage("{\"command\":\"x\u2029\"}")},
		events.ToolFinished{CallID: "c1", Name: "bash", Kind: events.ToolShell, Status: events.ToolOK, Output: "ok", OutputBytes: 2, ExitCode: ptr(0)},
		events.Usage{Step: events.Tokens{Input: 1, Output: 2, CostUSD: &cost}, Total: events.Tokens{Input: 1, Output: 2, CostUSD: &cost}, CostSource: events.CostReported},
		events.Usage{CostSource: events.CostUnknown},
		events.Notice{Kind: events.NoticeNonJSONOutput, Message: "banner"},
		events.Notice{Kind: events.NoticeRetry, Message: "retrying", Data: json.RawMessage(`{"attempt":1,"max_attempts":5,"delay_ms":null,"http_status":429}`)},
		events.ApprovalRequested{CallID: "c2", Name: "Write", Kind: events.ToolWrite, Input: json.RawMessage(`{"file_path":"/w/a"}`), Paths: []string{"/w/a"}, Reason: "needs it"},
		events.ApprovalRequested{CallID: "c3", Name: "Bash", Kind: events.ToolShell, Input: json.RawMessage(`{}`)},
		events.ApprovalDecided{CallID: "c2", Name: "Write", Kind: events.ToolWrite, Verdict: "deny", By: "tty", WaitedMS: 1200, Message: "no"},
		events.RunFinished{OK: true, Text: "done", CostSource: events.CostUnknown, Approvals: &events.Approvals{Requested: 2, Asked: 1, Allowed: 1, Denied: 1}},
		events.RunFinished{OK: true, Text: "done", SessionID: ptr("ses_1"), ExitCode: ptr(0), DurationMS: 12, CostSource: events.CostReported, CostUSD: &cost},
		events.RunFinished{OK: false, Error: events.NewError(events.BinUnavailable, events.ReasonRateLimit, "wait", "429").WithHTTPStatus(429).WithRetryAfter(1),
			Signal: ptr("SIGTERM"), CostSource: events.CostUnknown},
		events.RunFinished{OK: false, Error: events.NewError(events.BinInternal, "", "", "boom"), CostSource: events.CostUnknown},
		events.RunFinished{OK: false, Error: events.NewError(events.BinBudgetExceeded, events.ReasonToolSteps, "raise --max-tool-steps", "3 > 2"),
			Text: "best so far", Partial: true, Signal: ptr("SIGTERM"), CostSource: events.CostUnknown},
	}
}

// TestPartialField: partial is absent unless true, and the schema refuses it
// on an ok run.
func TestPartialField(t *testing.T) {
	t.Parallel()
	enc := func(rf events.RunFinished) []byte {
		b, err := events.Event{TS: ts, RunID: "r", Agent: "a", Body: rf}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if b := enc(events.RunFinished{OK: true, CostSource: events.CostUnknown}); bytes.Contains(b, []byte("partial")) {
		t.Errorf("run.finished without Partial = %s, want no partial field", b)
	}
	b := enc(events.RunFinished{OK: false, Error: events.NewError(events.BinBudgetExceeded, events.ReasonToolSteps, "", "x"),
		Partial: true, CostSource: events.CostUnknown})
	if !bytes.Contains(b, []byte(`"partial":true`)) {
		t.Errorf("run.finished with Partial = %s, want \"partial\":true", b)
	}
	bad := bytes.Replace(enc(events.RunFinished{OK: true, CostSource: events.CostUnknown}), []byte(`"ok":true`), []byte(`"ok":true,"partial":true`), 1)
	if err := hubtest.ValidateLine(bad); err == nil {
		t.Errorf("ValidateLine(%s) = nil, want an error: an ok run is never partial", bad)
	}
}

func TestEncodeValidatesAgainstSchema(t *testing.T) {
	t.Parallel()
	var stream bytes.Buffer
	enc := events.NewEncoder(&stream)
	for i, body := range sampleBodies() {
		ev := events.Event{Seq: int64(i), TS: ts, RunID: "run_1", Agent: "opencode", Body: body}
		b, err := ev.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON(%T) error: %v", body, err)
		}
		if err := hubtest.ValidateLine(b); err != nil {
			t.Errorf("ValidateLine(%T): %v", body, err)
		}
		if !json.Valid(b) {
			t.Errorf("MarshalJSON(%T) = %s, not valid JSON", body, b)
		}
		if err := enc.Encode(ev); err != nil {
			t.Fatal(err)
		}
	}
	// The stream has several run.finished: ValidateStream must reject it.
	if err := hubtest.ValidateStream(stream.Bytes()); err == nil {
		t.Errorf("ValidateStream(stream with 3 run.finished) = nil, want error")
	}
}

func TestCommonFields(t *testing.T) {
	t.Parallel()
	ev := events.Event{Seq: 7, TS: ts.Add(time.Nanosecond), RunID: "r", Agent: "pi", Body: events.TextDelta{Text: "x"}}
	b, err := ev.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"v":1,"seq":7,"ts":"2026-11-30T03:04:05.678Z","run_id":"r","agent":"pi","type":"text.delta","text":"x"}`
	if string(b) != want {
		t.Errorf("MarshalJSON() = %s, want %s", b, want)
	}
}

func TestLineSeparatorsAlwaysEscaped(t *testing.T) {
	t.Parallel()
	for i, body := range sampleBodies() {
		b, err := events.Event{Seq: int64(i), TS: ts, RunID: "r", Agent: "a", Body: body}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte("\u2028")) || bytes.Contains(b, []byte("\u2029")) {
			t.Errorf("MarshalJSON(%T) = %q contains a raw line separator", body, b)
		}
	}
	b, _ := events.Event{TS: ts, RunID: "r", Agent: "a", Body: events.Message{Text: "a\u2028b"}}.MarshalJSON()
	var got struct{ Text string }
	if err := json.Unmarshal(b, &got); err != nil || got.Text != "a\u2028b" {
		t.Errorf("round trip of U+2028 = %q, %v; want %q", got.Text, err, "a\u2028b")
	}
}

func TestEscapeLineSeparators(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", ""},
		{`"plain"`, `"plain"`},
		{"\"a\u2028b\"", `"a\u2028b"`},
		{"\"\u2029\"", `"\u2029"`},
		{"\"\u2028\u2029\u2028\"", `"\u2028\u2029\u2028"`},
		{"\"\u2020 dagger stays\"", "\"\u2020 dagger stays\""},
		{"\"trailing \xe2\x80\"", "\"trailing \xe2\x80\""},
	}
	for _, tt := range tests {
		if got := string(events.EscapeLineSeparators([]byte(tt.in))); got != tt.want {
			t.Errorf("EscapeLineSeparators(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestInvalidUTF8BecomesReplacement(t *testing.T) {
	t.Parallel()
	b, err := events.Event{TS: ts, RunID: "r", Agent: "a", Body: events.Message{Text: "bad \xff byte"}}.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Text string }
	if err := json.Unmarshal(b, &got); err != nil || !strings.Contains(got.Text, "\ufffd") {
		t.Errorf("MarshalJSON(invalid UTF-8) = %q (%v), want valid JSON with U+FFFD", b, err)
	}
}

func TestBinsExitCodesAndReasons(t *testing.T) {
	t.Parallel()
	want := map[events.Bin]int{
		events.BinAgentFailed: 1, events.BinNotInstalled: 3, events.BinUnsupportedVersion: 4,
		events.BinInvalidInput: 5, events.BinPermissionDenied: 6, events.BinUnavailable: 7,
		events.BinTimeout: 8, events.BinBudgetExceeded: 9, events.BinProtocol: 10,
		events.BinInternal: 11, events.BinCancelled: 130,
	}
	if len(events.Bins()) != len(want) {
		t.Fatalf("len(Bins()) = %d, want %d", len(events.Bins()), len(want))
	}
	for _, b := range events.Bins() {
		if got := b.ExitCode(); got != want[b] {
			t.Errorf("%s.ExitCode() = %d, want %d", b, got, want[b])
		}
		// Every reason of every bin must pass the schema inside run.finished.
		for _, r := range b.Reasons() {
			body := events.RunFinished{Error: events.NewError(b, r, "h", "m"), CostSource: events.CostUnknown}
			line, _ := events.Event{TS: ts, RunID: "r", Agent: "a", Body: body}.MarshalJSON()
			if err := hubtest.ValidateLine(line); err != nil {
				t.Errorf("schema rejects %s/%s: %v", b, r, err)
			}
		}
	}
	// A reason from another bin must be rejected by the schema.
	body := events.RunFinished{Error: events.NewError(events.BinTimeout, events.ReasonAuth, "", "x"), CostSource: events.CostUnknown}
	line, _ := events.Event{TS: ts, RunID: "r", Agent: "a", Body: body}.MarshalJSON()
	if err := hubtest.ValidateLine(line); err == nil {
		t.Errorf("schema accepts timeout/auth, want rejection")
	}
	// ok:false without an error must be rejected.
	line, _ = events.Event{TS: ts, RunID: "r", Agent: "a", Body: events.RunFinished{CostSource: events.CostUnknown}}.MarshalJSON()
	if err := hubtest.ValidateLine(line); err == nil {
		t.Errorf("schema accepts ok:false with error null, want rejection")
	}
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		bin    events.Bin
		reason events.Reason
		want   bool
	}{
		{events.BinUnavailable, events.ReasonRateLimit, true},
		{events.BinUnavailable, events.ReasonOverloaded, true},
		{events.BinUnavailable, events.ReasonServer, true},
		{events.BinUnavailable, events.ReasonNetwork, true},
		{events.BinTimeout, events.ReasonIdle, true},
		{events.BinTimeout, events.ReasonWall, false},
		{events.BinUnavailable, events.ReasonAuth, false},
		{events.BinUnavailable, events.ReasonQuota, false},
		{events.BinInvalidInput, events.ReasonContextOverflow, false},
	}
	for _, tt := range tests {
		if got := events.Retryable(tt.bin, tt.reason); got != tt.want {
			t.Errorf("Retryable(%s, %s) = %v, want %v", tt.bin, tt.reason, got, tt.want)
		}
	}
}

func TestTokensAdd(t *testing.T) {
	t.Parallel()
	a := events.Tokens{Input: 1, Output: 2, CacheRead: 3, CacheWrite: 4, Reasoning: 5, CostUSD: ptr(0.5)}
	got := a.Add(a)
	if got.Input != 2 || got.Output != 4 || got.CacheRead != 6 || got.CacheWrite != 8 || got.Reasoning != 10 || got.CostUSD == nil || *got.CostUSD != 1 {
		t.Errorf("Add = %+v", got)
	}
	if a.Add(events.Tokens{}).CostUSD != nil {
		t.Errorf("Add(unknown cost).CostUSD != nil, want nil")
	}
	if a.Sum() != 10 {
		t.Errorf("Sum() = %d, want 10", a.Sum())
	}
}

// TestApprovalSchema: the schema holds approval.decided to its verdicts and
// deciders, and approval.requested to a tool kind.
func TestApprovalSchema(t *testing.T) {
	t.Parallel()
	enc := func(b events.Body) []byte {
		out, err := events.Event{TS: ts, RunID: "r", Agent: "a", Body: b}.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for _, b := range []events.Body{
		events.ApprovalDecided{CallID: "c", Name: "Write", Kind: events.ToolWrite, Verdict: "maybe", By: "tty"},
		events.ApprovalDecided{CallID: "c", Name: "Write", Kind: events.ToolWrite, Verdict: "allow", By: "someone"},
		events.ApprovalRequested{CallID: "c", Name: "Write", Kind: "scribble", Input: json.RawMessage(`{}`)},
	} {
		if line := enc(b); hubtest.ValidateLine(line) == nil {
			t.Errorf("ValidateLine(%s) = nil, want an error", line)
		}
	}
}
