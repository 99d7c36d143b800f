package pi_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/normalize"
	"github.com/hubcli/hub/normalize/pi"
)

func decode(failFast bool, lines ...string) (*pi.Decoder, []events.Body) {
	d := pi.New("mock/mock-model", failFast)
	var out []events.Body
	for _, l := range lines {
		out = d.Decode(out, []byte(l))
	}
	return d, out
}

func exit(code int) normalize.End { return normalize.End{ExitCode: &code} }

// Lines in pi 0.73.1's shapes (see testdata/pi).
const (
	session    = `{"type":"session","version":3,"id":"sess-1","timestamp":"2026-11-30T00:00:00.000Z","cwd":"/w"}`
	agentStart = `{"type":"agent_start"}`
	agentEnd   = `{"type":"agent_end","messages":[]}`
)

var ts atomic.Int64 // message timestamps, distinct per message (tests run in parallel)

// assistant is an assistant message_end with the given stop reason, error
// message and content blocks (JSON array elements).
func assistant(stopReason, errorMessage string, content ...string) string {
	n := ts.Add(1)
	usage := `{"input":800,"output":50,"cacheRead":200,"cacheWrite":0,"totalTokens":1050,"cost":{"input":0.0024,"output":0.00075,"cacheRead":0.00006,"cacheWrite":0,"total":0.00321}}`
	em := ""
	if stopReason == "error" || stopReason == "aborted" {
		usage = `{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}`
		if errorMessage != "" {
			em = `,"errorMessage":` + strconv.Quote(errorMessage)
		}
	}
	return fmt.Sprintf(`{"type":"message_end","message":{"role":"assistant","content":[%s],"api":"openai-completions","provider":"mock","model":"mock-model","usage":%s,"stopReason":%q,"timestamp":%d,"responseId":"r%d"%s}}`,
		strings.Join(content, ","), usage, stopReason, n, n, em)
}

func text(s string) string { return `{"type":"text","text":` + strconv.Quote(s) + `}` }

func retryStart(attempt int, msg string) string {
	return fmt.Sprintf(`{"type":"auto_retry_start","attempt":%d,"maxAttempts":3,"delayMs":2000,"errorMessage":%q}`, attempt, msg)
}

