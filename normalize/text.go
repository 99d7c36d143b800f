package normalize

import (
	"strings"
	"unicode/utf8"
)

// DefaultOutputCap is how many bytes of a tool's output a tool.finished event
// carries: 16 KiB. OutputBytes always gives the full size.
const DefaultOutputCap = 16 << 10

// CutOutput cuts s to at most capBytes bytes without splitting a UTF-8
// character, and reports the original size and whether it was cut.
func CutOutput(s string, capBytes int) (out string, size int64, truncated bool) {
	if len(s) <= capBytes {
		return s, int64(len(s)), false
	}
	n := capBytes
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], int64(len(s)), true
}

// LastLine returns the last non-empty line of s, trimmed; "" if none.
func LastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	return s
}

// Shorten returns s cut to at most n bytes (on a character boundary) with "…"
// appended when cut. It keeps error messages readable.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	out, _, _ := CutOutput(s, n)
	return out + "…"
}

// ContainsFold reports whether s contains any of subs, ignoring ASCII case.
func ContainsFold(s string, subs ...string) bool {
	ls := strings.ToLower(s)
	for _, sub := range subs {
		if strings.Contains(ls, strings.ToLower(sub)) {
			return true
		}
	}
	return false
}

// Suffix is ": "+s, or "" when s is "": the tail of a message that adds
// what the agent said last, when it said anything.
func Suffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// LastLines returns the last three lines of s (trimmed) joined with " | ",
// at most 600 bytes (JoinLines): the end of an agent's stderr, for a
// message.
func LastLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return JoinLines(lines, 600)
}
