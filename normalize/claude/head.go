package claude

import (
	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

var _ normalize.HeadDecoder = (*Decoder)(nil)

// DecodeHead implements normalize.HeadDecoder: the head of a result line
// over the line cap (a huge answer in "result") is still the result. Claude
// Code 2.1 writes "type" near the end of its result, after "result", so a
// head without "type" is a result when it has the result's own top-level
// fields (total_cost_usd, num_turns). The answer is what the head holds of
// it; the totals, subtype and is_error come before it and are exact.
func (d *Decoder) DecodeHead(dst []events.Body, head []byte, _ int64) ([]events.Body, bool) {
	obj := normalize.Salvage(head)
	if obj == nil {
		return dst, false
	}
	r := gjson.ParseBytes(obj)
	switch typ := r.Get("type"); {
	case typ.String() == "result":
	case !typ.Exists() && (r.Get("total_cost_usd").Exists() || r.Get("num_turns").Exists()):
		obj = append([]byte(`{"type":"result",`), obj[1:]...)
	default:
		return dst, false
	}
	return d.Decode(dst, obj), true
}