// TestOutcome has one row per outcome rule (see Decoder.Outcome): the last
// assistant message decides, the exit status never makes a success.
func TestOutcome(t *testing.T) {
	t.Parallel()
	answer := assistant("stop", "", text("hi"))
	failed := func(msg string) []string { return []string{session, agentStart, assistant("error", msg), agentEnd} }
	tests := []struct {
		name   string
		lines  []string
		end    normalize.End
		bin    events.Bin
		reason events.Reason
		status int
	}{
		{"success", []string{session, agentStart, answer, agentEnd}, exit(0), "", "", 0},
		{"success, exit 1 still ok", []string{session, agentStart, answer, agentEnd}, exit(1), "", "", 0},
		{"success then stream cut after compaction_start", []string{session, agentStart, answer, agentEnd, `{"type":"compaction_start","reason":"overflow"}`}, exit(0), "", "", 0},
		{"length is an answer", []string{session, agentStart, assistant("length", "", text("partial")), agentEnd}, exit(0), "", "", 0},
		{"error then retried success", append(failed("500 boom"), retryStart(1, "500 boom"), agentStart, answer, `{"type":"auto_retry_end","success":true,"attempt":1}`, agentEnd), exit(0), "", "", 0},
		{"401", failed("401 Incorrect API key provided"), exit(0), events.BinUnavailable, events.ReasonAuth, 401},
		{"403", failed("403 Forbidden"), exit(0), events.BinUnavailable, events.ReasonAuth, 403},
		{"402", failed("402 Payment Required: insufficient credits"), exit(0), events.BinUnavailable, events.ReasonQuota, 402},
		{"429 quota", failed("429 You exceeded your current quota"), exit(0), events.BinUnavailable, events.ReasonQuota, 429},
		{"404 model", failed("404 The model `nope` does not exist"), exit(0), events.BinInvalidInput, events.ReasonBadModel, 404},
		{"422", failed("422 Unprocessable Entity"), exit(0), events.BinInvalidInput, events.ReasonBadRequest, 422},
		{"429", failed("429 Rate limit reached for requests"), exit(0), events.BinUnavailable, events.ReasonRateLimit, 429},
		{"500", failed("500 The server had an error while processing your request"), exit(0), events.BinUnavailable, events.ReasonServer, 500},
		{"502", failed("502 Bad gateway"), exit(0), events.BinUnavailable, events.ReasonServer, 502},
		{"503", failed("503 The server is overloaded"), exit(0), events.BinUnavailable, events.ReasonOverloaded, 503},
		{"overloaded without status", failed("overloaded_error: Overloaded"), exit(0), events.BinUnavailable, events.ReasonOverloaded, 0},
		{"overflow message", failed("400 This model's maximum context length is 128000 tokens. However, your messages resulted in 200000 tokens."), exit(0), events.BinInvalidInput, events.ReasonContextOverflow, 400},
		{"overflow by pi's compaction verdict", append(failed("400 Input is over the limit"), `{"type":"compaction_start","reason":"overflow"}`), exit(0), events.BinInvalidInput, events.ReasonContextOverflow, 400},
		{"timed out", failed("Request timed out."), exit(0), events.BinUnavailable, events.ReasonNetwork, 0},
		{"connection error", failed("Connection error."), exit(0), events.BinUnavailable, events.ReasonNetwork, 0},
		{"body cut (undici)", failed("terminated"), exit(0), events.BinUnavailable, events.ReasonNetwork, 0},
		{"aborted", []string{session, agentStart, assistant("aborted", "Request was aborted"), agentEnd}, exit(0), events.BinCancelled, events.ReasonAgentAborted, 0},
		{"final error of retries", append(failed("500 first"), retryStart(1, "500 first"), agentStart, assistant("error", "503 last"), agentEnd,
			`{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"429 Rate limit reached"}`), exit(0), events.BinUnavailable, events.ReasonRateLimit, 429},
		{"no assistant message, exit 0", []string{session, agentStart, agentEnd}, exit(0), events.BinProtocol, events.ReasonNoResult, 0},
		{"no assistant message, killed", []string{session}, normalize.End{Signal: "SIGKILL"}, events.BinAgentFailed, events.ReasonCrashed, 0},
		{"no assistant message, exit 143", []string{session}, exit(143), events.BinAgentFailed, events.ReasonExitStatus, 0},
		{"stderr: no API key", []string{session}, normalize.End{ExitCode: new(1), Stderr: "No API key found for anthropic.\n\nUse /login to log into a provider via OAuth or API key. See:\n  /x/docs/providers.md\n"}, events.BinUnavailable, events.ReasonNotConfigured, 0},
		{"stderr: unknown provider", nil, normalize.End{ExitCode: new(1), Stderr: "\x1b[31mError: Unknown provider \"nope\". Use --list-models to see available providers/models.\x1b[39m\n"}, events.BinUnavailable, events.ReasonNotConfigured, 0},
		{"stderr: model not found", nil, normalize.End{ExitCode: new(1), Stderr: "\x1b[31mError: Model \"/mock-model\" not found. Use --list-models to see available models.\x1b[39m\n"}, events.BinInvalidInput, events.ReasonBadModel, 0},
		{"stderr: session of another directory", nil, normalize.End{ExitCode: new(0), Stderr: "Session found in different project: /tmp/pix/a\nFork this session into current directory? [y/N] "}, events.BinInvalidInput, events.ReasonBadSession, 0},
		{"stderr: unknown session", nil, normalize.End{ExitCode: new(1), Stderr: "No session found matching 'abcdef'\n"}, events.BinInvalidInput, events.ReasonBadSession, 0},
		{"tool call, then the stream ends", []string{session, agentStart, assistant("toolUse", "", `{"type":"toolCall","id":"c","name":"bash","arguments":{}}`)}, exit(0), events.BinProtocol, events.ReasonNoResult, 0},
		{"answer without agent_end, killed", []string{session, agentStart, answer}, normalize.End{Signal: "SIGKILL"}, events.BinAgentFailed, events.ReasonCrashed, 0},
	}
	for _, tt := range tests {
		d, _ := decode(true, tt.lines...)
		o := d.Outcome(tt.end)
		switch {
		case tt.bin == "" && (!o.OK || o.Error != nil):
			t.Errorf("%s: Outcome = %v, want ok", tt.name, o.Error)
		case tt.bin == "":
		case o.OK || o.Error == nil || o.Error.Bin != tt.bin || o.Error.Reason != tt.reason:
			t.Errorf("%s: Outcome = ok %v %v, want %s/%s", tt.name, o.OK, o.Error, tt.bin, tt.reason)
		case o.Error.Hint == "" || o.Error.Message == "":
			t.Errorf("%s: error %+v has no hint or message", tt.name, o.Error)
		case tt.status != 0 && (o.Error.HTTPStatus == nil || *o.Error.HTTPStatus != tt.status):
			t.Errorf("%s: http_status = %v, want %d", tt.name, o.Error.HTTPStatus, tt.status)
		case tt.status == 0 && o.Error.HTTPStatus != nil:
			t.Errorf("%s: http_status = %d, want none", tt.name, *o.Error.HTTPStatus)
		}
	}
}

