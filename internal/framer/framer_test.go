package framer_test

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/hubcli/hub/internal/framer"
)

type got struct {
	text    string
	size    int64
	tooLong bool
}

func readAll(t *testing.T, r io.Reader, max int) ([]got, error) {
	t.Helper()
	f := framer.New(r, max)
	var out []got
	for {
		l, err := f.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return out, err
		}
		out = append(out, got{string(l.Bytes), l.Size, l.TooLong})
	}
}

func TestFramer(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100)
	tests := []struct {
		name string
		in   string
		max  int
		want []got
	}{
		{"empty", "", 0, nil},
		{"one", "a\n", 0, []got{{"a", 1, false}}},
		{"no final newline", "a\nbc", 0, []got{{"a", 1, false}, {"bc", 2, false}}},
		{"crlf", "a\r\nb\r\n", 0, []got{{"a", 1, false}, {"b", 1, false}}},
		{"blank lines kept", "\n\na\n", 0, []got{{"", 0, false}, {"", 0, false}, {"a", 1, false}}},
		{"exactly cap", long + "\n", 100, []got{{long, 100, false}}},
		{"over cap resumes", long + "x\nok\n", 100, []got{{long + "x", 101, true}, {"ok", 2, false}}},
		{"over cap at eof", long + "x", 100, []got{{long + "x", 101, true}}},
		{"cap+1 no newline at eof", long + "y", 100, []got{{long + "y", 101, true}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in)), iotest.HalfReader(strings.NewReader(tt.in))} {
				lines, err := readAll(t, r, tt.max)
				if err != nil {
					t.Fatalf("Next() error %v", err)
				}
				if len(lines) != len(tt.want) {
					t.Fatalf("lines = %+v, want %+v", lines, tt.want)
				}
				for i := range lines {
					if lines[i] != tt.want[i] {
						t.Errorf("line %d = %+v, want %+v", i, lines[i], tt.want[i])
					}
				}
			}
		})
	}
}

// TestGiantLineBoundedMemory reads a 10 MB line with a 1 MiB cap: the head is
// kept, the rest skipped, the next line intact.
func TestGiantLineBoundedMemory(t *testing.T) {
	t.Parallel()
	giant := bytes.Repeat([]byte("z"), 10<<20)
	in := io.MultiReader(bytes.NewReader([]byte(`{"type":"big","x":"`)), bytes.NewReader(giant), strings.NewReader("\"}\n{\"type\":\"after\"}\n"))
	f := framer.New(in, 1<<20)
	l, err := f.Next()
	if err != nil {
		t.Fatal(err)
	}
	if !l.TooLong || l.Size != int64(len(giant)+len(`{"type":"big","x":""}`)) || len(l.Bytes) != framer.HeadBytes {
		t.Errorf("Next() = TooLong %v Size %d len(Bytes) %d, want true, %d, %d", l.TooLong, l.Size, len(l.Bytes), len(giant)+21, framer.HeadBytes)
	}
	if !bytes.HasPrefix(l.Bytes, []byte(`{"type":"big"`)) {
		t.Errorf("head = %.40q, want the line's start", l.Bytes)
	}
	l, err = f.Next()
	if err != nil || string(l.Bytes) != `{"type":"after"}` {
		t.Errorf("Next() = %q, %v; want the following line", l.Bytes, err)
	}
}

func TestReadErrorAfterPartialLine(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	f := framer.New(io.MultiReader(strings.NewReader("part"), iotest.ErrReader(boom)), 0)
	l, err := f.Next()
	if err != nil || string(l.Bytes) != "part" {
		t.Fatalf("Next() = %q, %v; want \"part\", nil", l.Bytes, err)
	}
	if _, err := f.Next(); !errors.Is(err, boom) {
		t.Errorf("Next() error = %v, want %v", err, boom)
	}
}

// FuzzChunking checks that any chunking of the same bytes gives the same lines.
func FuzzChunking(f *testing.F) {
	f.Add([]byte("a\nb\r\n{\"x\":1}\nlast"), uint8(3), 16)
	f.Add([]byte("\n\n\n"), uint8(1), 1)
	f.Add(bytes.Repeat([]byte("q"), 300), uint8(7), 100)
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8, max int) {
		if max <= 0 || max > 1<<16 {
			max = 64
		}
		whole, err := readAll(t, bytes.NewReader(data), max)
		if err != nil {
			t.Fatal(err)
		}
		n := int(chunk%16) + 1
		chunked, err := readAll(t, &chunkReader{data: data, n: n}, max)
		if err != nil {
			t.Fatal(err)
		}
		if len(whole) != len(chunked) {
			t.Fatalf("whole %d lines, chunked(%d) %d lines", len(whole), n, len(chunked))
		}
		for i := range whole {
			if whole[i] != chunked[i] {
				t.Fatalf("line %d: whole %+v chunked %+v", i, whole[i], chunked[i])
			}
		}
	})
}

