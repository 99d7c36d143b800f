package opencode

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// OpenCode (1.18.33) retries a failed model call — a refused or dropped
// connection, a 429, a 5xx, even a quota error — silently: nothing on stdout
// until it gives up, minutes later, or never. With --print-logs --log-level
// ERROR (which hub passes) it writes one log line per failed attempt on
// stderr, in logfmt:
//
//	timestamp=… level=ERROR run=… message="stream error" providerID=mock modelID=m session.id=ses_… small=false agent=build mode=primary error.error="AI_APICallError: Cannot connect to API: Unable to connect. …"
//
// and, when it gives up, a line with message=process and the error and its
// stack (a stderr notice; the error event on stdout follows, when there is
// one). DecodeStderr makes each "stream
// error" of the session's own agent (small=false) that OpenCode retries a
// retry notice, classified by its text; a quota, which retrying cannot lift,
// stops the run at once unless fail-fast is off. A failure it does not
// retry (401, 400, …) is left a stderr notice: its error event follows. The process line is dropped: the
// error event says the same.

// DecodeStderr implements normalize.StderrDecoder. A line it does not take
// whose config values MaskConfigValues masks is a stderr notice masked.
func (d *Decoder) DecodeStderr(dst []events.Body, line string) ([]events.Body, bool) {
	out, took := d.decodeStderr(dst, line)
	if !took {
		if masked := MaskConfigValues(line); masked != line {
			return append(dst, events.Notice{Kind: events.NoticeStderr, Message: masked}), true
		}
	}
	return out, took
}

func (d *Decoder) decodeStderr(dst []events.Body, line string) ([]events.Body, bool) {
	// A config file that is not valid JSON is echoed whole between these
	// two lines (1.18.33), API keys and all: not passed on.
	// Under "--- Errors ---" it quotes the broken line again ("Line 4:
	// …", a caret under it) up to "--- End ---": those go too. A config
	// that is JSON but not OpenCode's schema names the value it got ("↳
	// Expected boolean | undefined, got "…""): the value is masked.
	switch {
	case line == "--- JSONC Input ---":
		d.echo, d.echoErrors = 1, false
		return dst, true
	case d.echo > 0 && line == "--- Errors ---":
		dst = append(dst, events.Notice{Kind: events.NoticeStderr, Message: fmt.Sprintf(
			"opencode printed its config file here (%d lines, not shown: it may hold API keys)", d.echo-1)})
		d.echo, d.echoErrors = 0, true
		return dst, true
	case d.echo > 0:
		d.echo++
		return dst, true
	case d.echoErrors && line == "--- End ---":
		d.echoErrors = false
		return dst, true
	case d.echoErrors && !parseErrorLine.MatchString(strings.TrimSpace(line)):
		return dst, true // the broken line quoted again, a caret, …
	}
	if !strings.HasPrefix(line, "timestamp=") || logfmtValue(line, "level") != "ERROR" {
		return dst, false
	}
	switch logfmtValue(line, "message") {
	case "failed":
		// The cause of an error event that says only "Unexpected server
		// error", under the same ref: kept for Outcome, and sent as a
		// stderr notice.
		if ref, why := logfmtValue(line, "ref"), logfmtValue(line, "error"); ref != "" && why != "" && len(d.logged) < 100 {
			if d.logged == nil {
				d.logged = map[string]string{}
			}
			d.logged[ref] = why
		}
		return dst, false
	case "stream error":
	default:
		return dst, false
	}
	text := logfmtValue(line, "error.error")
	if text == "" {
		text = loggedBody(line)
	}
	if text == "" || logfmtValue(line, "small") == "true" {
		return dst, false // the title agent's call (hub passes --title), or no error
	}
	text = strings.TrimPrefix(text, "AI_APICallError: ")
	e := classifyRetried(text)
	if !e.Retryable && e.Reason != events.ReasonQuota {
		// A call OpenCode does not retry (the AI SDK retries 408, 409,
		// 429, 5xx and failed connections; quota comes as a 429): its
		// error event follows and decides. The line is a stderr notice.
		return dst, false
	}
	d.retries++
	d.retrying = e
	data := map[string]any{"attempt": d.retries, "max_attempts": nil, "delay_ms": nil, "http_status": nil,
		"bin": e.Bin, "reason": e.Reason}
	raw, _ := json.Marshal(data)
	dst = append(dst, events.Notice{Kind: events.NoticeRetry, Data: raw, Message: fmt.Sprintf(
		"opencode: model call failed (attempt %d), it retries: %s", d.retries, normalize.Shorten(text, 600))})
	if d.failFast && d.abort == nil && e.Reason == events.ReasonQuota && normalize.TryAgainIn(text) == 0 {
		// A quota that names no wait: retrying cannot lift it.
		d.abort = events.NewError(e.Bin, e.Reason, e.Hint,
			"opencode kept retrying a failure that retrying cannot fix; hub stopped it: %s", normalize.Shorten(text, 600))
	}
	return dst, true
}

