// Package framer splits an agent's stdout into lines with a hard cap on line
// length, so that one giant line (a whole file or a base64 image in a tool
// result) costs at most the cap in memory and never ends the run.
//
// It owns framing only: it does not decode JSON or strip escape sequences.
package framer

import (
	"bufio"
	"errors"
	"io"
)

// DefaultMaxLine is the default line cap: 64 MiB.
const DefaultMaxLine = 64 << 20

// HeadBytes is how much of an over-long line Line.Bytes keeps (its start), so
// that a caller can still recognize what the line was.
const HeadBytes = 64 << 10

// Line is one line of input without its "\n" (and without a "\r" before it).
type Line struct {
	// Bytes is the line. For a line over the cap it is only the line's first
	// HeadBytes bytes. It is valid until the next call to Next.
	Bytes []byte
	// Size is the length of the whole line in bytes, without the newline.
	Size int64
	// TooLong reports that Size exceeded the cap and the rest was skipped.
	TooLong bool
}

// Framer reads lines from an io.Reader. It is not safe for concurrent use.
type Framer struct {
	r   *bufio.Reader
	max int
	buf []byte
}

// New returns a Framer reading r with a line cap of maxLine bytes
// (DefaultMaxLine when maxLine <= 0).
func New(r io.Reader, maxLine int) *Framer {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	size := 64 << 10
	if maxLine < size {
		size = max(maxLine, 16)
	}
	return &Framer{r: bufio.NewReaderSize(r, size), max: maxLine}
}

// Next returns the next line. A last line without a final newline is still
// returned; after it Next returns io.EOF. A line longer than the cap is
// returned with TooLong set, Bytes holding its start, and reading resumes
// after its newline. Any other read error is returned as is, after the bytes
// read before it have been returned as a line.
func (f *Framer) Next() (Line, error) {
	if cap(f.buf) > keepBuf {
		f.buf = nil // a giant line's buffer: give it back
	}
	f.buf = f.buf[:0]
	var size int64 // bytes of the line so far, without its newline
	tooLong := false
	for {
		chunk, err := f.r.ReadSlice('\n')
		nl := err == nil // chunk ends with the line's newline
		content := chunk
		if nl {
			content = chunk[:len(chunk)-1]
		}
		if nl && size == 0 && len(content) <= f.max {
			// Fast path: the whole line is in the buffer; no copy.
			return trimCR(content, int64(len(content)), false), nil
		}
		size += int64(len(content))
		if !tooLong {
			if size > int64(f.max) {
				tooLong = true
				// Keep the head in a buffer of its own: the line's big
				// one is garbage from here on, while the rest streams by.
				f.buf = append(make([]byte, 0, HeadBytes), f.buf[:min(len(f.buf), HeadBytes)]...)
				if n := HeadBytes - len(f.buf); n > 0 {
					f.buf = append(f.buf, content[:min(n, len(content))]...)
				}
			} else {
				f.buf = f.grow(len(content))
				f.buf = append(f.buf, content...)
			}
		}
		switch {
		case nl:
			return trimCR(f.buf, size, tooLong), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case size == 0:
			return Line{}, err
		default:
			// EOF or a read error after a partial line: return the line
			// now and the error on the next call.
			if !errors.Is(err, io.EOF) {
				f.r = bufio.NewReader(errReader{err})
			}
			return trimCR(f.buf, size, tooLong), nil
		}
	}
}

// trimCR drops the "\r" of a "\r\n" ending.
// keepBuf is the largest line buffer kept from one line to the next; a
// larger one (a giant line's) is dropped for the garbage collector.
const keepBuf = 1 << 20

// grow returns f.buf with room for n more bytes. It doubles the capacity
// (never past the line cap plus the chunk), so reading a line of size s
// allocates under 2s in all: append's own growth for large slices (1.25×)
// allocates about 5s on the way, and a 64 MiB line then took 4–5 × the cap
// of resident memory.
func (f *Framer) grow(n int) []byte {
	if cap(f.buf)-len(f.buf) >= n {
		return f.buf
	}
	c := max(2*cap(f.buf), len(f.buf)+n, 4096)
	c = min(c, max(f.max, len(f.buf)+n))
	b := make([]byte, len(f.buf), c)
	copy(b, f.buf)
	return b
}

func trimCR(b []byte, size int64, tooLong bool) Line {
	if !tooLong && len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
		size--
	}
	return Line{Bytes: b, Size: size, TooLong: tooLong}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
