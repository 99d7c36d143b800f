package hub

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/framer"
	"github.com/hubcli/hub/normalize"
)

// This file holds what the runner makes of stdout lines it cannot decode as
// they are: lines over the line cap, and lines that are not JSON.

// tooLongNotice reports a line over the line cap; decoded says that the
// decoder read an event from its head (normalize.HeadDecoder).
func tooLongNotice(l framer.Line, maxLine int, decoded bool) events.Notice {
	data, _ := json.Marshal(map[string]any{"bytes": l.Size, "max_line": maxLine,
		"head": normalize.Shorten(string(l.Bytes), 200), "decoded_head": decoded})
	msg := fmt.Sprintf("skipped a %d-byte stdout line: over the %d-byte line cap", l.Size, maxLine)
	switch {
	case decoded && int64(len(l.Bytes)) == l.Size:
		// A cap under framer.HeadBytes: the head is the whole line.
		msg = fmt.Sprintf("a %d-byte stdout line is over the %d-byte line cap: its event was read from it all the same (whole lines up to %d bytes are kept for that)",
			l.Size, maxLine, framer.HeadBytes)
	case decoded:
		msg = fmt.Sprintf("a %d-byte stdout line is over the %d-byte line cap: its event was read from its first %d bytes, the rest is lost",
			l.Size, maxLine, len(l.Bytes))
	}
	return events.Notice{Kind: events.NoticeLineTooLong, Message: msg, Data: data}
}

// maxSpliceTries bounds the positions damagedLine tries as the start of an
// event written into the middle of a line.
const maxSpliceTries = 64

// damagedLine reports a stdout line that is not JSON even after cleaning
// (normalize.Clean), and returns the event it recovered from it, if any:
//
//   - a line that does not start with '{' is other output (a banner, a
//     progress line, the rest of a line another one cut): non_json_output;
//   - a line that starts with '{' is a damaged event: parse_error, naming
//     the damage. When the line ends with a whole JSON object that starts
//     in its middle, not right after ':', ',' or '[' (so not a member of the
//     damaged event), another writer's event was written into it (two
//     processes sharing the agent's stdout): that event is returned, to be
//     decoded, and the damaged event's start is lost. Otherwise the line was
//     cut (the agent stopped mid-line) or is broken at a byte the notice
//     names.
func damagedLine(c []byte) (events.Notice, []byte) {
	if c[0] != '{' {
		return events.Notice{Kind: events.NoticeNonJSONOutput, Message: normalize.Shorten(string(c), 2000)}, nil
	}
	data := func(offset int) json.RawMessage {
		d, _ := json.Marshal(map[string]any{"bytes": len(c), "offset": offset, "head": normalize.Shorten(string(c), 200)})
		return d
	}
	if at := splicedAt(c); at > 0 {
		return events.Notice{Kind: events.NoticeParseError, Data: data(at), Message: fmt.Sprintf(
			"damaged stdout line: another event was written into it at byte %d of %d (two writers on one stdout); that event was decoded, the damaged one is lost: %s",
			at, len(c), normalize.Shorten(string(c[:at]), 200))}, c[at:]
	}
	var raw json.RawMessage
	err := json.Unmarshal(c, &raw)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se) && se.Error() != "unexpected end of JSON input":
		at := max(int(se.Offset)-1, 0) // the error came after reading Offset bytes
		return events.Notice{Kind: events.NoticeParseError, Data: data(at), Message: fmt.Sprintf(
			"damaged stdout line: invalid JSON at byte %d of %d (%v), near %q",
			at, len(c), se, normalize.Shorten(string(c[max(at-40, 0):]), 80))}, nil
	default: // json reports a cut as "unexpected end of JSON input"
		return events.Notice{Kind: events.NoticeParseError, Data: data(len(c)), Message: fmt.Sprintf(
			"damaged stdout line: JSON cut short after %d bytes (the agent stopped mid-line): %s",
			len(c), normalize.Shorten(string(c), 200))}, nil
	}
}

// splicedAt returns where in c a whole JSON object starts that runs to the
// end of c and was written into it (see damagedLine), or -1.
func splicedAt(c []byte) int {
	end := len(c)
	for tries := 0; tries < maxSpliceTries; tries++ {
		i := bytes.LastIndex(c[:end], []byte(`{"`))
		if i <= 0 {
			return -1
		}
		end = i
		prev := bytes.TrimRight(c[:i], " \t")
		if p := prev[len(prev)-1]; p == ':' || p == ',' || p == '[' {
			continue // a member of the damaged event itself
		}
		if normalize.Valid(c[i:]) {
			return i
		}
	}
	return -1
}
