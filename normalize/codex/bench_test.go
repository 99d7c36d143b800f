package codex_test

import (
	"testing"

	"github.com/hubcli/hub/internal/benchgen"
	"github.com/hubcli/hub/normalize"
	"github.com/hubcli/hub/normalize/codex"
)

// BenchmarkDecode decodes recorded transcripts repeated to 16 MiB and a
// generated 32 MiB transcript (see internal/benchgen):
//
//	go test -run XXX -bench Decode ./normalize/codex
func BenchmarkDecode(b *testing.B) {
	benchgen.BenchDecoder(b, "codex", func() normalize.Decoder { return codex.New(codex.Options{Model: "gpt-5.5", FailFast: true}) })
}

// TestLineNotKept: the decoder keeps nothing of a line past Decode.
func TestLineNotKept(t *testing.T) {
	t.Parallel()
	benchgen.CheckLineNotKept(t, "codex", func() normalize.Decoder { return codex.New(codex.Options{Model: "gpt-5.5", FailFast: true}) })
}
