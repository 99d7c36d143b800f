package pi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// longAnswer streams a pi transcript of a 5,000-update answer, every
// message_update repeating the whole growing partial message twice as pi
// 0.73.1 does, generated as it is read so the test itself holds only one
// line.
type longAnswer struct {
	updates, i int
	text       []byte // the answer so far
	buf        bytes.Buffer
	n          int64 // bytes produced
}

const piWord = "word "

func (a *longAnswer) Read(p []byte) (int, error) {
	for a.buf.Len() == 0 {
		switch {
		case a.i == 0:
			a.buf.WriteString(`{"type":"session","version":3,"id":"s1","timestamp":"2026-11-30T00:00:00.000Z","cwd":"/w"}` + "\n")
			a.buf.WriteString(`{"type":"agent_start"}` + "\n")
		case a.i <= a.updates:
			// Written piece by piece: the generator allocates nothing per
			// line, so what the test measures is hub's.
			a.text = append(a.text, piWord...)
			partial := func() {
				a.buf.WriteString(`{"role":"assistant","content":[{"type":"text","text":"`)
				a.buf.Write(a.text)
				a.buf.WriteString(`"}],"provider":"mock","model":"mock-model","usage":{"input":0,"output":0,"cost":{"total":0}},"stopReason":"stop","timestamp":1}`)
			}
			a.buf.WriteString(`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"` + piWord + `","partial":`)
			partial()
			a.buf.WriteString(`},"message":`)
			partial()
			a.buf.WriteString("}\n")
		case a.i == a.updates+1:
			fmt.Fprintf(&a.buf, `{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"%s"}],"provider":"mock","model":"mock-model","usage":{"input":10,"output":%d,"cacheRead":0,"cacheWrite":0,"cost":{"total":0.5}},"stopReason":"stop","timestamp":1,"responseId":"r"}}`+"\n",
				strings.Repeat(piWord, a.updates), a.updates)
			a.buf.WriteString(`{"type":"agent_end","messages":[]}` + "\n")
		default:
			return 0, io.EOF
		}
		a.i++
	}
	n, _ := a.buf.Read(p)
	a.n += int64(n)
	return n, nil
}

// TestReplayMemoryFlat runs the 5,000-update answer through hub's whole
// pipeline (framer, line cleaning, decoder, event encoding) with
// hub.Replay, sampling the live heap every 100 events: the peak must
// stay far below the raw stream's size, and the bytes allocated must be a
// small fraction of it (no per-line copy of the repeated partials).
func TestReplayMemoryFlat(t *testing.T) {
	src := &longAnswer{updates: 5000, text: make([]byte, 0, 5000*len(piWord))}
	zero := 0
	var deltas int
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base, startAlloc := ms.HeapAlloc, ms.TotalAlloc
	var peak uint64
	enc := events.NewEncoder(io.Discard)
	fin := hub.Replay(context.Background(), hub.Request{Agent: "pi"}, src, normalize.End{ExitCode: &zero},
		func(ev events.Event) error {
			if ev.Type() == events.TypeTextDelta {
				deltas++
				if deltas%100 == 0 {
					runtime.GC()
					runtime.ReadMemStats(&ms)
					peak = max(peak, ms.HeapAlloc-min(ms.HeapAlloc, base))
				}
			}
			return enc.Encode(ev)
		})
	runtime.ReadMemStats(&ms)
	allocated := ms.TotalAlloc - startAlloc
	t.Logf("raw stream %d MiB, %d text.delta; live heap above the start at most %d KiB (sampled after GC every 100 deltas); %d MiB allocated in all (%.3f bytes per raw byte)",
		src.n>>20, deltas, peak>>10, allocated>>20, float64(allocated)/float64(src.n))
	if !fin.OK || deltas != 5000 || fin.Text != strings.Repeat(piWord, 5000) {
		t.Fatalf("run.finished ok=%v text %d bytes, %d deltas; want ok, the whole answer, 5000 deltas", fin.OK, len(fin.Text), deltas)
	}
	// The longest line is ~50 KiB; the framer's buffer holds one line.
	if peak > 4<<20 {
		t.Errorf("live heap grew to %d KiB above the start, want < 4 MiB for a %d MiB stream", peak>>10, src.n>>20)
	}
	if allocated > uint64(src.n)/10 {
		t.Errorf("allocated %d MiB for a %d MiB stream, want < 1/10 of it", allocated>>20, src.n>>20)
	}
}
