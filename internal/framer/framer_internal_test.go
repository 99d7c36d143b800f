package framer

import (
	"bytes"
	"errors"
	"io"
	"math"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"testing/iotest"
)

// want is what Next should return for data with a line cap of max and a
// head of head bytes: data split at each '\n', "\r\n" endings trimmed.
func want(data []byte, max, head int) []Line {
	var out []Line
	for len(data) > 0 {
		l, rest, _ := bytes.Cut(data, []byte("\n"))
		data = rest
		if len(l) > max {
			out = append(out, Line{Bytes: l[:min(len(l), head)], Size: int64(len(l)), TooLong: true})
			continue
		}
		l = bytes.TrimSuffix(l, []byte("\r"))
		out = append(out, Line{Bytes: l, Size: int64(len(l))})
	}
	return out
}

// check reads f to its end and compares its lines with want; it also checks
// that each line is a part of the buffer (no copy) and that the buffer
// stays within its limit.
func check(t *testing.T, f *Framer, want []Line) {
	t.Helper()
	for i := 0; ; i++ {
		l, err := f.Next()
		if len(f.buf) > f.limit {
			t.Fatalf("len(buf) = %d, want at most %d", len(f.buf), f.limit)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("Next() error %v", err)
			}
			if i != len(want) {
				t.Fatalf("%d lines, want %d", i, len(want))
			}
			return
		}
		if i >= len(want) {
			t.Fatalf("line %d = %.40q, want none", i, l.Bytes)
		}
		w := want[i]
		if !bytes.Equal(l.Bytes, w.Bytes) || l.Size != w.Size || l.TooLong != w.TooLong {
			t.Fatalf("line %d = %.40q %d %v, want %.40q %d %v", i, l.Bytes, l.Size, l.TooLong, w.Bytes, w.Size, w.TooLong)
		}
		if len(l.Bytes) > 0 && !inBuf(f, l.Bytes) {
			t.Fatalf("line %d is not in the buffer: copied", i)
		}
	}
}

func inBuf(f *Framer, b []byte) bool {
	buf := f.buf[:cap(f.buf)]
	for i := range buf {
		if &buf[i] == &b[0] {
			return i+len(b) <= len(buf)
		}
	}
	return false
}

// tiny sizes: a few bytes of input move, grow, skip and shrink the buffer.
var tiny = sizes{buf: 64, read: 16, head: 8, shrinkAbove: 64, window: 4}

// FuzzSmallBuffer frames data through a tiny buffer, with reads of the
// sizes in reads (0: all the room given), against want.
func FuzzSmallBuffer(f *testing.F) {
	f.Add([]byte("a\nb\r\n{\"x\":1}\nlast"), []byte{3}, uint8(16))
	f.Add(bytes.Repeat([]byte("0123456789\n"), 40), []byte{1, 0, 7}, uint8(100))
	f.Add([]byte(strings.Repeat("q", 300)+"\nshort\n"+strings.Repeat("r", 90)+"\r\n\n\nend"), []byte{0}, uint8(50))
	f.Add([]byte(strings.Repeat("a", 200)+"\n"+strings.Repeat("b\n", 20)), []byte{5, 60}, uint8(255))
	f.Fuzz(func(t *testing.T, data, reads []byte, max uint8) {
		m := int(max)%120 + 1
		fr := newSized(&sizedReader{data: data, sizes: reads}, m, tiny)
		check(t, fr, want(data, m, tiny.head))
	})
}

// sizedReader returns data in reads of the sizes in sizes, in turn; a size
// of 0 is all the room given.
type sizedReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (r *sizedReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := len(p)
	if len(r.sizes) > 0 {
		if s := int(r.sizes[r.i%len(r.sizes)]); s > 0 {
			n = min(n, s)
		}
		r.i++
	}
	n = copy(p, r.data[:min(n, len(r.data))])
	r.data = r.data[n:]
	return n, nil
}

// TestNoCap: a cap of math.MaxInt (no cap) does not overflow the limit.
func TestNoCap(t *testing.T) {
	t.Parallel()
	in := strings.Repeat("x", 300<<10) + "\nok"
	f := New(strings.NewReader(in), math.MaxInt)
	check(t, f, want([]byte(in), math.MaxInt, HeadBytes))
}

// TestShrink: a giant line grows the buffer; a run of short lines after it
// gives it back (the shrink rule), but not before the window has passed.
func TestShrink(t *testing.T) {
	t.Parallel()
	giant := append(bytes.Repeat([]byte("g"), 10<<20), '\n')
	short := strings.Repeat("{\"type\":\"text.delta\"}\n", 3*shrinkWindow)
	f := New(io.MultiReader(bytes.NewReader(giant), iotest.OneByteReader(strings.NewReader(short))), 0)
	if l, err := f.Next(); err != nil || l.Size != 10<<20 {
		t.Fatalf("Next() = Size %d, %v; want %d, nil", l.Size, err, 10<<20)
	}
	if len(f.buf) <= shrinkAbove {
		t.Fatalf("len(buf) = %d after a 10 MiB line, want over %d", len(f.buf), shrinkAbove)
	}
	for i := range 3 * shrinkWindow {
		if _, err := f.Next(); err != nil {
			t.Fatal(err)
		}
		switch {
		case i < shrinkWindow-1 && len(f.buf) == bufSize:
			t.Fatalf("buffer shrunk after %d short lines, want at least %d", i+1, shrinkWindow)
		case i >= 2*shrinkWindow && len(f.buf) != bufSize:
			t.Fatalf("len(buf) = %d after %d short lines, want %d", len(f.buf), i+1, bufSize)
		}
	}
}

