// Package pi decodes `pi --print --mode json` output (pi 0.73.1, package
// @mariozechner/pi-coding-agent, read from the real binary against hub's mock
// server and from its source on 2026-11-30; see testdata/pi) into
// hub.event/v1 events, and decides how a pi run ended.
//
// pi writes one JSON object per line: first the session header
// {type: "session", version, id, timestamp, cwd}, then its agent events:
// agent_start, turn_start, message_start, message_update (each repeating
// the whole partial message twice, in assistantMessageEvent.partial and in
// message), message_end (one per message; for an assistant message it holds
// the content, stopReason, errorMessage and the call's usage and cost),
// tool_execution_start|update|end, turn_end (repeating the assistant
// message), agent_end (repeating every message of the prompt), and
// auto_retry_start|end and compaction_start|end around them.
//
// pi exits 0 after provider errors: the outcome is read from the last
// assistant message's stopReason ("stop", "length", "toolUse", "error",
// "aborted") and errorMessage (which starts with the HTTP status, "429 Rate
// limit reached…"), and from auto_retry_end.finalError. There is one
// agent_end per attempt when pi retries, so agent_end alone is not terminal.
package pi

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Decoder decodes one pi run. Create it with New. It keeps nothing of a
// message_update line: memory stays flat however long the answer.
type Decoder struct {
	ix       *normalize.Index // the runner's Index of the line being decoded (UseIndex), or nil
	failFast bool
	model    *string // the request's model until an assistant message names one

	sessionID string
	lastText  string // the last assistant text block

	last          assistant // the last assistant message_end
	agentEnded    bool      // agent_end seen and no agent_start since
	retryable     bool      // the last assistant message is an error pi's auto-retry takes
	retryEnded    bool      // auto_retry_end seen after the last assistant message
	finalError    string    // its finalError when it failed
	compacting    bool      // compaction_start seen and no compaction_end since
	endedOverflow bool      // that compaction has reason overflow and began after agent_end
	overflowCut   bool      // compaction_start{reason: overflow} right after an error message

	counted map[string]bool // assistant messages whose usage was counted
	total   events.Tokens
	costOK  bool // every counted call reported a cost

	abort *events.Error
}

// assistant is what hub keeps of an assistant message_end.
type assistant struct {
	seen         bool
	stopReason   string
	errorMessage string
	ended        bool // an agent_end followed it
}

var _ normalize.Decoder = (*Decoder)(nil)

// New returns a decoder for one run. model is the model hub asked for
// ("provider/model", or "" for pi's default); pi's assistant messages name
// the one used. With failFast, an auto_retry_start for an error that
// retrying cannot fix (HTTP 401 or 403) makes Status ask the runner to stop
// pi at once.
func New(model string, failFast bool) *Decoder {
	d := &Decoder{failFast: failFast, counted: map[string]bool{}, costOK: true}
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
	// message_update lines are the bulk of the stream and each repeats the
	// whole partial message: read only the two small fields needed, without
	// parsing (or copying) the rest of the line.
	typ := gjson.Get(normalize.View(line), "type") // compared, not kept
	if typ.Type != gjson.String {
		if !gjson.ParseBytes(line).IsObject() {
			return append(dst, events.Notice{Kind: events.NoticeParseError,
				Message: "pi: expected a JSON object, got " + normalize.Shorten(string(line), 200)})
		}
		return append(dst, unknown("without a type", line))
	}
	// The lines that need at most a flag are read without copying them:
	// turn_end, agent_end and the tool result messages repeat megabytes of
	// tool output.
	switch typ.Str {
	case "message_update":
		return d.update(dst, line)
	case "agent_end":
		d.agentEnded = true
		if d.last.seen {
			d.last.ended = true
		}
		return dst
	case "message_end":
		if gjson.Get(normalize.View(line), "message.role").Str != "assistant" {
			return dst
		}
	case "turn_start", "turn_end", "message_start", "tool_execution_update", "queue_update",
		"session_info_changed", "thinking_level_changed":
		// turn_end and agent_end repeat messages already read at
		// message_end; the others carry nothing a caller acts on.
		return dst
	case "tool_execution_end":
		// Tool results are most of the bytes: toolEnd reads them in place
		// and copies what it keeps.
		return d.toolEnd(dst, gjson.Parse(normalize.View(line)))
	}
	root := gjson.ParseBytes(line)
	switch typ.Str {
	case "session":
		if d.sessionID == "" {
			d.sessionID = root.Get("id").String()
			dst = append(dst, events.SessionStarted{SessionID: d.sessionID, Model: d.model})
		}
	case "agent_start":
		d.agentEnded = false
	case "message_end": // an assistant's
		dst = d.assistantEnd(dst, root.Get("message"))
	case "tool_execution_start":
		dst = d.toolStart(dst, root)
	case "auto_retry_start":
		dst = d.retryStart(dst, root)
	case "auto_retry_end":
		d.retryEnded = true
		if !root.Get("success").Bool() {
			d.finalError = root.Get("finalError").String()
		} else {
			dst = append(dst, events.Notice{Kind: events.NoticeRecoveredError, Message: fmt.Sprintf(
				"pi recovered from a failed model call on retry %d", root.Get("attempt").Int())})
		}
	case "compaction_start":
		dst = d.compactionStart(dst, root)
	case "compaction_end":
		dst = d.compactionEnd(dst, root)
	default:
		dst = append(dst, unknown(strconv.Quote(typ.Str), line))
	}
	return dst
}

