package normalize

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"
)

// This file holds the few JSON helpers on the hot path that gjson makes
// slow for the lines agents write most bytes in: tool results of up to
// megabytes in one string. gjson skips a string value byte by byte each
// time a Get passes it and unescapes all of it for String(); these skip
// strings with strings.IndexByte, read several fields in one pass, and
// unescape only the part of an output that an event carries. They give
// the same answers as gjson (see json_test.go).

// View returns line as a string without copying it, so that a decoder can
// read its largest lines (megabytes of tool output) in place. Nothing taken
// from the view may outlive the Decode call: the decoder copies
// (strings.Clone) what its events and its own state keep. Each decoder's
// tests check that with internal/benchgen.CheckLineNotKept.
func View(line []byte) string { return unsafe.String(unsafe.SliceData(line), len(line)) }

// Valid reports whether line is one valid JSON value, with the same answer
// as gjson.ValidBytes (which, like this, does not check that strings are
// valid UTF-8), reading strings 64 bytes at a time (see scanString).
func Valid(line []byte) bool { return (*Index)(nil).Valid(line) }

// Index is what checking one line learned of its long strings (of at least
// longString bytes): where each ends, its unescaped length and whether it
// has escapes, so that a decoder reading the line in place skips them and
// sizes them without reading them again. The runner checks each line with
// Index.Valid and hands the same Index to the decoder (see Indexed); the
// Index methods give the same answers as the package functions of the same
// names, which are those of a nil *Index (they read everything). An Index
// answers only for the line it last checked (Valid), and only for strings
// of that line in place (a View of it); anything else is read.
type Index struct {
	base uintptr // address of the line's first byte
	size int     // its length
	strs []span  // its long strings, in order
}

// span is one long string of a line: start is the index of its opening
// quote, end the index after its closing one, n its unescaped length.
type span struct {
	start, end, n int
	esc           bool
}

// longString is the shortest string content an Index records: shorter ones
// cost little to read again.
const longString = 256

// Reset makes x answer for no line.
func (x *Index) Reset() {
	if x != nil {
		x.base, x.size, x.strs = 0, 0, x.strs[:0]
	}
}

// Valid is the package function Valid; on a non-nil x it records line's
// long strings for the lookups that follow.
func (x *Index) Valid(line []byte) bool {
	x.Reset()
	if x != nil && len(line) > 0 {
		x.base, x.size = uintptr(unsafe.Pointer(unsafe.SliceData(line))), len(line)
	}
	i := skipSpace(line, 0)
	i, ok := x.validValue(line, i, 0)
	if ok = ok && skipSpace(line, i) == len(line); !ok {
		x.Reset()
	}
	return ok
}

// lookup returns the long string whose opening quote is s[i], when s is a
// part of the line x last checked.
func (x *Index) lookup(s string, i int) (span, bool) {
	if x == nil || len(x.strs) == 0 {
		return span{}, false
	}
	off := int(uintptr(unsafe.Pointer(unsafe.StringData(s))) - x.base)
	if off < 0 || off+len(s) > x.size || off > x.size {
		return span{}, false
	}
	at := off + i
	lo, hi := 0, len(x.strs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if x.strs[m].start < at {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(x.strs) && x.strs[lo].start == at {
		sp := x.strs[lo]
		sp.start, sp.end = sp.start-off, sp.end-off
		return sp, true
	}
	return span{}, false
}

// maxDepth bounds nesting so that a hostile line cannot exhaust the stack.
// gjson.ValidBytes has no bound; agents never nest this deep.
const maxDepth = 10000

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// validValue checks the value starting at b[i] and returns the index after it.
func (x *Index) validValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) || depth > maxDepth {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		return x.validContainer(b, i+1, '}', depth)
	case c == '[':
		return x.validContainer(b, i+1, ']', depth)
	case c == '"':
		return x.validString(b, i+1)
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(b, i)
	case c == 't':
		return validWord(b, i, "true")
	case c == 'f':
		return validWord(b, i, "false")
	case c == 'n':
		return validWord(b, i, "null")
	}
	return i, false
}