// TestShrinkKeepsWarm: a buffer over shrinkAbove is kept while lines of
// over a quarter of its size keep coming among runs of short lines.
func TestShrinkKeepsWarm(t *testing.T) {
	t.Parallel()
	var data []byte
	for i := range 8 {
		n := shrinkAbove/2 + 1 + i*(shrinkAbove/32) // 4–6 MiB
		if i == 0 {
			n = shrinkAbove + 1 // grows the buffer to 2 × shrinkAbove
		}
		data = append(data, bytes.Repeat([]byte("o"), n)...)
		data = append(data, '\n')
		data = append(data, strings.Repeat("{\"type\":\"text.delta\"}\n", shrinkWindow-1)...)
	}
	// Reads of 64 KiB: the short lines go through many reads, each one a
	// chance to shrink.
	f := New(&chunked{r: bytes.NewReader(data), n: 64 << 10}, 0)
	if _, err := f.Next(); err != nil {
		t.Fatal(err)
	}
	if len(f.buf) != 2*shrinkAbove {
		t.Fatalf("len(buf) = %d, want %d", len(f.buf), 2*shrinkAbove)
	}
	warm := &f.buf[0]
	for n := 1; ; n++ {
		if _, err := f.Next(); err != nil {
			break
		}
		if &f.buf[0] != warm {
			t.Fatalf("line %d: the buffer was replaced (len %d), want it kept", n, len(f.buf))
		}
	}
}

// chunked reads at most n bytes at a time from r.
type chunked struct {
	r io.Reader
	n int
}

func (c *chunked) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// repeat reads as n bytes of c.
func repeat(c byte, n int) io.Reader {
	return io.LimitReader(fill(c), int64(n))
}

type fill byte

func (c fill) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(c)
	}
	return len(p), nil
}

// TestCapPlusOne: a line of exactly DefaultMaxLine bytes is read whole, one
// byte more is TooLong with its head, the line after it is intact, and the
// buffer never grows past the cap plus one read. Growing it for the first
// line allocates under twice the cap in all (doubling, then straight to
// the limit). Not parallel: it counts every goroutine's allocations.
func TestCapPlusOne(t *testing.T) {
	head := `{"type":"user","content":"`
	in := io.MultiReader(
		repeat('a', DefaultMaxLine), strings.NewReader("\n"),
		strings.NewReader(head), repeat('b', DefaultMaxLine+1-len(head)), strings.NewReader("\n"),
		strings.NewReader(`{"type":"after"}`+"\n"))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f := New(in, 0)
	l, err := f.Next()
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n >= 2*DefaultMaxLine {
		t.Errorf("reading a line of the cap allocated %d bytes, want under %d", n, 2*DefaultMaxLine)
	}
	if err != nil || l.TooLong || l.Size != DefaultMaxLine || len(l.Bytes) != DefaultMaxLine || bytes.Count(l.Bytes, []byte("a")) != DefaultMaxLine {
		t.Fatalf("Next() = TooLong %v Size %d len(Bytes) %d, %v; want false, %d, %d, nil", l.TooLong, l.Size, len(l.Bytes), err, DefaultMaxLine, DefaultMaxLine)
	}
	l, err = f.Next()
	if err != nil || !l.TooLong || l.Size != DefaultMaxLine+1 || len(l.Bytes) != HeadBytes || !bytes.HasPrefix(l.Bytes, []byte(head+"bbb")) {
		t.Fatalf("Next() = TooLong %v Size %d len(Bytes) %d %.30q, %v; want true, %d, %d, the line's head", l.TooLong, l.Size, len(l.Bytes), l.Bytes, err, DefaultMaxLine+1, HeadBytes)
	}
	if len(f.buf) > DefaultMaxLine+minRead {
		t.Errorf("len(buf) = %d, want at most %d", len(f.buf), DefaultMaxLine+minRead)
	}
	l, err = f.Next()
	if err != nil || string(l.Bytes) != `{"type":"after"}` {
		t.Errorf("Next() = %.30q, %v; want the following line", l.Bytes, err)
	}
	if _, err := f.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next() error = %v, want EOF", err)
	}
}

// gReader reads n bytes 'g', without holding them.
type gReader struct{ n int }

func (g *gReader) Read(p []byte) (int, error) {
	if g.n == 0 {
		return 0, io.EOF
	}
	k := min(len(p), g.n)
	for i := range p[:k] {
		p[i] = 'g'
	}
	g.n -= k
	return k, nil
}

// TestShrinkReleases: the buffer a giant line grew goes back to the
// system when the framer shrinks it, not at the next collection, which a
// warm run's few allocations put minutes away. Not parallel: it reads the
// process's heap statistics (parallel tests wait until it is done).
func TestShrinkReleases(t *testing.T) {
	const giant = 48 << 20
	short := strings.Repeat("{\"type\":\"text.delta\"}\n", 3*shrinkWindow)
	f := New(io.MultiReader(&gReader{giant}, strings.NewReader("\n"), iotest.OneByteReader(strings.NewReader(short))), 0)
	if l, err := f.Next(); err != nil || l.Size != giant {
		t.Fatalf("Next() = Size %d, %v; want %d, nil", l.Size, err, giant)
	}
	for range 3 * shrinkWindow {
		if _, err := f.Next(); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.buf) != bufSize {
		t.Fatalf("len(buf) = %d after the short lines, want %d (shrunk)", len(f.buf), bufSize)
	}
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	held := s[0].Value.Uint64() + s[1].Value.Uint64()
	if held > giant/2 {
		t.Errorf("heap holds %d MiB (objects and free, not released) after the shrink, want under %d: the giant line's buffer stayed", held>>20, giant>>21)
	}
	runtime.KeepAlive(f)
}
