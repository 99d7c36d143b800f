// Package opencode decodes `opencode run --format json` output (OpenCode
// 1.18.x, read from the real binary's output against hub's mock server in
// November 2026; see testdata/opencode) into hub.event/v1 events, and decides
// how an OpenCode run ended.
//
// OpenCode writes one object per line: {type, timestamp, sessionID, part} or
// {type: "error", error}. Types: step_start, text (whole text parts, no
// deltas), reasoning, tool_use (only once the tool has finished), step_finish
// (tokens and cost of one model call) and error. There is no terminal event:
// success is a last step_finish whose reason is "stop" and exit status 0.
package opencode

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Decoder decodes one OpenCode run. Create it with New.
type Decoder struct {
	ix    *normalize.Index // the runner's Index of the line being decoded (UseIndex), or nil
	model *string          // from the request; OpenCode's stream does not name it

	sessionID  string
	lastText   string
	lastReason string // reason of the last step_finish
	total      events.Tokens
	costKnown  bool
	err        *events.Error // from the last error event not followed by success
	denied     *events.ToolFinished
	sawStep    bool

	failFast bool              // stop a retried failure that retrying cannot fix
	retries  int               // failed model calls OpenCode logged (stderr.go)
	retrying *events.Error     // the last of them, until a step finishes
	abort    *events.Error     // fail-fast's stop
	errRef   string            // the last error event's data.ref
	logged   map[string]string // ref → the error OpenCode logged for it
	echo     int               // in the echo of a config file: 1 + its lines so far
	// echoErrors: under the echo's "--- Errors ---", which quotes the
	// broken line again.
	echoErrors bool
}

var _ normalize.Decoder = (*Decoder)(nil)

// New returns a decoder for one run. model is the provider/model hub asked
// for ("" if none); OpenCode does not repeat it in its stream. failFast
// stops a run whose logged retries are of a failure that retrying cannot
// fix (auth, quota; see DecodeStderr).
func New(model string, failFast bool) *Decoder {
	d := &Decoder{costKnown: true, failFast: failFast}
	if model != "" {
		d.model = &model
	}
	d.total.CostUSD = new(float64)
	return d
}

// UseIndex implements normalize.Indexed: the decoder skips and sizes the
// long strings of each line through x, which its caller fills as it checks
// the line.
func (d *Decoder) UseIndex(x *normalize.Index) { d.ix = x }

// Decode implements normalize.Decoder.
func (d *Decoder) Decode(dst []events.Body, line []byte) []events.Body {
	// Finished tools are most of the bytes: tool reads them in place and
	// copies what it keeps.
	var root gjson.Result
	if gjson.Get(normalize.View(line), "type").Str == "tool_use" {
		root = gjson.Parse(normalize.View(line))
	} else {
		root = gjson.ParseBytes(line)
	}
	if !root.IsObject() {
		return append(dst, events.Notice{Kind: events.NoticeParseError,
			Message: "opencode: expected a JSON object, got " + normalize.Shorten(root.Raw, 200)})
	}
	if sid := root.Get("sessionID").String(); sid != "" && d.sessionID == "" {
		d.sessionID = strings.Clone(sid)
		dst = append(dst, events.SessionStarted{SessionID: d.sessionID, Model: d.model})
	}
	// Fields, not root.Get: gjson would scan the part (and its outputs)
	// to its end byte by byte.
	part := gjson.Parse(d.ix.Fields(root.Raw, "part")[0])
	switch typ := root.Get("type").String(); typ {
	case "step_start":
		d.sawStep = true
		d.lastReason = "" // a step in progress: not finished, whatever came before
	case "text":
		text := part.Get("text").String()
		if part.Get("synthetic").Bool() || text == "" {
			return dst
		}
		d.lastText = text
		dst = append(dst, events.Message{Text: text})
	case "reasoning":
		if text := part.Get("text").String(); text != "" {
			dst = append(dst, events.Reasoning{Text: text})
		}
	case "tool_use":
		dst = d.tool(dst, part)
	case "step_finish":
		dst = d.stepFinish(dst, part)
	case "error":
		d.err = Classify(root.Get("error"))
		d.errRef = strings.Clone(root.Get("error.data.ref").String())
	default:
		dst = append(dst, unknown(typ, line))
	}
	return dst
}

func unknown(typ string, line []byte) events.Notice {
	n := events.Notice{Kind: events.NoticeUnknownEvent,
		Message: fmt.Sprintf("opencode: unknown event type %q", typ)}
	if len(line) <= 4096 {
		n.Data = json.RawMessage(`{"line":` + string(line) + `}`)
	}
	return n
}

