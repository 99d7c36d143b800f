// Package claude decodes Claude Code's `-p --output-format stream-json
// --verbose [--include-partial-messages]` output (Claude Code 2.1.x, read
// from the real binary against hub's mock server in November 2026; see
// testdata/claude) into hub.event/v1 events, and decides how a run ended.
//
// Claude Code writes one object per line with a "type": system (subtypes
// init, api_retry, compact_boundary, …), stream_event (the raw Anthropic
// stream events, with partial messages on), assistant (one line per content
// block, each repeating the message id and its message-start usage), user
// (tool results), rate_limit_event and, last, result. The result is the
// terminal event and holds the authoritative totals and cost; API failures
// also end in a result, with subtype "success" but is_error true.
package claude

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Decoder decodes one Claude Code run. Create it with New.
type Decoder struct {
	ix       *normalize.Index // the runner's Index of the line being decoded (UseIndex), or nil
	failFast bool

	sessionID string
	model     *string
	lastText  string
	toolNames map[string]string // tool_use id → tool name
	denied    map[string]bool   // tool_use ids Claude refused

	counted map[string]bool // message ids whose usage was counted
	partial bool            // stream_event lines seen: usage comes from them
	cur     struct {        // the message being streamed
		id    string
		model string
		start events.Tokens
	}
	total events.Tokens

	result    gjson.Result // the result event; Exists() once seen
	synthetic string       // error code of a synthetic assistant message
	apiStatus int          // its api_error_status
	lastRetry gjson.Result // the last system/api_retry
	resetsAt  int64        // a rejected rate_limit_event's resetsAt (Unix seconds)
	abort     *events.Error
}

var _ normalize.Decoder = (*Decoder)(nil)

// New returns a decoder for one run. model is the model hub asked for (""
// if none; system/init names the one used). With failFast, an api_retry for
// an error that retrying cannot fix (HTTP 401 or 403, authentication_failed)
// makes Status ask the runner to stop the agent at once.
func New(model string, failFast bool) *Decoder {
	d := &Decoder{failFast: failFast, toolNames: map[string]string{}, denied: map[string]bool{}, counted: map[string]bool{}}
	if model != "" {
		d.model = &model
	}
	return d
}

// UseIndex implements normalize.Indexed: the decoder skips and sizes the
// long strings of each line through x, which its caller fills as it checks
// the line.
func (d *Decoder) UseIndex(x *normalize.Index) { d.ix = x }

// Decode implements normalize.Decoder.
func (d *Decoder) Decode(dst []events.Body, line []byte) []events.Body {
	// Tool results (user lines) are most of the bytes: user reads them in
	// place and copies what it keeps. Other lines are copied once, so that
	// what is kept of them (the result) stays valid.
	var root gjson.Result
	switch typ := gjson.Get(normalize.View(line), "type").Str; {
	case typ == "stream_event" && d.sessionID != "":
		// Most lines are stream events of a few hundred bytes: read in
		// place too, the event found in one pass.
		return d.streamEvent(dst, gjson.Parse(d.ix.Fields(normalize.View(line), "event")[0]))
	case typ == "user":
		root = gjson.Parse(normalize.View(line))
	default:
		root = gjson.ParseBytes(line)
	}
	if !root.IsObject() {
		return append(dst, events.Notice{Kind: events.NoticeParseError,
			Message: "claude: expected a JSON object, got " + normalize.Shorten(root.Raw, 200)})
	}
	if d.sessionID == "" {
		if sid := root.Get("session_id").String(); sid != "" {
			d.sessionID = strings.Clone(sid)
		}
	}
	switch typ := root.Get("type").String(); typ {
	case "system":
		return d.system(dst, root, line)
	case "stream_event":
		return d.streamEvent(dst, root.Get("event"))
	case "assistant":
		return d.assistant(dst, root)
	case "user":
		return d.user(dst, root)
	case "rate_limit_event":
		// Printed only for a claude.ai login or a gateway (2.1.328):
		// status allowed, allowed_warning or rejected, and when the
		// window resets.
		if info := root.Get("rate_limit_info"); info.Get("status").String() == "rejected" {
			d.resetsAt = info.Get("resetsAt").Int()
		}
		return append(dst, events.Notice{Kind: events.NoticeRateLimit,
			Message: "claude: rate limit status " + normalize.Shorten(root.Get("rate_limit_info").Raw, 300),
			Data:    objectData(root.Get("rate_limit_info"))})
	case "result":
		d.result = root // gjson.ParseBytes copied the line: safe to keep
		for _, den := range d.result.Get("permission_denials").Array() {
			d.denied[den.Get("tool_use_id").String()] = true
		}
		return d.recovered(dst)
	default:
		return append(dst, unknown("type "+typ, line))
	}
}

