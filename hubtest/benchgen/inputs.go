package benchgen

import (
	"bytes"
	"sync"
	"testing"
)

// Sizes of the inputs the benchmarks run on.
const (
	RecordedSize  = 16 << 20 // recorded transcripts, repeated to at least this
	GeneratedSize = 32 << 20 // one generated transcript
)

var generated sync.Map // agent → []byte

// Generated returns a GeneratedSize transcript of agent (seed 1, Code), made
// once per process; tb fails if it cannot be made. Safe for concurrent use;
// callers must not modify the bytes.
func Generated(tb testing.TB, agent string) []byte {
	if b, ok := generated.Load(agent); ok {
		return b.([]byte)
	}
	var buf bytes.Buffer
	if _, err := Generate(&buf, agent, Code, GeneratedSize, 1); err != nil {
		tb.Fatal(err)
	}
	b, _ := generated.LoadOrStore(agent, buf.Bytes())
	return b.([]byte)
}

// Repeated returns agent's recorded transcripts, each a slice of lines,
// repeated until they hold at least size bytes; tb fails if there are none.
func Repeated(tb testing.TB, agent string, size int) [][][]byte {
	rec, err := Recorded(agent)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][][]byte
	for n := 0; n < size; {
		for _, t := range rec {
			out = append(out, t)
			for _, l := range t {
				n += len(l) + 1
			}
		}
	}
	return out
}
