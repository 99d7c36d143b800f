// Package framer splits an agent's stdout into lines with a hard cap on line
// length, so that one giant line (a whole file or a base64 image in a tool
// result) costs at most the cap in memory and never ends the run.
//
// It owns framing only: it does not decode JSON or strip escape sequences.
package framer

import (
	"bytes"
	"errors"
	"io"
	"math"
	"runtime/debug"
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

// The line buffer's sizes, in bytes.
const (
	// bufSize is a new Framer's buffer, and what a grown one shrinks back to.
	bufSize = 256 << 10
	// minRead is the least free space a read is given: a read gets all the
	// free space after the buffered bytes, never less than this.
	minRead = 64 << 10
	// shrinkAbove: a buffer up to this size is kept whatever the lines.
	// Lines of up to 3 MiB grow a buffer to at most this (see Framer.fill):
	// agents' largest tool outputs, which Claude Code writes twice a line.
	shrinkAbove = 8 << 20
)

// The shrink rule: a buffer over shrinkAbove that is at least shrinkRatio
// times larger than every line of the last shrinkWindow to 2 × shrinkWindow
// lines (see Framer.note) is replaced by one of bufSize the next time the
// Framer reads, if the partial line it holds fits in it. So a giant line's
// buffer (up to the cap plus a read) goes after at most 2 × shrinkWindow
// short lines instead of staying resident, while a run of lines of size s
// keeps the buffer they grew (under 10s/3: see Framer.fill).
//
// Smaller buffers are kept: with the rule from 1 MiB, a buffer shrunk after
// each turn without a large tool output grew again at the next one, and
// `hub replay` of a generated 1 GiB Claude Code transcript took 30% more
// peak RSS (the regrown buffers' garbage) than with buffers kept.
const (
	shrinkWindow = 64
	shrinkRatio  = 4
)

// maxEmptyReads is how many reads in a row may return no bytes and no error
// before Next gives up with io.ErrNoProgress (as bufio does).
const maxEmptyReads = 100

// errBadCount is returned when the reader reports more bytes than it was
// given room for, or a negative count.
var errBadCount = errors.New("framer: reader returned an invalid count")

// Framer reads lines from an io.Reader. It is not safe for concurrent use.
//
// It reads straight into one buffer and returns each line as a part of it,
// without copying. buf[start:end] are the bytes read and not yet returned;
// buf[start:scan] holds no '\n' (searched already). When a partial line
// reaches the end of buf, it is moved to the front, or, when it fills more
// than 3/4 of buf, buf is doubled (up to limit). A line over the cap is
// skipped through buf, keeping only its head at the front.
type Framer struct {
	r     io.Reader
	max   int
	buf   []byte
	start int
	scan  int
	end   int
	// err is the reader's error, returned once the bytes before it have been.
	err error

	sz    sizes
	limit int // the largest buffer: max + sz.read

	// The shrink rule's memory: the largest line of the current window of
	// shrinkWindow lines (winN so far) and of the window before it.
	winMax, prevMax int64
	winN            int
}

// sizes are a Framer's buffer sizes and shrink rule: the constants above,
// smaller in this package's tests so that small inputs move, grow and
// shrink the buffer. They need buf >= 4*read and buf >= head+read.
type sizes struct {
	buf, read, head, shrinkAbove, window int
}

var defaultSizes = sizes{bufSize, minRead, HeadBytes, shrinkAbove, shrinkWindow}

// New returns a Framer reading r with a line cap of maxLine bytes
// (DefaultMaxLine when maxLine <= 0).
func New(r io.Reader, maxLine int) *Framer { return newSized(r, maxLine, defaultSizes) }

func newSized(r io.Reader, maxLine int, sz sizes) *Framer {
	if maxLine <= 0 {
		maxLine = DefaultMaxLine
	}
	limit := maxLine + sz.read
	if limit < maxLine { // overflow: no cap in effect
		limit = math.MaxInt
	}
	return &Framer{r: r, max: maxLine, buf: make([]byte, sz.buf), sz: sz, limit: max(limit, sz.buf)}
}

// Next returns the next line. A last line without a final newline is still
// returned; after it Next returns io.EOF. A line longer than the cap is
// returned with TooLong set, Bytes holding its start, and reading resumes
// after its newline. Any other read error is returned as is, after the bytes
// read before it have been returned as a line. An error is returned once:
// the call after it reads again.
//
// Next reads only when the bytes it holds have no complete line, so it
// blocks only when the reader has nothing more for a line yet.
func (f *Framer) Next() (Line, error) {
	for {
		if i := bytes.IndexByte(f.buf[f.scan:f.end], '\n'); i >= 0 {
			nl := f.scan + i
			b := f.buf[f.start:nl]
			f.start, f.scan = nl+1, nl+1
			return f.line(b), nil
		}
		f.scan = f.end
		if f.err != nil {
			if f.start < f.end { // a last line without its newline
				b := f.buf[f.start:f.end]
				f.start, f.scan = f.end, f.end
				return f.line(b), nil
			}
			err := f.err
			f.err = nil
			return Line{}, err
		}
		if f.end-f.start > f.max {
			return f.skip(), nil
		}
		f.fill()
	}
}

// line returns b, one whole line, as a Line.
func (f *Framer) line(b []byte) Line {
	size := int64(len(b))
	f.note(size)
	if len(b) > f.max {
		h := min(len(b), f.sz.head)
		return Line{Bytes: b[:h:h], Size: size, TooLong: true}
	}
	if len(b) > 0 && b[len(b)-1] == '\r' {
		b = b[:len(b)-1]
	}
	// The capacity is cut at the line, so that a caller's append cannot
	// write over the bytes after it.
	return Line{Bytes: b[:len(b):len(b)], Size: int64(len(b))}
}

// note records a line of size bytes for the shrink rule.
func (f *Framer) note(size int64) {
	f.winMax = max(f.winMax, size)
	if f.winN++; f.winN == f.sz.window {
		f.prevMax, f.winMax, f.winN = f.winMax, 0, 0
	}
}

// fill makes room after the buffered bytes (at least f.sz.read) and reads once
// into all of it, setting f.err on an error.
func (f *Framer) fill() {
	if f.start == f.end {
		f.start, f.scan, f.end = 0, 0, 0
	}
	part := f.end - f.start // a partial line: no '\n' in it, at most f.max
	switch {
	case len(f.buf) > f.sz.shrinkAbove && part+f.sz.read <= f.sz.buf &&
		int64(len(f.buf)) >= shrinkRatio*max(f.winMax, f.prevMax):
		giant := len(f.buf) > shrinkAbove
		f.move(make([]byte, f.sz.buf))
		if giant {
			// The old buffer goes back to the system now, not at the
			// next collection: once warm, a run allocates so little
			// that none comes for minutes (the runtime forces one every
			// two), and a giant line's buffer stayed resident until then.
			debug.FreeOSMemory()
		}
	case len(f.buf)-f.end >= f.sz.read:
	case part <= len(f.buf)/4*3 || len(f.buf) >= f.limit:
		// To the front: at most once per line, as after it only the line
		// is in buf, and it is moved again only when it fills all but
		// f.sz.read of buf. At the limit there is room for a read after a
		// line of up to the cap.
		f.move(f.buf)
	default:
		// Double: growing to s copies under s bytes in all. The last
		// step goes straight to the limit, not to just under it and then
		// the limit: two buffers of about the cap (64 MiB) allocated in
		// turn took 217 MB of peak RSS for a 200 MB line instead of 143.
		// The line fills over 3/4 of buf, so a line of size s grows buf
		// to under 10s/3: under shrinkRatio × s, so a run of such lines
		// keeps their buffer.
		n := 2 * len(f.buf)
		if f.limit-n < n/4 {
			n = f.limit
		}
		f.move(make([]byte, n))
	}
	n, err := f.fill1(f.buf[f.end:])
	f.end += n
	f.err = err
}

// move moves the buffered bytes to the front of b and makes b the buffer.
func (f *Framer) move(b []byte) {
	n := copy(b, f.buf[f.start:f.end])
	f.buf = b
	f.scan -= f.start
	f.start, f.end = 0, n
}

// fill1 reads into p once, retrying a read that returns nothing.
func (f *Framer) fill1(p []byte) (int, error) {
	for range maxEmptyReads {
		n, err := f.r.Read(p)
		if n < 0 || n > len(p) {
			return 0, errBadCount
		}
		if n > 0 || err != nil {
			return n, err
		}
	}
	return 0, io.ErrNoProgress
}

// skip returns the over-long line held in f.buf[f.start:f.end] (with no
// '\n'), reading and dropping the rest of it: its head is moved to the front
// of f.buf and the rest is read through the space after it.
func (f *Framer) skip() Line {
	size := int64(f.end - f.start)
	h := min(f.end-f.start, f.sz.head)
	copy(f.buf, f.buf[f.start:f.start+h])
	f.start, f.scan, f.end = 0, 0, 0
	for {
		off := h
		n, err := f.fill1(f.buf[off:])
		c := n // bytes of the line read
		i := bytes.IndexByte(f.buf[off:off+n], '\n')
		if i >= 0 {
			c = i
		}
		size += int64(c)
		h += min(f.sz.head-h, c) // a short head grows in place: these follow it
		if i >= 0 || err != nil {
			if i >= 0 {
				f.start, f.scan, f.end = off+i+1, off+i+1, off+n
			}
			f.err = err
			f.note(size)
			return Line{Bytes: f.buf[:h:h], Size: size, TooLong: true}
		}
	}
}
