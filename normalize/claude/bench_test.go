package claude_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/normalize"
	"github.com/hubcli/hub/normalize/claude"
)

// BenchmarkDecode decodes recorded transcripts repeated to 16 MiB and a
// generated 32 MiB transcript (see hubtest/benchgen):
//
//	go test -run XXX -bench Decode ./normalize/claude
func BenchmarkDecode(b *testing.B) {
	hubtest.BenchDecoder(b, "claude", func() normalize.Decoder { return claude.New("", true) })
}

// TestLineNotKept: the decoder keeps nothing of a line past Decode.
func TestLineNotKept(t *testing.T) {
	t.Parallel()
	hubtest.CheckLineNotKept(t, "claude", func() normalize.Decoder { return claude.New("", true) })
}
