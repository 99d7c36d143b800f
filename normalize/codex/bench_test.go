package codex_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/normalize"
	"github.com/hubcli/hub/normalize/codex"
)

// BenchmarkDecode decodes recorded transcripts repeated to 16 MiB and a
// generated 32 MiB transcript (see hubtest/benchgen):
//
//	go test -run XXX -bench Decode ./normalize/codex
func BenchmarkDecode(b *testing.B) {
	hubtest.BenchDecoder(b, "codex", func() normalize.Decoder { return codex.New(codex.Options{Model: "gpt-5.5", FailFast: true}) })
}

// TestLineNotKept: the decoder keeps nothing of a line past Decode.
func TestLineNotKept(t *testing.T) {
	t.Parallel()
	hubtest.CheckLineNotKept(t, "codex", func() normalize.Decoder { return codex.New(codex.Options{Model: "gpt-5.5", FailFast: true}) })
}
