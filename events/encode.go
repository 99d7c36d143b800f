package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// TimeFormat is the layout of the "ts" field: RFC 3339, UTC, milliseconds.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// MarshalJSON encodes e as one hub.event/v1 object: the common fields first,
// then the body's fields. The result never contains a raw U+2028 or U+2029
// (they are written as \u2028 and \u2029, also inside raw passthrough such as
// Notice.Data and ToolStarted.Input), never contains a newline, and invalid
// UTF-8 in strings is replaced by U+FFFD.
func (e Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(nil)
}

// AppendJSON appends e's encoding (as MarshalJSON) to dst, without a newline.
func (e Event) AppendJSON(dst []byte) ([]byte, error) {
	if e.Body == nil {
		return dst, fmt.Errorf("events: event %d has no body", e.Seq)
	}
	start := len(dst)
	dst = append(dst, `{"v":`...)
	dst = strconv.AppendInt(dst, Version, 10)
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"ts":"`...)
	dst = e.TS.UTC().AppendFormat(dst, TimeFormat)
	dst = append(dst, `","run_id":`...)
	dst = appendString(dst, e.RunID)
	dst = append(dst, `,"agent":`...)
	dst = appendString(dst, e.Agent)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, string(e.Body.Type()))

	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e.Body); err != nil {
		return dst[:start], fmt.Errorf("events: encode %s: %w", e.Body.Type(), err)
	}
	body := bytes.TrimRight(buf.Bytes(), "\n")
	if len(body) < 2 || body[0] != '{' {
		return dst[:start], fmt.Errorf("events: %s body is not an object", e.Body.Type())
	}
	if len(body) > 2 {
		dst = append(dst, ',')
		dst = append(dst, body[1:]...)
	} else {
		dst = append(dst, '}')
	}
	return EscapeLineSeparators(dst), nil
}

func appendString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return append(dst, b...)
}

// EscapeLineSeparators rewrites every raw U+2028 and U+2029 in the JSON text
// b as the escapes \u2028 and \u2029, in place when there are none. In valid
// JSON these characters can only occur inside strings, where the escape means
// the same character, so the value is unchanged; line readers that split on
// them (JavaScript's) no longer do.
func EscapeLineSeparators(b []byte) []byte {
	i := bytes.Index(b, []byte("\xe2\x80"))
	if i < 0 {
		return b
	}
	var out []byte
	last := 0
	for i < len(b)-2 {
		if b[i] == 0xe2 && b[i+1] == 0x80 && (b[i+2] == 0xa8 || b[i+2] == 0xa9) {
			if out == nil {
				out = make([]byte, 0, len(b)+12)
			}
			out = append(out, b[last:i]...)
			if b[i+2] == 0xa8 {
				out = append(out, `\u2028`...)
			} else {
				out = append(out, `\u2029`...)
			}
			i += 3
			last = i
			continue
		}
		i++
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

// Encoder writes events as JSON lines (one object and "\n" per event).
// It is not safe for concurrent use.
type Encoder struct {
	w   interface{ Write([]byte) (int, error) }
	buf []byte
}

// NewEncoder returns an Encoder writing to w.
func NewEncoder(w interface{ Write([]byte) (int, error) }) *Encoder {
	return &Encoder{w: w}
}

// Encode writes e and a newline with one Write call.
func (enc *Encoder) Encode(e Event) error {
	b, err := e.AppendJSON(enc.buf[:0])
	if err != nil {
		return err
	}
	b = append(b, '\n')
	enc.buf = b
	_, err = enc.w.Write(b)
	return err
}

// Now is the clock hub stamps events with, truncated to milliseconds.
func Now() time.Time { return time.Now().UTC().Truncate(time.Millisecond) }
