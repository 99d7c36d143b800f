package normalize

import "bytes"

var bom = []byte("\xef\xbb\xbf")

// Clean returns line without a leading UTF-8 byte order mark, ANSI escape
// sequences (CSI such as colours and cursor moves, OSC such as titles and
// links, and two-byte ESC sequences), surrounding ASCII whitespace and NUL
// bytes, and whatever a carriage return, an erase-line (ESC[2K) or a move to
// column 1 (ESC[G) inside it overwrites on a terminal (a spinner:
// "Thinking...\r{...}" is "{...}"). It returns a subslice of
// line when there is no escape to remove, else a new slice. Agents print
// these on stdout when they think a terminal is attached.
func Clean(line []byte) []byte {
	line = bytes.TrimPrefix(line, bom)
	if bytes.IndexByte(line, 0x1b) < 0 {
		return afterCR(line)
	}
	out := make([]byte, 0, len(line))
	for i := 0; i < len(line); {
		c := line[i]
		if c != 0x1b {
			out = append(out, c)
			i++
			continue
		}
		j := skipEscape(line, i)
		if seq := string(line[i:j]); seq == "\x1b[2K" || seq == "\x1b[G" || seq == "\x1b[0G" || seq == "\x1b[1G" {
			out = out[:0] // erase the line, or back to its start: a spinner
		}
		i = j
	}
	return afterCR(out)
}

// afterCR trims b and keeps what follows its last carriage return, if
// anything does.
func afterCR(b []byte) []byte {
	b = bytes.Trim(b, " \t\r\n\v\f\x00")
	if i := bytes.LastIndexByte(b, '\r'); i >= 0 {
		b = bytes.Trim(b[i+1:], " \t\v\f\x00")
	}
	return b
}

// skipEscape returns the index just past the escape sequence starting at
// line[i] == ESC. An unterminated sequence runs to the end of the line.
func skipEscape(line []byte, i int) int {
	if i+1 >= len(line) {
		return len(line)
	}
	switch line[i+1] {
	case '[': // CSI: parameters and intermediates, then a final byte 0x40–0x7e
		for j := i + 2; j < len(line); j++ {
			if line[j] >= 0x40 && line[j] <= 0x7e {
				return j + 1
			}
		}
		return len(line)
	case ']', 'P', '_', '^': // OSC, DCS, APC, PM: until BEL or ESC \
		for j := i + 2; j < len(line); j++ {
			if line[j] == 0x07 {
				return j + 1
			}
			if line[j] == 0x1b && j+1 < len(line) && line[j+1] == '\\' {
				return j + 2
			}
		}
		return len(line)
	default: // two-byte sequence such as ESC 7, ESC =
		return i + 2
	}
}

// CleanText is Clean for human text (stderr tails): it strips escapes and
// carriage returns but keeps line structure.
func CleanText(s string) string {
	b := []byte(s)
	var out []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimRight(Clean(line), "\r")
		if len(line) == 0 {
			continue
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, line...)
	}
	return string(out)
}