func unknown(what string, line []byte) events.Notice {
	n := events.Notice{Kind: events.NoticeUnknownEvent, Message: "claude: unknown event " + what}
	if len(line) <= 4096 {
		n.Data = json.RawMessage(`{"line":` + string(line) + `}`)
	}
	return n
}

func objectData(r gjson.Result) json.RawMessage {
	if r.IsObject() && len(r.Raw) <= 4096 {
		return json.RawMessage(r.Raw)
	}
	return nil
}

func (d *Decoder) system(dst []events.Body, root gjson.Result, line []byte) []events.Body {
	switch sub := root.Get("subtype").String(); sub {
	case "init":
		if m := root.Get("model").String(); m != "" {
			d.model = &m
		}
		var tools []string
		for _, t := range root.Get("tools").Array() {
			tools = append(tools, t.String())
		}
		return append(dst, events.SessionStarted{SessionID: root.Get("session_id").String(), Model: d.model, Tools: tools})
	case "api_retry":
		d.lastRetry = root
		status := int(root.Get("error_status").Int())
		data, _ := json.Marshal(map[string]any{
			"attempt":      intOrNil(root.Get("attempt")),
			"max_attempts": intOrNil(root.Get("max_retries")),
			"delay_ms":     intOrNil(root.Get("retry_delay_ms")),
			"http_status":  intOrNil(root.Get("error_status")),
			"error":        root.Get("error").String(),
		})
		dst = append(dst, events.Notice{Kind: events.NoticeRetry, Data: data,
			Message: fmt.Sprintf("claude is retrying the API call (attempt %d of %d, HTTP %d, %s)",
				root.Get("attempt").Int(), root.Get("max_retries").Int(), status, root.Get("error").String())})
		if d.failFast && d.abort == nil && (normalize.IsAuthStatus(status) || root.Get("error").String() == "authentication_failed") {
			what := root.Get("error").String()
			if status > 0 {
				what = fmt.Sprintf("HTTP %d, %s", status, what)
			}
			d.abort = events.NewError(events.BinUnavailable, events.ReasonAuth, hintAuth,
				"the API rejected the credentials (%s); hub stopped Claude Code instead of letting it retry", what).WithHTTPStatus(status)
		}
		return dst
	case "permission_denied":
		// Claude refused a tool call; its tool_result (is_error) follows or
		// came before, and the result lists it in permission_denials too.
		if id := root.Get("tool_use_id").String(); id != "" {
			d.denied[id] = true
		}
		return dst
	case "status", "hook_started", "hook_response":
		// Progress chatter ("requesting"); nothing a caller acts on.
		return dst
	case "compact_boundary":
		return append(dst, events.Notice{Kind: events.NoticeCompaction, Message: "claude compacted the conversation",
			Data: objectData(root.Get("compact_metadata"))})
	default:
		return append(dst, unknown("system/"+sub, line))
	}
}

func intOrNil(r gjson.Result) any {
	if r.Type == gjson.Number {
		return r.Int()
	}
	return nil
}

// streamEvent handles the raw Anthropic stream events of partial messages:
// text deltas, and per-call usage (input and cache tokens from
// message_start, output tokens from message_delta).
// ev may be read in place (see Decode): what is kept is copied.
func (d *Decoder) streamEvent(dst []events.Body, ev gjson.Result) []events.Body {
	d.partial = true
	switch ev.Get("type").String() {
	case "message_start":
		m := ev.Get("message")
		d.cur.id, d.cur.model = strings.Clone(m.Get("id").String()), strings.Clone(m.Get("model").String())
		d.cur.start = tokens(m.Get("usage"))
	case "content_block_delta":
		if delta := ev.Get("delta"); delta.Get("type").String() == "text_delta" {
			if t := delta.Get("text").String(); t != "" {
				dst = append(dst, events.TextDelta{Text: strings.Clone(t)})
			}
		}
	case "message_delta":
		if d.cur.id == "" || d.counted[d.cur.id] {
			return dst
		}
		d.counted[d.cur.id] = true
		step := d.cur.start
		u := ev.Get("usage")
		if o := u.Get("output_tokens"); o.Exists() {
			step.Output = max(o.Int(), 0)
		}
		dst = d.usage(dst, step, d.cur.model)
	}
	return dst
}

// tokens reads an Anthropic usage object. Anthropic's input_tokens already
// excludes cache reads and writes.
func tokens(u gjson.Result) events.Tokens {
	return events.Tokens{
		Input:      max(u.Get("input_tokens").Int(), 0),
		Output:     max(u.Get("output_tokens").Int(), 0),
		CacheRead:  max(u.Get("cache_read_input_tokens").Int(), 0),
		CacheWrite: max(u.Get("cache_creation_input_tokens").Int(), 0),
	}
}