// validContainer checks the members of an object (end '}') or the elements
// of an array (end ']') after the opening bracket.
func (x *Index) validContainer(b []byte, i int, end byte, depth int) (int, bool) {
	i = skipSpace(b, i)
	if i < len(b) && b[i] == end {
		return i + 1, true
	}
	for {
		var ok bool
		if end == '}' {
			if i >= len(b) || b[i] != '"' {
				return i, false
			}
			if i, ok = x.validString(b, i+1); !ok {
				return i, false
			}
			i = skipSpace(b, i)
			if i >= len(b) || b[i] != ':' {
				return i, false
			}
			i = skipSpace(b, i+1)
		}
		if i, ok = x.validValue(b, i, depth+1); !ok {
			return i, false
		}
		i = skipSpace(b, i)
		switch {
		case i >= len(b):
			return i, false
		case b[i] == end:
			return i + 1, true
		case b[i] != ',':
			return i, false
		}
		i = skipSpace(b, i+1)
	}
}

// plain marks the bytes a string can hold as they are: not '"', '\\' or a
// control character.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// validString checks a string's content and closing quote from b[i], and
// records it when it is long.
func (x *Index) validString(b []byte, i int) (int, bool) {
	end, n, esc, ok := scanString(b, i)
	if ok && x != nil && end-i > longString {
		x.strs = append(x.strs, span{start: i - 1, end: end, n: n, esc: esc})
	}
	return end, ok
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func validNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return i, false
		}
	}
	return i, true
}

func validWord(b []byte, i int, w string) (int, bool) {
	if len(b)-i >= len(w) && string(b[i:i+len(w)]) == w {
		return i + len(w), true
	}
	return i, false
}

// Fields returns the raw JSON text of the values of up to eight keys of the
// JSON object obj ("" for a key it does not have; the first member of a
// name wins, as with gjson.Get), reading obj once. Parse a small value with
// gjson.Parse; cut a large string with CutString. obj must be valid JSON
// (the runner checked the line); anything but an object gives no values.
func Fields(obj string, keys ...string) [8]string { return (*Index)(nil).Fields(obj, keys...) }

// Fields is the package function Fields, which skips the long strings of
// the line x checked without reading them.
func (x *Index) Fields(obj string, keys ...string) (vals [8]string) {
	keys = keys[:min(len(keys), len(vals))]
	i := skipSpaceStr(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return vals
	}
	missing := len(keys)
	for i++; missing > 0; {
		i = skipSpaceStr(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return vals // '}' or malformed
		}
		end := x.skipString(obj, i+1)
		key := obj[i+1 : max(end-1, i+1)]
		if strings.IndexByte(key, '\\') >= 0 {
			key = gjson.Parse(obj[i:end]).Str
		}
		i = skipSpaceStr(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return vals
		}
		i = skipSpaceStr(obj, i+1)
		end = x.skipValue(obj, i)
		for k, want := range keys {
			if key == want && vals[k] == "" {
				vals[k] = obj[i:end]
				missing--
			}
		}
		i = skipSpaceStr(obj, end)
		if i >= len(obj) || obj[i] != ',' {
			return vals
		}
		i++
	}
	return vals
}

// Elements returns the raw JSON text of each element of the JSON array arr,
// reading it once (as gjson.Result.Array, without parsing the elements).
// arr must be valid JSON; anything but an array gives none.
func Elements(arr string) []string { return (*Index)(nil).Elements(arr) }

// Elements is the package function Elements, which skips the long strings
// of the line x checked without reading them.
func (x *Index) Elements(arr string) []string {
	i := skipSpaceStr(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return nil
	}
	var out []string
	for i = skipSpaceStr(arr, i+1); i < len(arr) && arr[i] != ']'; {
		end := x.skipValue(arr, i)
		out = append(out, arr[i:end])
		i = skipSpaceStr(arr, end)
		if i >= len(arr) || arr[i] != ',' {
			break
		}
		i = skipSpaceStr(arr, i+1)
	}
	return out
}