// tool reads a line in place (see Decode): it copies what it keeps.
func (d *Decoder) tool(dst []events.Body, part gjson.Result) []events.Body {
	name := strings.Clone(part.Get("tool").String())
	callID := strings.Clone(part.Get("callID").String())
	// One pass over the state, whose output (twice: in metadata too) can
	// be megabytes.
	f := d.ix.Fields(d.ix.Fields(part.Raw, "state")[0], "status", "input", "output", "error", "metadata")
	input := json.RawMessage(`{}`)
	if in := gjson.Parse(f[1]); in.IsObject() {
		input = json.RawMessage(in.Raw)
	}
	kind := ToolKind(name)
	dst = append(dst, events.ToolStarted{CallID: callID, Name: name, Kind: kind, Input: input})

	fin := events.ToolFinished{CallID: callID, Name: name, Kind: kind, Status: events.ToolOK}
	output := f[2]
	switch status := gjson.Parse(f[0]).String(); status {
	case "completed":
	case "error":
		fin.Status = events.ToolError
		output = f[3]
		if isDenial(gjson.Parse(output).String()) {
			fin.Status = events.ToolDenied
		}
	default: // pending/running: OpenCode only prints finished tools; keep what it says
		fin.Status = events.ToolError
		if gjson.Parse(output).String() == "" {
			msg, _ := json.Marshal("tool did not finish (status " + status + ")")
			output = string(msg)
		}
	}
	fin.Output, fin.OutputBytes, fin.Truncated = d.ix.CutString(output, normalize.DefaultOutputCap)
	fin.Output = strings.Clone(fin.Output)
	if exit := gjson.Parse(d.ix.Fields(f[4], "exit")[0]); exit.Type == gjson.Number {
		c := int(exit.Int())
		fin.ExitCode = &c
	}
	if fin.Status == events.ToolDenied {
		f := fin
		d.denied = &f
	}
	return append(dst, fin)
}

// isDenial reports whether a tool error says a permission was refused: an
// "ask" that `opencode run` rejected ("The user rejected permission to use
// this specific tool call.", after which OpenCode ends the run), or a
// "deny" rule ("The user has specified a rule which prevents you from using
// this specific tool call. …", after which the model goes on) (1.18.33).
func isDenial(msg string) bool {
	return normalize.ContainsFold(msg, "rejected permission", "permission denied by user",
		"user rejected", "user dismissed", "denied by permission", "specified a rule which prevents you")
}

func (d *Decoder) stepFinish(dst []events.Body, part gjson.Result) []events.Body {
	tok := part.Get("tokens")
	step := events.Tokens{
		Input:      max(tok.Get("input").Int(), 0),
		Output:     max(tok.Get("output").Int(), 0),
		Reasoning:  max(tok.Get("reasoning").Int(), 0),
		CacheRead:  max(tok.Get("cache.read").Int(), 0),
		CacheWrite: max(tok.Get("cache.write").Int(), 0),
	}
	source := events.CostReported
	if c := part.Get("cost"); c.Type == gjson.Number {
		v := c.Float()
		step.CostUSD = &v
	} else {
		d.costKnown = false
	}
	d.total = d.total.Add(step)
	if !d.costKnown {
		d.total.CostUSD = nil
		source = events.CostUnknown
	}
	d.lastReason = part.Get("reason").String()
	d.retrying = nil // a call went through
	dst = append(dst, events.Usage{Step: step, Total: d.total, CostSource: source, Model: d.model})
	if d.lastReason == "stop" && d.err != nil {
		dst = append(dst, events.Notice{Kind: events.NoticeRecoveredError,
			Message: "opencode recovered from an earlier error: " + d.err.Message})
		d.err = nil
	}
	return dst
}

// Status implements normalize.Decoder. OpenCode has no terminal event; a
// step that finished with reason "stop" ends its session loop, so hub treats
// it as terminal: an OpenCode that then fails to exit (an MCP server or a
// plugin keeping it alive) is killed after --linger and the run stays ok.
// OpenCode never needs a fail-fast stop: it ends its own run after an error
// event.
func (d *Decoder) Status() normalize.Status {
	return normalize.Status{Terminal: d.lastReason == "stop" && d.err == nil, Abort: d.abort}
}

