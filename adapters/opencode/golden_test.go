package opencode_test

// Golden tests: raw transcripts recorded from the real OpenCode CLI
// (testdata/opencode/<scenario>.jsonl, with .exit and .stderr beside them)
// replayed through adapters.Replay, compared with <scenario>.golden.jsonl.
// Rewrite the golden files with: go test ./adapters/opencode -run Golden -update

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/goldentest"
	"github.com/hubcli/hub/internal/realcli"
	"github.com/hubcli/hub/normalize"
)

func TestGolden(t *testing.T) {
	t.Parallel()
	goldentest.Check(t, "opencode", "mock/mock-model")
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