// TestOutcomeMessages: a setup error names pi's stderr line, and the answer
// and session id are kept.
func TestOutcomeMessages(t *testing.T) {
	t.Parallel()
	d, _ := decode(true, session)
	o := d.Outcome(normalize.End{ExitCode: new(1), Stderr: "Warning: x\nNo API key found for anthropic.\n\nUse /login …\n"})
	if o.Error == nil || o.Error.Message != "pi: No API key found for anthropic." {
		t.Errorf("Outcome().Error = %v, want the stderr line", o.Error)
	}
	d, _ = decode(true, session, agentStart, assistant("stop", "", text("first"), text("final answer")), agentEnd)
	if o := d.Outcome(exit(0)); o.Text != "final answer" || o.SessionID != "sess-1" {
		t.Errorf("Outcome() text %q session %q, want %q %q", o.Text, o.SessionID, "final answer", "sess-1")
	}
}

// TestStatus: agent_end is terminal only when pi will not go on by itself.
func TestStatus(t *testing.T) {
	t.Parallel()
	answer := assistant("stop", "", text("hi"))
	tests := []struct {
		name     string
		lines    []string
		terminal bool
	}{
		{"answer without agent_end", []string{session, agentStart, answer}, false},
		{"answer and agent_end", []string{session, agentStart, answer, agentEnd}, true},
		{"compaction running after the answer", []string{session, agentStart, answer, agentEnd, `{"type":"compaction_start","reason":"threshold"}`}, false},
		{"overflow compaction after the answer", []string{session, agentStart, answer, agentEnd, `{"type":"compaction_start","reason":"overflow"}`}, true},
		{"overflow compaction after an overflow error", []string{session, agentStart, assistant("error", "400 This model's maximum context length is 128000 tokens."), agentEnd, `{"type":"compaction_start","reason":"overflow"}`}, true},
		{"compaction done", []string{session, agentStart, answer, agentEnd, `{"type":"compaction_start","reason":"threshold"}`, `{"type":"compaction_end","reason":"threshold","aborted":false,"willRetry":false}`}, true},
		{"retryable error: pi may retry", []string{session, agentStart, assistant("error", "500 boom"), agentEnd}, false},
		{"retrying", []string{session, agentStart, assistant("error", "500 boom"), agentEnd, retryStart(1, "500 boom")}, false},
		{"retry attempt started", []string{session, agentStart, assistant("error", "500 boom"), agentEnd, retryStart(1, "500 boom"), agentStart}, false},
		{"retries given up", []string{session, agentStart, assistant("error", "500 boom"), agentEnd, `{"type":"auto_retry_end","success":false,"attempt":3,"finalError":"500 boom"}`}, true},
		{"error pi does not retry", []string{session, agentStart, assistant("error", "401 Incorrect API key provided"), agentEnd}, true},
		{"overflow is compacted, not retried", []string{session, agentStart, assistant("error", "400 maximum context length is 10 tokens"), agentEnd}, true},
		{"tool call turn", []string{session, agentStart, assistant("toolUse", "", `{"type":"toolCall","id":"c","name":"bash","arguments":{}}`)}, false},
	}
	for _, tt := range tests {
		d, _ := decode(true, tt.lines...)
		if got := d.Status().Terminal; got != tt.terminal {
			t.Errorf("%s: Status().Terminal = %v, want %v", tt.name, got, tt.terminal)
		}
	}
}

