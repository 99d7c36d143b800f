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
		if isOverwrite(line[i:j]) {
			out = out[:0] // erase the line, or back to its start: a spinner
		}
		i = j
	}
	return afterCR(out)
}

// Pieces splits line where a terminal writes over what came before it — at
// each carriage return, erase-line (ESC[2K) and move to column 1 (ESC[G,
// ESC[0G, ESC[1G) — and appends the pieces to dst, each cleaned as Clean
// cleans (no escape sequences, no surrounding ASCII whitespace or NULs; a
// byte order mark only at the start of line), leaving out empty ones.
// shown is the index in the result of the piece a terminal would end up
// showing, which is what Clean(line) returns: the last piece, unless an
// erase-line or move to column 1 comes after it (then shown is -1, and
// Clean returns nothing).
//
// A JSON text holds no raw carriage return or ESC byte (JSON escapes them
// in strings), so a JSON record is never split: records that a stream
// separates with a bare "\r", or a spinner with an erase, are each a piece
// of their own. Pieces are subslices of line when it has no escape to
// remove, else of one new slice.
func Pieces(dst [][]byte, line []byte) (pieces [][]byte, shown int) {
	line = bytes.TrimPrefix(line, bom)
	shown = -1
	add := func(p []byte) {
		if p = bytes.Trim(p, pieceSpace); len(p) > 0 {
			dst = append(dst, p)
			shown = len(dst) - 1
		}
	}
	if bytes.IndexByte(line, 0x1b) < 0 {
		for {
			i := bytes.IndexByte(line, '\r')
			if i < 0 {
				add(line)
				return dst, shown
			}
			add(line[:i])
			line = line[i+1:]
		}
	}
	out := make([]byte, 0, len(line)) // never grows: pieces share it
	start := 0
	for i := 0; i < len(line); {
		switch c := line[i]; c {
		case '\r':
			add(out[start:])
			start = len(out)
			i++
		case 0x1b:
			j := skipEscape(line, i)
			if isOverwrite(line[i:j]) {
				add(out[start:])
				start = len(out)
				shown = -1 // erased, or to be written over: not shown
			}
			i = j
		default:
			out = append(out, c)
			i++
		}
	}
	add(out[start:])
	return dst, shown
}

// pieceSpace is what Pieces trims around a piece, as Clean trims what it
// keeps after a carriage return.
const pieceSpace = " \t\v\f\x00"

// isOverwrite reports whether seq is an erase-line or a move to column 1,
// after which a terminal writes over the line (see Clean).
func isOverwrite(seq []byte) bool {
	s := string(seq)
	return s == "\x1b[2K" || s == "\x1b[G" || s == "\x1b[0G" || s == "\x1b[1G"
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

// CleanText is Clean for human text (stderr tails): it strips escapes,
// carriage returns and the other C0 controls but tab (BEL, NUL, backspace,
// shift-in/out) and DEL, but keeps line structure; a line of nothing else
// is dropped.
func CleanText(s string) string {
	b := []byte(s)
	var out []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimRight(Clean(line), "\r")
		line = bytes.Map(func(r rune) rune {
			if r < 0x20 && r != '\t' || r == 0x7f {
				return -1
			}
			return r
		}, line)
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, line...)
	}
	return string(out)
}