type chunkReader struct {
	data []byte
	n    int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	k := min(c.n, len(p), len(c.data))
	copy(p, c.data[:k])
	c.data = c.data[k:]
	return k, nil
}

// BenchmarkFramer frames 64 MiB of 1 KiB lines:
// go test -run XXX -bench Framer ./internal/framer
func BenchmarkFramer(b *testing.B) {
	line := append(bytes.Repeat([]byte("x"), 1023), '\n')
	data := bytes.Repeat(line, 64<<10)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		f := framer.New(bytes.NewReader(data), 0)
		for {
			if _, err := f.Next(); err != nil {
				break
			}
		}
	}
}

// TestWarmNoAllocs: once the buffer has grown for them, lines of 1–2 MiB
// among short lines are returned in place: no allocation, no copy. Not
// parallel: AllocsPerRun counts every goroutine's allocations.
func TestWarmNoAllocs(t *testing.T) {
	var data []byte
	lines := 0
	for _, n := range []int{2<<20 - 1, 1<<20 + 3, 1<<20 + 700<<10, 1<<20 + 1<<19} {
		data = append(append(data, bytes.Repeat([]byte("o"), n)...), '\n')
		data = append(data, strings.Repeat(`{"type":"text.delta"}`+"\r\n", 20)...)
		lines += 21
	}
	f := framer.New(&cycle{data: data}, 0)
	next := func() {
		for range lines {
			if _, err := f.Next(); err != nil {
				t.Fatal(err)
			}
		}
	}
	next() // warm-up: the buffer grows
	next()
	if n := testing.AllocsPerRun(10, next); n != 0 {
		t.Errorf("AllocsPerRun(%d lines of up to 2 MiB) = %v, want 0", lines, n)
	}
}

// cycle reads data over and over, as much as it is asked for.
type cycle struct {
	data []byte
	off  int
}

func (c *cycle) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		k := copy(p[n:], c.data[c.off:])
		n += k
		c.off = (c.off + k) % len(c.data)
	}
	return n, nil
}

// TestReadSizes: readers returning 1 byte at a time, everything asked for
// (up to megabytes at once), or odd sizes give the same lines, and the
// lines expected.
func TestReadSizes(t *testing.T) {
	t.Parallel()
	const max = 200 << 10
	var in []byte
	var want []got
	add := func(line string, g got) {
		in = append(in, line...)
		want = append(want, g)
	}
	for i, n := range []int{0, 10, 70 << 10, max, max + 1, 300 << 10, 5, max - 1, 1 << 20} {
		l := strings.Repeat(string(rune('a'+i)), n)
		switch {
		case n > max:
			add(l+"\n", got{l[:framer.HeadBytes], int64(n), true})
		case i%2 == 0:
			add(l+"\n", got{l, int64(n), false})
		case n+1 > max: // the "\r" counts: over the cap
			add(l+"\r\n", got{l[:framer.HeadBytes], int64(n + 1), true})
		default:
			add(l+"\r\n", got{l, int64(n), false})
		}
	}
	add("{\"last\":true}", got{"{\"last\":true}", 13, false})
	readers := map[string]io.Reader{
		"one byte":  iotest.OneByteReader(bytes.NewReader(in)),
		"all asked": bytes.NewReader(in),
		"odd":       &chunkReader{data: in, n: 4093},
		"half":      iotest.HalfReader(bytes.NewReader(in)),
	}
	for name, r := range readers {
		lines, err := readAll(t, r, max)
		if err != nil {
			t.Fatalf("%s: Next() error %v", name, err)
		}
		if len(lines) != len(want) {
			t.Fatalf("%s: %d lines, want %d", name, len(lines), len(want))
		}
		for i := range lines {
			if lines[i] != want[i] {
				t.Errorf("%s: line %d = %.20q %d %v, want %.20q %d %v", name, i, lines[i].text, lines[i].size, lines[i].tooLong, want[i].text, want[i].size, want[i].tooLong)
			}
		}
	}
}