// TestFailFast: an auto_retry_start for 401/403 aborts unless fail-fast is
// off; a 429 retry never does.
func TestFailFast(t *testing.T) {
	t.Parallel()
	d, out := decode(true, session, retryStart(1, "401 Incorrect API key provided"))
	st := d.Status()
	if st.Abort == nil || st.Abort.Reason != events.ReasonAuth || st.Abort.HTTPStatus == nil || *st.Abort.HTTPStatus != 401 {
		t.Errorf("Status() after a 401 retry = %+v, want an auth abort with status 401", st)
	}
	if o := d.Outcome(normalize.End{Signal: "SIGTERM", Stopped: true}); o.Error != st.Abort {
		t.Errorf("Outcome().Error = %v, want the abort %v", o.Error, st.Abort)
	}
	n, ok := out[1].(events.Notice)
	if !ok || n.Kind != events.NoticeRetry {
		t.Fatalf("event = %#v, want a retry notice", out[1])
	}
	data := gjson.ParseBytes(n.Data)
	if data.Get("attempt").Int() != 1 || data.Get("max_attempts").Int() != 3 || data.Get("delay_ms").Int() != 2000 || data.Get("http_status").Int() != 401 {
		t.Errorf("retry data = %s, want attempt 1, max 3, delay 2000, status 401", n.Data)
	}
	if d, _ := decode(false, session, retryStart(1, "403 Forbidden")); d.Status().Abort != nil {
		t.Errorf("Status() with fail-fast off = abort, want none")
	}
	if d, _ := decode(true, session, retryStart(1, "429 Rate limit reached")); d.Status().Abort != nil {
		t.Errorf("Status() after a 429 retry = abort, want none")
	}
}

// TestUsageCountedOnce: the assistant message_end counts; turn_end and
// agent_end repeating it add nothing, nor does a message_end seen twice. A
// failed call with no tokens is not a turn.
func TestUsageCountedOnce(t *testing.T) {
	t.Parallel()
	m := assistant("stop", "", text("hi"))
	msg := gjson.Get(m, "message").Raw
	lines := []string{session, agentStart, assistant("error", "500 x"), m, m,
		`{"type":"turn_end","message":` + msg + `,"toolResults":[]}`,
		`{"type":"agent_end","messages":[` + msg + `]}`}
	_, out := decode(true, lines...)
	var usages []events.Usage
	for _, b := range out {
		if u, ok := b.(events.Usage); ok {
			usages = append(usages, u)
		}
	}
	if len(usages) != 1 {
		t.Fatalf("usage events = %d, want 1", len(usages))
	}
	u := usages[0]
	want := events.Tokens{Input: 800, Output: 50, CacheRead: 200}
	if u.Step.Input != want.Input || u.Step.Output != want.Output || u.Step.CacheRead != want.CacheRead || u.Step.CacheWrite != 0 {
		t.Errorf("usage step = %+v, want %+v", u.Step, want)
	}
	if u.Step.CostUSD == nil || *u.Step.CostUSD != 0.00321 || u.CostSource != events.CostReported {
		t.Errorf("usage cost = %v (%s), want 0.00321 reported", u.Step.CostUSD, u.CostSource)
	}
	if u.Model == nil || *u.Model != "mock/mock-model" {
		t.Errorf("usage model = %v, want mock/mock-model", u.Model)
	}
}

// TestUsageCostUnknown: a call without cost.total makes the total's cost
// unknown, never $0.
func TestUsageCostUnknown(t *testing.T) {
	t.Parallel()
	noCost := `{"type":"message_end","message":{"role":"assistant","content":[],"provider":"p","model":"m","usage":{"input":5,"output":1},"stopReason":"stop","timestamp":1}}`
	_, out := decode(true, assistant("stop", "", text("a")), noCost)
	u := out[len(out)-1].(events.Usage)
	if u.Step.CostUSD != nil || u.Total.CostUSD != nil || u.CostSource != events.CostUnknown || u.Total.Input != 805 {
		t.Errorf("usage = %+v, want unknown cost and input total 805", u)
	}
}

