package opencode_test

// Golden tests: raw transcripts recorded from the real OpenCode CLI
// (testdata/opencode/<scenario>.jsonl, with .exit and .stderr beside them)
// replayed through hub.Replay, compared with <scenario>.golden.jsonl.
// Rewrite the golden files with: go test ./adapters/opencode -run Golden -update

import (
	"flag"
	"testing"

	"github.com/hubcli/hub/hubtest"
)

var update = flag.Bool("update", false, "rewrite testdata/opencode golden files")

func TestGolden(t *testing.T) {
	t.Parallel()
	hubtest.Transcripts{Agent: "opencode", Model: "mock/mock-model", Update: *update}.Check(t)
}

// BenchmarkReplay normalizes the recorded tool transcript repeated to 16 MiB
// and a generated 32 MiB transcript through hub.Replay (framing,
// cleaning, decoding, encoding):
//
//	go test -run XXX -bench Replay ./adapters/opencode
func BenchmarkReplay(b *testing.B) {
	hubtest.BenchReplay(b, "opencode", "mock/mock-model")
}
