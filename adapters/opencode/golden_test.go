package opencode_test

// Golden tests: raw transcripts recorded from the real OpenCode CLI
// (testdata/opencode/<scenario>.jsonl, with .exit and .stderr beside them)
// replayed through adapters.Replay, compared with <scenario>.golden.jsonl.
// Rewrite the golden files with: go test ./adapters/opencode -run Golden -update

import (
	"testing"

	"github.com/hubcli/hub/internal/benchgen"
	"github.com/hubcli/hub/internal/goldentest"
)

func TestGolden(t *testing.T) {
	t.Parallel()
	goldentest.Check(t, "opencode", "mock/mock-model")
}

// BenchmarkReplay normalizes the recorded tool transcript repeated to 16 MiB
// and a generated 32 MiB transcript through adapters.Replay (framing,
// cleaning, decoding, encoding):
//
//	go test -run XXX -bench Replay ./adapters/opencode
func BenchmarkReplay(b *testing.B) {
	benchgen.BenchReplay(b, "opencode", "mock/mock-model")
}
