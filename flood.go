package hub

import (
	"encoding/json"
	"fmt"

	"github.com/hubcli/hub/events"
)

// MaxNoticesPerKind is how many notices of one kind about the agent's output
// (non_json_output, parse_error, unknown_event, line_too_long, stderr) a run
// sends; the rest are counted and reported by one notice of that kind before
// run.finished. Without it, a million lines of noise made a stream several
// times larger than the agent's (one notice per line).
const MaxNoticesPerKind = 100

// floodKinds are the notice kinds one per agent line can produce.
var floodKinds = map[events.NoticeKind]bool{
	events.NoticeNonJSONOutput: true,
	events.NoticeParseError:    true,
	events.NoticeUnknownEvent:  true,
	events.NoticeLineTooLong:   true,
	events.NoticeStderr:        true,
}

// notices counts a run's notices of the flood kinds.
type notices struct {
	sent, held map[events.NoticeKind]int
}

// keep reports whether notice b is sent, counting it.
func (n *notices) keep(b events.Notice) bool {
	if !floodKinds[b.Kind] {
		return true
	}
	if n.sent == nil {
		n.sent, n.held = map[events.NoticeKind]int{}, map[events.NoticeKind]int{}
	}
	if n.sent[b.Kind] < MaxNoticesPerKind {
		n.sent[b.Kind]++
		return true
	}
	n.held[b.Kind]++
	return false
}

// summary returns one notice per kind that had notices held back, in the
// order of floodKinds' declaration.
func (n *notices) summary() []events.Notice {
	var out []events.Notice
	for _, k := range []events.NoticeKind{events.NoticeNonJSONOutput, events.NoticeParseError, events.NoticeUnknownEvent,
		events.NoticeLineTooLong, events.NoticeStderr} {
		if c := n.held[k]; c > 0 {
			data, _ := json.Marshal(map[string]int{"not_sent": c})
			where := "see --raw-log for the agent's output"
			if k == events.NoticeStderr {
				where = "--raw-log records stdout only; run the agent by hand to see all of its stderr"
			}
			out = append(out, events.Notice{Kind: k, Data: data, Message: fmt.Sprintf(
				"%d more %s notices were not sent: hub sends at most %d of a kind per run (%s)", c, k, MaxNoticesPerKind, where)})
		}
	}
	return out
}