func unknown(what string, line []byte) events.Notice {
	n := events.Notice{Kind: events.NoticeUnknownEvent, Message: "pi: unknown event type " + what}
	if len(line) <= 4096 {
		n.Data = json.RawMessage(`{"line":` + string(line) + `}`)
	}
	return n
}

// update turns a text delta into text.delta. Thinking and tool-call deltas
// are reported whole at message_end.
func (d *Decoder) update(dst []events.Body, line []byte) []events.Body {
	// gjson stops scanning at the first match; the delta comes before the
	// partial message in pi's output. Only the delta is copied.
	view := normalize.View(line)
	if gjson.Get(view, "assistantMessageEvent.type").Str == "text_delta" {
		if t := gjson.Get(view, "assistantMessageEvent.delta").Str; t != "" {
			dst = append(dst, events.TextDelta{Text: strings.Clone(t)})
		}
	}
	return dst
}

// assistantEnd reads a finished assistant message: text and thinking blocks,
// the call's usage, and its stop reason for the outcome. Tool calls are
// reported from tool_execution_start, once each.
func (d *Decoder) assistantEnd(dst []events.Body, m gjson.Result) []events.Body {
	d.last = assistant{seen: true, stopReason: m.Get("stopReason").String(), errorMessage: m.Get("errorMessage").String()}
	d.retryable = d.last.stopReason == "error" && piRetries(d.last.errorMessage)
	d.retryEnded, d.finalError, d.overflowCut = false, "", false
	if p, id := m.Get("provider").String(), m.Get("model").String(); id != "" {
		name := id
		if p != "" {
			name = p + "/" + id
		}
		d.model = &name
	}
	for _, b := range m.Get("content").Array() {
		switch b.Get("type").String() {
		case "text":
			if t := b.Get("text").String(); t != "" {
				d.lastText = t
				dst = append(dst, events.Message{Text: t})
			}
		case "thinking":
			if t := b.Get("thinking").String(); t != "" {
				dst = append(dst, events.Reasoning{Text: t})
			}
		}
	}
	return d.usage(dst, m)
}