// loggedBody is the provider's error object of a "stream error" line that
// logs it field by field rather than as an Error (1.18.33, an error sent
// inside the stream: error.error.message="…" error.error.type=server_error
// error.error.code=internal_error), as the JSON object it was, which
// normalize.FindProviderError reads; "" when the line has no message.
func loggedBody(line string) string {
	msg := logfmtValue(line, "error.error.message")
	if msg == "" {
		return ""
	}
	body := struct {
		Message string  `json:"message"`
		Type    string  `json:"type,omitempty"`
		Code    *string `json:"code"`
	}{Message: msg, Type: logfmtValue(line, "error.error.type")}
	if v := logfmtValue(line, "error.error.code"); v != "" && v != "null" { // logfmt writes a null as null
		body.Code = &v
	}
	raw, _ := json.Marshal(body) // cannot fail: strings
	return string(raw)
}

// explained is the error of an error event that hid its cause, from the
// cause OpenCode logged for it (1.18.33: "ProviderModelNotFoundError: Model
// not found: nope/x. Did you mean: …?").
func (d *Decoder) explained(why string) *events.Error {
	e := classifyRetried(why)
	if e.Reason == events.ReasonServer && !normalize.ContainsFold(why, "server") {
		// Not a provider's failure after all: OpenCode's own.
		return events.NewError(events.BinAgentFailed, events.ReasonErrorEvent,
			"read the message; run opencode by hand with --print-logs for details", "opencode: %s", normalize.Shorten(why, 1000))
	}
	e.Message = "opencode: " + e.Message
	return e
}

// classifyRetried classifies the text of a failed attempt: OpenCode's own
// wording (classifyText), then the providers' (normalize.ClassifyText); a
// text neither knows is unavailable/server, as OpenCode retried it.
func classifyRetried(text string) *events.Error {
	if e := classifyText(text); e != nil {
		return e
	}
	if c, ok := normalize.ClassifyText(text, 0, nil); ok {
		return events.NewError(c.Bin, c.Reason, hintFor(c.Reason), "%s", normalize.Shorten(text, 1000)).WithHTTPStatus(c.Status)
	}
	return events.NewError(events.BinUnavailable, events.ReasonServer, hintServer, "%s", normalize.Shorten(text, 1000))
}

// hintOther is the hint of a failure no other hint fits.
const hintOther = "read the message; run opencode by hand with --print-logs for details"

// hints are OpenCode's hints by reason (hintFor).
var hints = normalize.Hints{
	events.ReasonAuth: hintAuth, events.ReasonQuota: hintQuota, events.ReasonRateLimit: hintRate,
	events.ReasonOverloaded: hintOverload, events.ReasonNetwork: hintNetwork, events.ReasonContextOverflow: hintOverflow,
	events.ReasonBadModel: hintModel, events.ReasonNotConfigured: hintConfig, events.ReasonServer: hintServer,
}

// hintFor is the hint of a reason of OpenCode's failures.
func hintFor(r events.Reason) string {
	return hints.For(r, hintOther)
}

// logfmtValue returns the value of key in a logfmt line: a bare word, or a
// quoted string with \" \\ \n \t escapes; "" when the key is absent.
func logfmtValue(line, key string) string {
	for i := 0; i < len(line); {
		j := strings.Index(line[i:], key+"=")
		if j < 0 {
			return ""
		}
		j += i
		if j > 0 && line[j-1] != ' ' { // "error.error=" is not "error="
			i = j + 1
			continue
		}
		v := line[j+len(key)+1:]
		if !strings.HasPrefix(v, `"`) {
			if k := strings.IndexByte(v, ' '); k >= 0 {
				v = v[:k]
			}
			return v
		}
		var b strings.Builder
		for k := 1; k < len(v); k++ {
			switch c := v[k]; {
			case c == '"':
				return b.String()
			case c == '\\' && k+1 < len(v):
				k++
				switch v[k] {
				case 'n':
					b.WriteByte('\n')
				case 't':
					b.WriteByte('\t')
				default:
					b.WriteByte(v[k])
				}
			default:
				b.WriteByte(c)
			}
		}
		return b.String() // cut: what there is
	}
	return ""
}

// gotValue is the value a schema error quotes: `got "…"`.
var gotValue = regexp.MustCompile(`\bgot (?:"(?:[^"\\]|\\.)*"?|'[^']*'?|[^\s,;)]+)`)

// MaskConfigValues replaces the config values OpenCode quotes in a schema
// error (`↳ Expected boolean | undefined, got "yes-…"`) with "…": a value
// of the wrong type may be a key.
func MaskConfigValues(s string) string { return gotValue.ReplaceAllString(s, `got "…"`) }