func skipSpaceStr(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the closing quote of the string whose
// content starts at s[i] (len(s) if it has none).
func (x *Index) skipString(s string, i int) int {
	if sp, ok := x.lookup(s, i-1); ok {
		return sp.end
	}
	for {
		j := strings.IndexByte(s[i:], '"')
		if j < 0 {
			return len(s)
		}
		i += j
		k := i
		for k > 0 && s[k-1] == '\\' {
			k--
		}
		i++
		if (i-1-k)%2 == 0 { // not escaped
			return i
		}
	}
}

// skipValue returns the index after the value starting at s[i].
func (x *Index) skipValue(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		return x.skipString(s, i+1)
	case '{', '[':
		depth := 0
		for ; i < len(s); i++ {
			switch s[i] {
			case '"':
				i = x.skipString(s, i+1) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(s) && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
		i++
	}
	return i
}

// CutString is CutOutput of the JSON value raw read as a string (as gjson's
// String() reads it), without unescaping more of a long string than the cut
// keeps: size is counted from the escapes. raw is the value's JSON text, as
// Fields or gjson.Result.Raw give it; a value that is not a string is read
// as gjson reads it.
func CutString(raw string, capBytes int) (out string, size int64, truncated bool) {
	return (*Index)(nil).CutString(raw, capBytes)
}

// CutString is the package function CutString, which takes the size of a
// long string of the line x checked from x instead of reading the string.
func (x *Index) CutString(raw string, capBytes int) (out string, size int64, truncated bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return CutOutput(gjson.Parse(raw).String(), capBytes)
	}
	body := raw[1 : len(raw)-1]
	// The end, validity and unescaped size: from the Index, or from one
	// wide scan.
	sp, ok := x.lookup(raw, 0)
	if !ok || sp.end != len(raw) {
		sp.end, sp.n, sp.esc, ok = scanString(unsafe.Slice(unsafe.StringData(raw), len(raw)), 1)
	}
	switch {
	case !ok || sp.end != len(raw):
		return CutOutput(gjson.Parse(raw).String(), capBytes) // not one valid string: as gjson reads it
	case !sp.esc:
		return CutOutput(body, capBytes)
	case sp.n <= capBytes:
		return unescape(body, sp.n), int64(sp.n), false
	}
	k := cutAt(body, capBytes)
	out, _, _ = CutOutput(unescape(body[:k], capBytes+12), capBytes)
	return out, int64(sp.n), true
}

// unescape returns body, the content of a valid JSON string (scanString's
// check passed), unescaped as gjson's String() unescapes it: a \u escape of
// a lone surrogate becomes U+FFFD, other bytes are copied as they are. n
// is the room to allocate (the unescaped size when known). The runs
// between escapes are copied whole, not byte by byte as gjson does.
func unescape(body string, n int) string {
	b := make([]byte, 0, n)
	for {
		j := strings.IndexByte(body, '\\')
		if j < 0 || j+1 >= len(body) {
			b = append(b, body...)
			break
		}
		b = append(b, body[:j]...)
		c := body[j+1]
		w := 2
		switch c {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hexRune(body[j+2 : j+6])
			w = 6
			if r >= 0xD800 && r < 0xDC00 && len(body) >= j+12 && body[j+6] == '\\' && body[j+7] == 'u' {
				if r2 := hexRune(body[j+8 : j+12]); r2 >= 0xDC00 && r2 < 0xE000 {
					r, w = utf16.DecodeRune(r, r2), 12
				}
			}
			b = utf8.AppendRune(b, r) // a surrogate is written as U+FFFD
		default: // " \\ /
			b = append(b, c)
		}
		body = body[j+w:]
	}
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// cutAt returns where in body (a JSON string's content, which unescapes to
// more than capBytes bytes) the first capBytes+1 unescaped bytes end, as
// CutString's count finds it, reading only those.
func cutAt(body string, capBytes int) int {
	n := 0
	for i := 0; i < len(body); {
		j := strings.IndexByte(body[i:], '\\')
		if j < 0 {
			j = len(body) - i
		}
		if n+j > capBytes {
			return i + (capBytes + 1 - n)
		}
		n += j
		i += j
		if i == len(body) {
			break
		}
		w, l := escapeLen(body[i:])
		i += w
		n += l
		if n > capBytes {
			return i
		}
	}
	return len(body)
}

// escapeLen reads the escape at the start of s (s[0] == '\\') as gjson
// unescapes it: w bytes of JSON that give l bytes of UTF-8.
func escapeLen(s string) (w, l int) {
	if len(s) < 6 || s[1] != 'u' {
		return min(2, len(s)), 1
	}
	r := hexRune(s[2:6])
	if r >= 0xD800 && r < 0xDC00 && len(s) >= 12 && s[6] == '\\' && s[7] == 'u' {
		if r2 := hexRune(s[8:12]); r2 >= 0xDC00 && r2 < 0xE000 {
			return 12, 4
		}
	}
	if l = utf8.RuneLen(r); l < 0 {
		l = 3 // a lone surrogate becomes U+FFFD
	}
	return 6, l
}

func hexRune(s string) rune {
	var r rune
	for i := range len(s) {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0
		}
		r = r<<4 | rune(c)
	}
	return r
}