// usage emits one model call's usage from message.usage: pi's input already
// excludes cache reads and writes, and cost.total is what pi priced the call
// at from its model table. A failed call that used no tokens is not a turn
// and emits nothing. Each message is counted once (by its timestamp and
// response id): turn_end and agent_end repeat it.
func (d *Decoder) usage(dst []events.Body, m gjson.Result) []events.Body {
	key := m.Get("timestamp").Raw + "/" + m.Get("responseId").String()
	if d.counted[key] {
		return dst
	}
	u := m.Get("usage")
	step := events.Tokens{
		Input:      max(u.Get("input").Int(), 0),
		Output:     max(u.Get("output").Int(), 0),
		CacheRead:  max(u.Get("cacheRead").Int(), 0),
		CacheWrite: max(u.Get("cacheWrite").Int(), 0),
	}
	if step.Sum() == 0 && (d.last.stopReason == "error" || d.last.stopReason == "aborted") {
		return dst
	}
	d.counted[key] = true
	if c := u.Get("cost.total"); c.Type == gjson.Number && c.Float() >= 0 {
		v := c.Float()
		step.CostUSD = &v
	} else {
		d.costOK = false
	}
	d.total = d.total.Add(step)
	source := events.CostReported
	if !d.costOK {
		d.total.CostUSD = nil
		source = events.CostUnknown
	}
	return append(dst, events.Usage{Step: step, Total: d.total, CostSource: source, Model: d.model})
}

func (d *Decoder) toolStart(dst []events.Body, root gjson.Result) []events.Body {
	name := root.Get("toolName").String()
	input := json.RawMessage(`{}`)
	if in := root.Get("args"); in.IsObject() {
		input = json.RawMessage(in.Raw)
	}
	return append(dst, events.ToolStarted{CallID: root.Get("toolCallId").String(), Name: name, Kind: ToolKind(name), Input: input})
}

// toolEnd reports a finished tool. pi gives no exit status: its bash tool
// fails (isError) with "Command exited with code N" at the end of the output
// for a non-zero status, and succeeds only for status 0 (or a shell killed
// by a signal, which pi does not tell apart), so a successful bash call has
// exit code 0.
//
// It reads the line in place (see Decode) and copies what it keeps.
func (d *Decoder) toolEnd(dst []events.Body, root gjson.Result) []events.Body {
	// One pass over the line, whose result can be megabytes.
	f := d.ix.Fields(root.Raw, "toolCallId", "toolName", "result", "isError")
	name := strings.Clone(gjson.Parse(f[1]).String())
	kind := ToolKind(name)
	fin := events.ToolFinished{CallID: strings.Clone(gjson.Parse(f[0]).String()), Name: name, Kind: kind, Status: events.ToolOK}
	raw, text := content(d.ix, d.ix.Fields(f[2], "content")[0])
	if raw != "" {
		fin.Output, fin.OutputBytes, fin.Truncated = d.ix.CutString(raw, normalize.DefaultOutputCap)
	} else {
		fin.Output, fin.OutputBytes, fin.Truncated = normalize.CutOutput(text, normalize.DefaultOutputCap)
	}
	fin.Output = strings.Clone(fin.Output)
	if gjson.Parse(f[3]).Bool() {
		fin.Status = events.ToolError
		if isBlocked(fin.Output) {
			fin.Status = events.ToolDenied
		}
	}
	if kind == events.ToolShell {
		out := fin.Output
		if fin.Truncated && fin.Status != events.ToolOK {
			out = gjson.Parse(raw).String() // the status is at the end
			if raw == "" {
				out = text
			}
		}
		if code, ok := exitCode(out, fin.Status == events.ToolOK); ok {
			fin.ExitCode = &code
		}
	}
	return append(dst, fin)
}

// content reads a tool result's content: raw is the JSON text of its one
// string (the usual case, which normalize.CutString cuts without unescaping
// all of it), or else text joins the text parts.
func content(ix *normalize.Index, c string) (raw, text string) {
	if strings.HasPrefix(c, `"`) {
		return c, ""
	}
	var parts []string
	for _, p := range ix.Elements(c) {
		// Not gjson's p.Get("text"): it unescapes a whole string it lands on.
		if f := ix.Fields(p, "type", "text"); gjson.Parse(f[0]).String() == "text" {
			parts = append(parts, f[1])
		}
	}
	if len(parts) == 1 {
		return parts[0], ""
	}
	for i, p := range parts {
		if i > 0 {
			text += "\n"
		}
		text += gjson.Parse(p).String()
	}
	return "", text
}

