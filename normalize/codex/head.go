package codex

import (
	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

var _ normalize.HeadDecoder = (*Decoder)(nil)

// DecodeHead implements normalize.HeadDecoder: the head of a turn.completed
// or turn.failed over the line cap (a failure message quoting a huge
// response body) still ends the turn; a failure is classified from the
// start of its message.
func (d *Decoder) DecodeHead(dst []events.Body, head []byte, _ int64) ([]events.Body, bool) {
	obj := normalize.Salvage(head)
	switch gjson.GetBytes(obj, "type").String() {
	case "turn.completed", "turn.failed":
		return d.Decode(dst, obj), true
	}
	return dst, false
}