// Outcome implements normalize.Decoder. In order: an error event decides
// (one before a later step that finished with reason "stop" was recovered
// from: SPEC §3, a successful terminal event after a transient error
// wins); then a last step that finished with reason "stop" is success,
// whatever the exit status; then a denied tool is
// permission_denied/tool_denied; then the exit status and stderr decide
// (Fallback).
func (d *Decoder) Outcome(end normalize.End) normalize.Outcome {
	out := normalize.Outcome{Text: d.lastText, SessionID: d.sessionID}
	switch {
	case d.abort != nil:
		out.Error = d.abort
	case d.err != nil:
		out.Error = d.err
		if why, ok := d.logged[d.errRef]; ok && d.errRef != "" && d.err.Bin == events.BinAgentFailed {
			// "Unexpected server error. Check server logs for details.":
			// the log line with the same ref names the cause.
			out.Error = d.explained(why)
		}
	case d.lastReason == "stop":
		// The step that ended the session loop is OpenCode's terminal
		// event, whatever the exit status after it: opencode run sets
		// status 1 for a session.error (an error event, which decides
		// above) or when its event loop itself fails after the loop's end
		// (packages/opencode/src/cli/cmd/run.ts, loop().catch); the other
		// three CLIs' terminal events decide the same way (hub reports the
		// exit in an exit_status notice).
		out.OK = true
	case d.denied != nil:
		out.Error = events.NewError(events.BinPermissionDenied, events.ReasonToolDenied,
			"allow the tool in opencode's permission config, or run with a permission that grants it",
			"opencode refused tool %s (%s)", d.denied.Name, normalize.Shorten(d.denied.Output, 300))
	default:
		out.Error = Fallback(end, d.lastReason, d.sawStep)
	}
	if !out.OK {
		out.Retrying = d.retrying
	}
	return out
}

// Fallback classifies a run with no error event and no successful last step
// from its exit status and stderr. It never returns nil.
func Fallback(end normalize.End, lastReason string, sawStep bool) *events.Error {
	tail := withoutConfigEcho(MaskConfigValues(normalize.CleanText(end.Stderr)))
	last := normalize.Shorten(lastLines(tail, 3), 600)
	if e := classifyText(tail); e != nil {
		if last != "" {
			e.Message = last
		}
		return e
	}
	switch {
	case end.Signal != "":
		return events.NewError(events.BinAgentFailed, events.ReasonCrashed,
			"rerun; if it repeats, run opencode by hand to see why it dies",
			"opencode was killed by %s%s", end.Signal, normalize.Suffix(last))
	case end.ExitCode != nil && *end.ExitCode != 0:
		return events.NewError(events.BinAgentFailed, events.ReasonExitStatus,
			"read the message; run opencode by hand with the same arguments for details",
			"opencode exited with status %d%s", *end.ExitCode, normalize.Suffix(last))
	case lastReason != "" && lastReason != "stop":
		return events.NewError(events.BinProtocol, events.ReasonNoResult,
			"rerun; if it repeats, raise it with OpenCode (the run ended mid-task)",
			"opencode exited 0 after a step that ended with reason %q, without a final answer%s", lastReason, normalize.Suffix(last))
	default:
		what := "without any model step"
		if sawStep {
			what = "without a finished step"
		}
		return events.NewError(events.BinProtocol, events.ReasonNoResult,
			"rerun; check that --model names a configured provider/model",
			"opencode exited 0 %s%s", what, normalize.Suffix(last))
	}
}

// withoutConfigEcho returns stderr without OpenCode's echo of an invalid
// config file (keys and all): the lines from "--- JSONC Input ---" to "---
// Errors ---", and in the errors up to "--- End ---" every line but the
// parse errors themselves ("CommaExpected at line 4, column 97"). A tail
// (the last 64 KiB) that starts inside the echo loses everything before
// its "--- Errors ---", or, without one, everything before "--- End ---"; a
// tail inside the echo with neither marker is dropped whole.
func withoutConfigEcho(s string) string {
	in, errs := strings.Index(s, "--- JSONC Input ---"), strings.Index(s, "--- Errors ---")
	end := strings.Index(s, "--- End ---")
	if in < 0 && errs < 0 && end < 0 {
		return s
	}
	var out []string
	state := 0 // 0 outside, 1 in the input, 2 in the errors
	switch {
	case in < 0 && errs >= 0:
		state = 1 // the tail starts inside the input
	case in < 0 && errs < 0:
		state = 2 // the tail starts inside the errors
	}
	for line := range strings.Lines(s) {
		t := strings.TrimSpace(line)
		switch {
		case t == "--- JSONC Input ---":
			state = 1
		case t == "--- Errors ---":
			state = 2
		case t == "--- End ---":
			state = 0
		case state == 0:
			out = append(out, t)
		case state == 2 && parseErrorLine.MatchString(t):
			out = append(out, t)
		}
	}
	return strings.Join(out, "\n")
}

// parseErrorLine is a parse error in OpenCode's echo of a config file.
var parseErrorLine = regexp.MustCompile(`^[A-Za-z]+ at line \d+, column \d+$`)

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return normalize.JoinLines(lines, 600)
}
