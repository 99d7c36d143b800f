package hubtest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest/benchgen"
	"github.com/hubcli/hub/normalize"
)

// BenchDecoder benchmarks a decoder, made fresh for each transcript by
// newDec, on agent's recorded transcripts repeated to benchgen.RecordedSize
// (sub-benchmark "recorded") and on a generated one ("generated"). It feeds only the lines that are JSON
// objects, as the runner does, and reports bytes per second of input and
// allocations per normalized event.
func BenchDecoder(b *testing.B, agent string, newDec func() normalize.Decoder) {
	b.Run("recorded", func(b *testing.B) {
		benchDecode(b, benchgen.Repeated(b, agent, benchgen.RecordedSize), newDec)
	})
	b.Run("generated", func(b *testing.B) {
		lines := bytes.Split(bytes.TrimSuffix(benchgen.Generated(b, agent), []byte("\n")), []byte("\n"))
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

// BenchReplay benchmarks hub.Replay end to end (framing, cleaning,
// decoding, budget metering, JSON encoding to io.Discard) for agent with
// model: on its recorded tool transcript repeated to benchgen.RecordedSize
// ("recorded") and on a generated transcript ("generated"). The adapter
// must be registered. It reports bytes per second of input and allocations
// per normalized event.
func BenchReplay(b *testing.B, agent, model string) {
	b.Run("recorded", func(b *testing.B) {
		benchReplay(b, agent, model, toolRepeated(b, agent))
	})
	b.Run("generated", func(b *testing.B) {
		benchReplay(b, agent, model, benchgen.Generated(b, agent))
	})
}

// toolRepeated is testdata/<agent>/tool.jsonl repeated to benchgen.RecordedSize.
func toolRepeated(tb testing.TB, agent string) []byte {
	raw, err := os.ReadFile(filepath.Join(Root(), "testdata", agent, "tool.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	return bytes.Repeat(raw, benchgen.RecordedSize/len(raw)+1)
}

func benchReplay(b *testing.B, agent, model string, data []byte) {
	req := hub.Request{Agent: agent, Model: model}
	zero := 0
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var evs int64
	count := func(events.Event) error { evs++; return nil }
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		enc := events.NewEncoder(discard{})
		hub.Replay(context.Background(), req, bytes.NewReader(data), normalize.End{ExitCode: &zero},
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