func (d *Decoder) retryStart(dst []events.Body, root gjson.Result) []events.Body {
	msg := root.Get("errorMessage").String()
	status := leadingStatus(msg)
	data, _ := json.Marshal(map[string]any{
		"attempt":      intOrNil(root.Get("attempt")),
		"max_attempts": intOrNil(root.Get("maxAttempts")),
		"delay_ms":     intOrNil(root.Get("delayMs")),
		"http_status":  statusOrNil(status),
		"error":        normalize.Shorten(msg, 1000),
	})
	dst = append(dst, events.Notice{Kind: events.NoticeRetry, Data: data,
		Message: fmt.Sprintf("pi is retrying the model call (attempt %d of %d, in %d ms): %s",
			root.Get("attempt").Int(), root.Get("maxAttempts").Int(), root.Get("delayMs").Int(), normalize.Shorten(msg, 300))})
	if d.failFast && d.abort == nil && normalize.IsAuthStatus(status) {
		d.abort = events.NewError(events.BinUnavailable, events.ReasonAuth, hintAuth,
			"the provider rejected the credentials (%s); hub stopped pi instead of letting it retry", normalize.Shorten(msg, 600)).WithHTTPStatus(status)
	}
	return dst
}

func intOrNil(r gjson.Result) any {
	if r.Type == gjson.Number {
		return r.Int()
	}
	return nil
}

func statusOrNil(s int) any {
	if s > 0 {
		return s
	}
	return nil
}

func (d *Decoder) compactionStart(dst []events.Body, root gjson.Result) []events.Body {
	d.compacting = true
	reason := root.Get("reason").String()
	d.endedOverflow = reason == "overflow" && d.agentEnded
	if reason == "overflow" && d.last.stopReason == "error" {
		// pi compacts and retries after a context overflow; when the stream
		// ends here (print mode exits without waiting), the overflow stands.
		d.overflowCut = true
	}
	return append(dst, events.Notice{Kind: events.NoticeCompaction,
		Message: "pi is compacting the conversation (reason " + strconv.Quote(reason) + ")", Data: objectData(root)})
}

func (d *Decoder) compactionEnd(dst []events.Body, root gjson.Result) []events.Body {
	d.compacting = false
	msg := "pi finished compacting the conversation"
	switch e := root.Get("errorMessage").String(); {
	case e != "":
		msg = "pi's compaction failed: " + e
		if root.Get("reason").String() == "overflow" {
			d.overflowCut = true
		}
	case root.Get("aborted").Bool():
		msg = "pi's compaction was aborted"
	}
	data, _ := json.Marshal(map[string]any{
		"reason":        root.Get("reason").String(),
		"aborted":       root.Get("aborted").Bool(),
		"will_retry":    root.Get("willRetry").Bool(),
		"tokens_before": intOrNil(root.Get("result.tokensBefore")),
	})
	return append(dst, events.Notice{Kind: events.NoticeCompaction, Message: msg, Data: data})
}

func objectData(r gjson.Result) json.RawMessage {
	if r.IsObject() && len(r.Raw) <= 4096 {
		return json.RawMessage(r.Raw)
	}
	return nil
}

// Status implements normalize.Decoder. pi has no single terminal event: it
// prints one agent_end per attempt and decides to retry only after it. hub
// counts pi as finished at an agent_end after which pi will not go on by
// itself: no agent_start since, no compaction running, and the last
// assistant message is not an error that pi's auto-retry takes (its
// _isRetryableError: 429, 5xx, overloaded, network errors, timeouts) unless
// an auto_retry_end has since said the retries are over. With retries off
// in pi's settings such a run is never terminal; pi exits at once anyway.
// An overflow compaction that starts after agent_end does not hold the run:
// print mode does not wait for it (testdata/pi: the stream ends there), and
// on a loaded machine pi was seen to stay alive 25 s and more before it
// exited, so hub ends the run after --linger instead of timing out. A
// threshold compaction is waited for.
// An auto_retry_start for HTTP 401 or 403 aborts when fail-fast is on.
func (d *Decoder) Status() normalize.Status {
	terminal := d.agentEnded && d.last.seen && (!d.compacting || d.endedOverflow) && (!d.retryable || d.retryEnded)
	return normalize.Status{Terminal: terminal, Abort: d.abort}
}