// TestTools: tool_execution_start/end make one tool.started and one
// tool.finished per call, with kinds, exit codes and cut output.
func TestTools(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", normalize.DefaultOutputCap+10)
	lines := []string{
		assistant("toolUse", "", `{"type":"toolCall","id":"c1","name":"bash","arguments":{"command":"false"}}`),
		`{"type":"tool_execution_start","toolCallId":"c1","toolName":"bash","args":{"command":"false"}}`,
		`{"type":"tool_execution_update","toolCallId":"c1","toolName":"bash","args":{},"partialResult":{"content":[]}}`,
		`{"type":"tool_execution_end","toolCallId":"c1","toolName":"bash","result":{"content":[{"type":"text","text":"oops\n\n\nCommand exited with code 2"}],"details":{}},"isError":true}`,
		`{"type":"tool_execution_start","toolCallId":"c2","toolName":"read","args":{"path":"/x"}}`,
		`{"type":"tool_execution_end","toolCallId":"c2","toolName":"read","result":{"content":[{"type":"text","text":"` + big + `"}]},"isError":false}`,
		`{"type":"tool_execution_start","toolCallId":"c3","toolName":"bash","args":{"command":"true"}}`,
		`{"type":"tool_execution_end","toolCallId":"c3","toolName":"bash","result":{"content":[{"type":"text","text":""}]},"isError":false}`,
		`{"type":"tool_execution_start","toolCallId":"c4","toolName":"write","args":{}}`,
		`{"type":"tool_execution_end","toolCallId":"c4","toolName":"write","result":{"content":[{"type":"text","text":"Tool execution was blocked"}]},"isError":true}`,
	}
	_, out := decode(true, lines...)
	var started []events.ToolStarted
	var fin []events.ToolFinished
	for _, b := range out {
		switch b := b.(type) {
		case events.ToolStarted:
			started = append(started, b)
		case events.ToolFinished:
			fin = append(fin, b)
		}
	}
	if len(started) != 4 || len(fin) != 4 {
		t.Fatalf("tool.started %d, tool.finished %d, want 4 each (message_end's toolCall is not a second start)", len(started), len(fin))
	}
	if started[0].Kind != events.ToolShell || string(started[0].Input) != `{"command":"false"}` {
		t.Errorf("tool.started = %+v, want shell with the args", started[0])
	}
	if f := fin[0]; f.Status != events.ToolError || f.ExitCode == nil || *f.ExitCode != 2 {
		t.Errorf("failed bash = %+v, want error, exit 2", f)
	}
	if f := fin[1]; f.Kind != events.ToolRead || !f.Truncated || f.OutputBytes != int64(len(big)) || len(f.Output) != normalize.DefaultOutputCap || f.ExitCode != nil {
		t.Errorf("read = kind %s truncated %v bytes %d len %d exit %v, want read, cut to %d of %d, no exit code",
			f.Kind, f.Truncated, f.OutputBytes, len(f.Output), f.ExitCode, normalize.DefaultOutputCap, len(big))
	}
	if f := fin[2]; f.Status != events.ToolOK || f.ExitCode == nil || *f.ExitCode != 0 {
		t.Errorf("ok bash = %+v, want ok, exit 0", f)
	}
	if f := fin[3]; f.Status != events.ToolDenied {
		t.Errorf("blocked write = %+v, want denied", f)
	}
}

func TestToolKind(t *testing.T) {
	t.Parallel()
	want := map[string]events.ToolKind{"bash": events.ToolShell, "read": events.ToolRead, "write": events.ToolWrite,
		"edit": events.ToolEdit, "grep": events.ToolSearch, "find": events.ToolSearch, "ls": events.ToolSearch,
		"my_extension_tool": events.ToolOther, "Bash": events.ToolOther}
	for name, kind := range want {
		if got := pi.ToolKind(name); got != kind {
			t.Errorf("ToolKind(%q) = %s, want %s", name, got, kind)
		}
	}
}

// TestDecodeEvents: text deltas, message, reasoning, session, notices for
// compaction and unknown events, in order.
func TestDecodeEvents(t *testing.T) {
	t.Parallel()
	update := func(typ, delta string) string {
		return `{"type":"message_update","assistantMessageEvent":{"type":"` + typ + `","contentIndex":0,"delta":` + strconv.Quote(delta) +
			`,"partial":{"role":"assistant","content":[{"type":"text","text":"ignored"}]}},"message":{"role":"assistant","content":[{"type":"text","text":"ignored"}]}}`
	}
	_, out := decode(true, session, agentStart, update("thinking_delta", "hmm"), update("text_delta", "Hel"), update("text_delta", "lo"),
		update("toolcall_delta", "{"), assistant("stop", "", `{"type":"thinking","thinking":"hmm"}`, text("Hello")), agentEnd,
		`{"type":"compaction_start","reason":"threshold"}`, `{"type":"something_new","x":1}`)
	var got []string
	for _, b := range out {
		switch b := b.(type) {
		case events.TextDelta:
			got = append(got, "delta:"+b.Text)
		case events.Message:
			got = append(got, "message:"+b.Text)
		case events.Reasoning:
			got = append(got, "reasoning:"+b.Text)
		case events.Notice:
			got = append(got, "notice:"+string(b.Kind))
		default:
			got = append(got, string(b.Type()))
		}
	}
	want := "session.started delta:Hel delta:lo reasoning:hmm message:Hello usage notice:compaction notice:unknown_event"
	if strings.Join(got, " ") != want {
		t.Errorf("events = %s\nwant %s", strings.Join(got, " "), want)
	}
}

