package opencode

import (
	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

var _ normalize.HeadDecoder = (*Decoder)(nil)

// DecodeHead implements normalize.HeadDecoder: the head of a step_finish or
// an error over the line cap (an API error whose responseBody echoes a huge
// request) still decides the run: OpenCode has no other terminal event, and
// the error's name, message and status come before its body.
func (d *Decoder) DecodeHead(dst []events.Body, head []byte, _ int64) ([]events.Body, bool) {
	obj := normalize.Salvage(head)
	switch gjson.GetBytes(obj, "type").String() {
	case "step_finish", "error":
		return d.Decode(dst, obj), true
	}
	return dst, false
}
