package framer_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/hubcli/hub/hubtest/benchgen"
	"github.com/hubcli/hub/internal/framer"
)

// BenchmarkFramerAgents frames each agent's recorded transcripts repeated to
// 16 MiB and a generated 32 MiB transcript (see hubtest/benchgen):
//
//	go test -run XXX -bench FramerAgents ./internal/framer
func BenchmarkFramerAgents(b *testing.B) {
	for _, agent := range benchgen.Agents {
		var rec []byte
		for _, t := range benchgen.Repeated(b, agent, benchgen.RecordedSize) {
			for _, l := range t {
				rec = append(append(rec, l...), '\n')
			}
		}
		b.Run(agent+"/recorded", func(b *testing.B) { benchFrame(b, rec) })
		b.Run(agent+"/generated", func(b *testing.B) { benchFrame(b, benchgen.Generated(b, agent)) })
	}
}

// BenchmarkFramerMiB frames 64 MiB of lines of 1–2 MiB, the size of agents'
// large tool outputs (each op starts with a new Framer, so it includes
// growing the line buffer):
//
//	go test -run XXX -bench FramerMiB ./internal/framer
func BenchmarkFramerMiB(b *testing.B) {
	rng := rand.New(rand.NewPCG(22, 1))
	var data []byte
	for len(data) < 64<<20 {
		data = append(data, bytes.Repeat([]byte("x"), 1<<20+rng.IntN(1<<20))...)
		data = append(data, '\n')
	}
	benchFrame(b, data)
}

func benchFrame(b *testing.B, data []byte) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	lines := 0
	for b.Loop() {
		f := framer.New(bytes.NewReader(data), 0)
		for {
			if _, err := f.Next(); err != nil {
				break
			}
			lines++
		}
	}
	b.ReportMetric(float64(lines)/float64(b.N), "lines/op")
}