// TestMemoryFlat feeds a 5,000-update answer in which every message_update
// repeats the whole growing partial message twice, as pi does: the raw
// stream is hundreds of megabytes, and the decoder must neither keep it nor
// copy it. It measures the bytes Decode allocates over the whole answer and
// the live heap after it, both of which grow with the stream if the decoder
// parses or retains the partial messages.
func TestMemoryFlat(t *testing.T) {
	const updates = 5000
	const word = "word " // each delta
	d := pi.New("", true)
	var dst []events.Body
	dst = d.Decode(dst, []byte(session))
	line := make([]byte, 0, 2*updates*len(word)+1024)
	mkLine := func(i int) []byte {
		partial := `{"role":"assistant","content":[{"type":"text","text":"` + strings.Repeat(word, i+1) + `"}],"provider":"mock","model":"mock-model","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"stop","timestamp":1}`
		line = line[:0]
		line = fmt.Appendf(line, `{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":%q,"partial":%s},"message":%s}`, word, partial, partial)
		return line
	}

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	var raw, allocated uint64
	var ms runtime.MemStats
	for i := range updates {
		l := mkLine(i) // building the line is not counted
		raw += uint64(len(l))
		runtime.ReadMemStats(&ms)
		a := ms.TotalAlloc
		dst = d.Decode(dst[:0], l)
		runtime.ReadMemStats(&ms)
		allocated += ms.TotalAlloc - a
		if len(dst) != 1 || dst[0].(events.TextDelta).Text != word {
			t.Fatalf("update %d: Decode = %v, want one text.delta %q", i, dst, word)
		}
	}
	line = nil
	runtime.GC()
	runtime.ReadMemStats(&after)
	live := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	perUpdate := allocated / updates
	t.Logf("raw stream %d MiB in %d updates (last line %d KiB); Decode allocated %d bytes in all (%d per update); live heap change %d KiB",
		raw>>20, updates, 2*updates*len(word)>>10, allocated, perUpdate, live>>10)
	// A decoder that parsed the line with gjson.ParseBytes + Get would copy
	// the partial (tens of KiB per update by the end); one that kept the
	// partial would hold hundreds of MiB.
	if perUpdate > 512 {
		t.Errorf("Decode allocated %d bytes per update, want a small constant (≤ 512) whatever the line size", perUpdate)
	}
	if live > 1<<20 {
		t.Errorf("live heap grew by %d KiB over the answer, want < 1 MiB", live>>10)
	}
	// And the memory the answer needs is there at message_end: the final
	// text comes from it, not from the updates.
	dst = d.Decode(dst[:0], []byte(assistant("stop", "", text(strings.Repeat(word, updates)))))
	if m, ok := dst[0].(events.Message); !ok || len(m.Text) != updates*len(word) {
		t.Errorf("message_end = %#v, want the whole answer", dst[0])
	}
}

// FuzzDecoder: any valid JSON line never panics and every event validates.
func FuzzDecoder(f *testing.F) {
	raws, _ := filepath.Glob("../../testdata/pi/*.jsonl")
	for _, raw := range raws {
		if strings.HasSuffix(raw, ".golden.jsonl") {
			continue
		}
		b, _ := os.ReadFile(raw)
		for l := range strings.Lines(string(b)) {
			f.Add([]byte(strings.TrimSpace(l)))
		}
	}
	f.Add([]byte(`{"type":"tool_execution_end","toolName":"bash","result":{"content":"x"},"isError":true}`))
	f.Add([]byte(`{"type":"message_end","message":{"role":"assistant","usage":{"input":-3,"cost":{"total":-1}},"stopReason":"error","errorMessage":"403"}}`))
	f.Add([]byte(`{"type":"auto_retry_start","attempt":"x","errorMessage":401}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if !gjson.ValidBytes(line) {
			return // the runner never hands a decoder invalid JSON
		}
		d := pi.New("", true)
		bodies := d.Decode(nil, line)
		bodies = d.Decode(bodies, line)
		_ = d.Status()
		o := d.Outcome(exit(0))
		if !o.OK && o.Error == nil {
			t.Fatalf("Outcome not ok without an error")
		}
		bodies = append(bodies, events.RunFinished{OK: o.OK, Error: o.Error, Text: o.Text, CostSource: events.CostUnknown})
		if err := hubtest.ValidateBodies("pi", bodies); err != nil {
			t.Fatal(err)
		}
	})
}
