package pi

import (
	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

var _ normalize.HeadDecoder = (*Decoder)(nil)

// DecodeHead implements normalize.HeadDecoder: an agent_end over the line
// cap is still the end of the agent run. It repeats every message of the
// run, so one huge tool output makes it huge; hub reads nothing else from
// it.
func (d *Decoder) DecodeHead(dst []events.Body, head []byte, _ int64) ([]events.Body, bool) {
	obj := normalize.Salvage(head)
	if gjson.GetBytes(obj, "type").String() != "agent_end" {
		return dst, false
	}
	return d.Decode(dst, obj), true
}
