package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
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
	dst = appendTS(dst, e.TS)
	dst = append(dst, `","run_id":`...)
	dst = appendString(dst, e.RunID)
	dst = append(dst, `,"agent":`...)
	dst = appendString(dst, e.Agent)
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, string(e.Body.Type()))

	body, err := appendBody(dst, e.Body)
	if err != nil {
		return dst[:start], fmt.Errorf("events: encode %s: %w", e.Body.Type(), err)
	}
	return EscapeLineSeparators(body), nil
}

// appendTS appends t in UTC as t.UTC().AppendFormat(dst, TimeFormat) does
// (milliseconds cut, not rounded), without parsing the layout: it is one
// of the larger costs of encoding a small event.
func appendTS(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, TimeFormat)
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	d := func(v, n int) { // v in n decimal digits
		for i := n - 1; i >= 0; i-- {
			dst = append(dst, 0)
		}
		for i := len(dst) - 1; n > 0; i, n = i-1, n-1 {
			dst[i] = byte('0' + v%10)
			v /= 10
		}
	}
	d(year, 4)
	dst = append(dst, '-')
	d(int(month), 2)
	dst = append(dst, '-')
	d(day, 2)
	dst = append(dst, 'T')
	d(hour, 2)
	dst = append(dst, ':')
	d(minute, 2)
	dst = append(dst, ':')
	d(sec, 2)
	dst = append(dst, '.')
	d(ms, 3)
	return append(dst, 'Z')
}

// appendBody appends the body's fields, each with a leading comma, and the
// closing brace. The types a run emits many of are written field by field;
// the once-per-run types go through encoding/json (appendBodyReflect), whose
// output the field writers reproduce byte for byte (see encode_test.go).
func appendBody(dst []byte, body Body) ([]byte, error) {
	w := fields{b: dst}
	switch b := body.(type) {
	case TextDelta:
		w.str("text", b.Text)
	case Message:
		w.str("text", b.Text)
	case Reasoning:
		w.str("text", b.Text)
	case ToolStarted:
		w.str("call_id", b.CallID)
		w.str("name", b.Name)
		w.str("kind", string(b.Kind))
		w.raw("input", b.Input)
	case ToolFinished:
		w.str("call_id", b.CallID)
		w.str("name", b.Name)
		w.str("kind", string(b.Kind))
		w.str("status", string(b.Status))
		w.str("output", b.Output)
		w.int("output_bytes", b.OutputBytes)
		w.bool("truncated", b.Truncated)
		w.intPtr("exit_code", b.ExitCode)
	case Usage:
		w.tokens("step", b.Step)
		w.tokens("total", b.Total)
		w.str("cost_source", string(b.CostSource))
		w.strPtr("model", b.Model)
	case Notice:
		w.str("kind", string(b.Kind))
		w.str("message", b.Message)
		if len(b.Data) > 0 {
			w.raw("data", b.Data)
		}
	default:
		return appendBodyReflect(dst, body)
	}
	return append(w.b, '}'), w.err
}

// appendBodyReflect is appendBody by encoding/json.
func appendBodyReflect(dst []byte, body Body) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return dst, err
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	if len(b) < 2 || b[0] != '{' {
		return dst, fmt.Errorf("body is not an object")
	}
	if len(b) == 2 {
		return append(dst, '}'), nil
	}
	return append(append(dst, ','), b[1:]...), nil
}

// fields appends `,"key":value` pairs as encoding/json writes them (no HTML
// escaping). The first error sticks.
type fields struct {
	b   []byte
	err error
}

func (w *fields) key(k string) {
	w.b = append(w.b, ',', '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

func (w *fields) str(k, v string) {
	w.key(k)
	w.b = appendString(w.b, v)
}

func (w *fields) strPtr(k string, v *string) {
	if v == nil {
		w.key(k)
		w.b = append(w.b, "null"...)
		return
	}
	w.str(k, *v)
}

func (w *fields) int(k string, v int64) {
	w.key(k)
	w.b = strconv.AppendInt(w.b, v, 10)
}

func (w *fields) intPtr(k string, v *int) {
	w.key(k)
	if v == nil {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = strconv.AppendInt(w.b, int64(*v), 10)
}

func (w *fields) bool(k string, v bool) {
	w.key(k)
	w.b = strconv.AppendBool(w.b, v)
}

// float writes v as encoding/json does (ES6 number formatting); NaN and
// infinities are an error, as there.
func (w *fields) float(k string, v *float64) {
	w.key(k)
	if v == nil {
		w.b = append(w.b, "null"...)
		return
	}
	f := *v
	if math.IsInf(f, 0) || math.IsNaN(f) {
		if w.err == nil {
			w.err = fmt.Errorf("json: unsupported value: %s", strconv.FormatFloat(f, 'g', -1, 64))
		}
		w.b = append(w.b, "null"...)
		return
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	w.b = strconv.AppendFloat(w.b, f, format, -1, 64)
	if n := len(w.b); format == 'e' && n >= 4 && w.b[n-4] == 'e' && w.b[n-3] == '-' && w.b[n-2] == '0' {
		w.b[n-2] = w.b[n-1] // e-09 → e-9
		w.b = w.b[:n-1]
	}
}

// raw writes a JSON value as encoding/json writes a json.RawMessage:
// compacted, null when nil, an error when invalid.
func (w *fields) raw(k string, v json.RawMessage) {
	w.key(k)
	if v == nil {
		w.b = append(w.b, "null"...)
		return
	}
	buf := bytes.NewBuffer(w.b)
	if err := json.Compact(buf, v); err != nil && w.err == nil {
		w.err = fmt.Errorf("json: error calling MarshalJSON for type json.RawMessage: %w", err)
	}
	w.b = buf.Bytes()
}

// tokens writes t as an object.
func (w *fields) tokens(k string, t Tokens) {
	w.key(k)
	open := len(w.b)
	inner := fields{b: w.b}
	inner.int("input_tokens", t.Input)
	inner.int("output_tokens", t.Output)
	inner.int("cache_read_tokens", t.CacheRead)
	inner.int("cache_write_tokens", t.CacheWrite)
	inner.int("reasoning_tokens", t.Reasoning)
	inner.float("cost_usd", t.CostUSD)
	inner.b[open] = '{' // the first field's comma
	w.b = append(inner.b, '}')
	if w.err == nil {
		w.err = inner.err
	}
}

// appendString appends s as a JSON string, as encoding/json does without
// HTML escaping: invalid UTF-8 becomes \ufffd, U+2028 and U+2029 are escaped.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none needs a look: ASCII, not a
		// control byte, '"' or '\\'.
		for i+8 <= len(s) && plain8(load64(s, i)) {
			i += 8
		}
		if i == len(s) {
			break
		}
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// load64 returns s[i:i+8] as a little-endian word (one load: the compiler
// combines these).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// plain8 reports whether each byte of w is ASCII, at least 0x20, and
// neither '"' nor '\\': one that appendString copies as it is. The tests
// are the exact "has a zero byte" and "has a byte less than n" word tricks
// (Hacker's Delight 6-1; Anderson's bit twiddling hacks).
func plain8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote, backslash := w^(ones*'"'), w^(ones*'\\')
	bad := w | // a byte >= 0x80
		(w-ones*0x20)&^w | // a byte < 0x20
		(quote-ones)&^quote |
		(backslash-ones)&^backslash
	return bad&highs == 0
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
