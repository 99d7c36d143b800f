package opencode_test

// Golden tests: raw transcripts recorded from the real OpenCode CLI
// (testdata/opencode/<scenario>.jsonl, with .exit and .stderr beside them)
// replayed through adapters.Replay, compared with <scenario>.golden.jsonl.
// Rewrite the golden files with: go test ./adapters/opencode -run Golden -update

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/realcli"
	"github.com/hubcli/hub/internal/schematest"
	"github.com/hubcli/hub/normalize"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

func TestGolden(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(realcli.Root(), "testdata", "opencode")
	raws, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	var n int
	for _, raw := range raws {
		if strings.HasSuffix(raw, ".golden.jsonl") {
			continue
		}
		n++
		name := strings.TrimSuffix(filepath.Base(raw), ".jsonl")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := replay(t, raw)
			if err := schematest.ValidateStream(got); err != nil {
				t.Errorf("replayed stream invalid: %v", err)
			}
			golden := strings.TrimSuffix(raw, ".jsonl") + ".golden.jsonl"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Replay(%s) differs from %s:\n got: %s\nwant: %s", name, filepath.Base(golden), got, want)
			}
		})
	}
	if n == 0 {
		t.Fatalf("no transcripts in %s", dir)
	}
}

// replay normalizes one recorded transcript with a fixed clock and run id.
func replay(t *testing.T, raw string) []byte {
	t.Helper()
	f, err := os.Open(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	base := strings.TrimSuffix(raw, ".jsonl")
	var end normalize.End
	if b, err := os.ReadFile(base + ".exit"); err == nil {
		s := strings.TrimSpace(string(b))
		if code, err := strconv.Atoi(s); err == nil {
			end.ExitCode = &code
		} else {
			end.Signal = s // a signal name; who sent it is not recorded
		}
	} else {
		zero := 0
		end.ExitCode = &zero
	}
	if b, err := os.ReadFile(base + ".stderr"); err == nil {
		end.Stderr = string(b)
	}
	clock := func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }
	req := adapters.Request{Agent: "opencode", Model: "mock/mock-model", Cwd: "/golden", RunID: "run_golden", Clock: clock}
	var out bytes.Buffer
	enc := events.NewEncoder(&out)
	adapters.Replay(t.Context(), req, f, end, enc.Encode)
	return out.Bytes()
}

// BenchmarkReplay normalizes the recorded tool transcript repeated to about
// 16 MiB through adapters.Replay (framing, cleaning, decoding, encoding):
// go test -run XXX -bench Replay ./adapters/opencode
func BenchmarkReplay(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join(realcli.Root(), "testdata", "opencode", "tool.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	data := bytes.Repeat(raw, (16<<20)/len(raw))
	req := adapters.Request{Agent: "opencode", Model: "mock/mock-model", RunID: "r"}
	zero := 0
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		enc := events.NewEncoder(io.Discard)
		adapters.Replay(context.Background(), req, bytes.NewReader(data), normalize.End{ExitCode: &zero}, enc.Encode)
	}
}
