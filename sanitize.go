package hub

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// sanitize makes an event body safe to encode, whatever the agent wrote:
// usage counts clamped and costs that are not finite and ≥ 0 made unknown
// (events.Tokens.Sane); raw JSON fields (a tool's input, a notice's data)
// made valid UTF-8 (invalid bytes become U+FFFD) and, when they are not
// JSON hub can pass on (invalid, or nested deeper than encoding/json's
// 10,000 levels), replaced by an object that says so. Without it, one such
// value made the event fail to encode, which lost it and ended the run as
// internal — or lost run.finished.
func sanitize(b events.Body) events.Body {
	switch v := b.(type) {
	case events.Usage:
		v.Step, v.Total = v.Step.Sane(), v.Total.Sane()
		return v
	case events.ToolStarted:
		v.Input = rawJSON(v.Input, "input")
		return v
	case events.ApprovalRequested:
		v.Input = rawJSON(v.Input, "input")
		return v
	case events.Notice:
		if len(v.Data) > 0 {
			v.Data = rawJSON(v.Data, "data")
		}
		return v
	case events.RunFinished:
		v.Usage = v.Usage.Sane()
		v.CostUSD = v.Usage.CostUSD
		return v
	}
	return b
}

// rawJSON returns raw as valid UTF-8, or, when it is not a JSON object hub
// can encode, {"hub_unreadable_<what>": its first 200 bytes as text}.
func rawJSON(raw json.RawMessage, what string) json.RawMessage {
	if !utf8.Valid(raw) {
		raw = bytes.ToValidUTF8(raw, []byte("\uFFFD"))
	}
	if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] == '{' && normalize.Valid(t) {
		return raw
	}
	out, _ := json.Marshal(map[string]string{"hub_unreadable_" + what: normalize.Shorten(string(raw), 200)})
	return out
}
