package benchgen

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Sizes of the inputs the benchmarks run on.
const (
	RecordedSize  = 16 << 20 // recorded transcripts, repeated to at least this
	GeneratedSize = 32 << 20 // one generated transcript
)

var generated sync.Map // agent → []byte

// Generated returns a GeneratedSize transcript of agent (seed 1), made once
// per process.
func Generated(tb testing.TB, agent string) []byte {
	if b, ok := generated.Load(agent); ok {
		return b.([]byte)
	}
	var buf bytes.Buffer
	if _, err := Generate(&buf, agent, Code, GeneratedSize, 1); err != nil {
		tb.Fatal(err)
	}
	generated.Store(agent, buf.Bytes())
	return buf.Bytes()
}

// Repeated returns agent's recorded transcripts, each a slice of lines,
// repeated until they hold at least size bytes.
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

// BenchDecoder benchmarks a decoder, made fresh for each transcript by
// newDec, on agent's recorded transcripts (sub-benchmark "recorded") and on
// a generated one ("generated"). It feeds only the lines that are JSON
// objects, as the runner does, and reports bytes per second of input and
// allocations per normalized event.
func BenchDecoder(b *testing.B, agent string, newDec func() normalize.Decoder) {
	b.Run("recorded", func(b *testing.B) {
		benchDecode(b, Repeated(b, agent, RecordedSize), newDec)
	})
	b.Run("generated", func(b *testing.B) {
		lines := bytes.Split(bytes.TrimSuffix(Generated(b, agent), []byte("\n")), []byte("\n"))
		benchDecode(b, [][][]byte{lines}, newDec)
	})
}

func benchDecode(b *testing.B, transcripts [][][]byte, newDec func() normalize.Decoder) {
	var size int64
	var valid [][][]byte
	for _, t := range transcripts {
		var v [][]byte
		for _, l := range t {
			size += int64(len(l)) + 1
			if len(l) > 0 && l[0] == '{' && gjson.ValidBytes(l) {
				v = append(v, l)
			}
		}
		valid = append(valid, v)
	}
	b.SetBytes(size)
	b.ReportAllocs()
	var dst []events.Body
	var evs int64
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		for _, t := range valid {
			dec := newDec()
			for _, l := range t {
				dst = dec.Decode(dst[:0], l)
				evs += int64(len(dst))
			}
		}
	}
	runtime.ReadMemStats(&after)
	if evs > 0 {
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(evs), "allocs/event")
		b.ReportMetric(float64(evs)/float64(b.N), "events/op")
	}
}

// BenchReplay benchmarks adapters.Replay end to end (framing, cleaning,
// decoding, budget metering, JSON encoding to io.Discard) for agent with
// model: on its recorded tool transcript repeated to RecordedSize
// ("recorded") and on a generated transcript ("generated").
func BenchReplay(b *testing.B, agent, model string) {
	b.Run("recorded", func(b *testing.B) {
		benchReplay(b, agent, model, toolRepeated(b, agent))
	})
	b.Run("generated", func(b *testing.B) {
		benchReplay(b, agent, model, Generated(b, agent))
	})
}

// toolRepeated is testdata/<agent>/tool.jsonl repeated to RecordedSize.
func toolRepeated(tb testing.TB, agent string) []byte {
	raw, err := os.ReadFile(filepath.Join(Root(), "testdata", agent, "tool.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.Repeat(raw, RecordedSize/len(raw)+1)
}

func benchReplay(b *testing.B, agent, model string, data []byte) {
	req := adapters.Request{Agent: agent, Model: model}
	zero := 0
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var evs int64
	count := func(events.Event) error { evs++; return nil }
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		enc := events.NewEncoder(discard{})
		adapters.Replay(context.Background(), req, bytes.NewReader(data), normalize.End{ExitCode: &zero},
			func(ev events.Event) error { _ = count(ev); return enc.Encode(ev) })
	}
	runtime.ReadMemStats(&after)
	if evs > 0 {
		b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(evs), "allocs/event")
		b.ReportMetric(float64(evs)/float64(b.N), "events/op")
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
