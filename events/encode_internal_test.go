package events

import (
	"math/rand/v2"
	"os"
	"testing"
	"unicode/utf8"
)

// plain8Slow is plain8 a byte at a time.
func plain8Slow(w uint64) bool {
	for range 8 {
		c := byte(w)
		if c >= utf8.RuneSelf || c < 0x20 || c == '"' || c == '\\' {
			return false
		}
		w >>= 8
	}
	return true
}

// TestPlain8: every byte value at every place of a plain word, every pair
// of values (borrows between neighbours), and random words.
func TestPlain8(t *testing.T) {
	t.Parallel()
	const base = 0x6161616161616161 // "aaaaaaaa"
	check := func(w uint64) {
		if got, want := plain8(w), plain8Slow(w); got != want {
			t.Fatalf("plain8(%#016x) = %v, want %v", w, got, want)
		}
	}
	for p := 0; p < 8; p++ {
		for c := range 256 {
			check(base&^(0xff<<(8*p)) | uint64(c)<<(8*p))
		}
	}
	for c1 := range 256 {
		for c2 := range 256 {
			check(base&^0xffff00 | uint64(c1)<<8 | uint64(c2)<<16)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1 << 20 {
		check(r.Uint64())
		check(r.Uint64() & 0x7f7f7f7f7f7f7f7f)
	}
}

// BenchmarkAppendString writes this package's source (code text: short
// runs between newlines and quotes) as a JSON string:
//
//	go test -run XXX -bench AppendString ./events
func BenchmarkAppendString(b *testing.B) {
	src, err := os.ReadFile("encode.go")
	if err != nil {
		b.Fatal(err)
	}
	s := string(src)
	buf := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = appendString(buf[:0], s)
	}
}