// usage emits one model call's usage. Claude reports cost only for the whole
// run (in result), so per-call cost is unknown.
func (d *Decoder) usage(dst []events.Body, step events.Tokens, model string) []events.Body {
	d.total = d.total.Add(step)
	var m *string
	if model != "" {
		m = &model
	} else {
		m = d.model
	}
	return append(dst, events.Usage{Step: step, Total: d.total, CostSource: events.CostUnknown, Model: m})
}

func (d *Decoder) assistant(dst []events.Body, root gjson.Result) []events.Body {
	msg := root.Get("message")
	id := msg.Get("id").String()
	if msg.Get("model").String() == "<synthetic>" || root.Get("error").Exists() {
		// A synthetic message is how Claude Code reports an API failure.
		d.synthetic = root.Get("error").String()
		if s := root.Get("api_error_status"); s.Type == gjson.Number {
			d.apiStatus = int(s.Int())
		}
		// Its text ("Invalid API key · …") is an error message, not an
		// answer: the result classifies it.
		return dst
	}
	if !d.partial && id != "" && !d.counted[id] {
		// Without partial messages the only per-call usage is the
		// message-start snapshot on the first line of each message id.
		d.counted[id] = true
		dst = d.usage(dst, tokens(msg.Get("usage")), msg.Get("model").String())
	}
	for _, b := range msg.Get("content").Array() {
		switch b.Get("type").String() {
		case "text":
			if t := b.Get("text").String(); t != "" {
				d.lastText = t
				dst = append(dst, events.Message{Text: t})
			}
		case "thinking", "redacted_thinking":
			if t := b.Get("thinking").String(); t != "" {
				dst = append(dst, events.Reasoning{Text: t})
			}
		case "tool_use", "server_tool_use", "mcp_tool_use":
			name, callID := b.Get("name").String(), b.Get("id").String()
			d.toolNames[callID] = name
			input := json.RawMessage(`{}`)
			if in := b.Get("input"); in.IsObject() {
				input = json.RawMessage(in.Raw)
			}
			dst = append(dst, events.ToolStarted{CallID: callID, Name: name, Kind: ToolKind(name), Input: input})
		}
	}
	return dst
}

// user reads a line in place (see Decode): it copies what it keeps.
func (d *Decoder) user(dst []events.Body, root gjson.Result) []events.Body {
	// Fields, not root.Get("message.content"): gjson would scan the content
	// to its end byte by byte.
	content := d.ix.Fields(d.ix.Fields(root.Raw, "message")[0], "content")[0]
	for _, b := range d.ix.Elements(content) {
		// One pass over the block, whose content can be megabytes.
		f := d.ix.Fields(b, "type", "tool_use_id", "content", "is_error")
		if gjson.Parse(f[0]).String() != "tool_result" {
			continue
		}
		callID := strings.Clone(gjson.Parse(f[1]).String())
		name := d.toolNames[callID]
		fin := events.ToolFinished{CallID: callID, Name: name, Kind: ToolKind(name), Status: events.ToolOK}
		fin.Output, fin.OutputBytes, fin.Truncated = contentText(d.ix, f[2])
		fin.Output = strings.Clone(fin.Output)
		if gjson.Parse(f[3]).Bool() {
			fin.Status = events.ToolError
			// A refusal is one short sentence: the cut output holds it.
			if d.denied[callID] || normalize.ContainsFold(fin.Output, "permission to use", "requested permissions", "haven't granted") {
				fin.Status = events.ToolDenied
				d.denied[callID] = true
			}
		}
		dst = append(dst, fin)
	}
	return dst
}

// contentText is a tool result's content (raw JSON), cut to
// normalize.DefaultOutputCap: a string, or the text of an array of blocks.
func contentText(ix *normalize.Index, raw string) (out string, size int64, truncated bool) {
	if strings.HasPrefix(raw, `"`) {
		return ix.CutString(raw, normalize.DefaultOutputCap)
	}
	var parts []string
	for _, b := range gjson.Parse(raw).Array() {
		if t := b.Get("text"); t.Exists() {
			parts = append(parts, t.String())
		}
	}
	return normalize.CutOutput(strings.Join(parts, "\n"), normalize.DefaultOutputCap)
}

// Status implements normalize.Decoder: the result event is terminal; an
// api_retry that cannot succeed aborts when fail-fast is on.
func (d *Decoder) Status() normalize.Status {
	return normalize.Status{Terminal: d.result.Exists(), Abort: d.abort}
}
