package codex_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// BenchmarkReplay normalizes the recorded tool transcript repeated to 16 MiB
// and a generated 32 MiB transcript through hub.Replay (framing,
// cleaning, decoding, encoding):
//
//	go test -run XXX -bench Replay ./adapters/codex
func BenchmarkReplay(b *testing.B) {
	hubtest.BenchReplay(b, "codex", model)
}
