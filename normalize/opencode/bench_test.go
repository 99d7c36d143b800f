package opencode_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/normalize"
	"github.com/hubcli/hub/normalize/opencode"
)

// BenchmarkDecode decodes recorded transcripts repeated to 16 MiB and a
// generated 32 MiB transcript (see hubtest/benchgen):
//
//	go test -run XXX -bench Decode ./normalize/opencode
func BenchmarkDecode(b *testing.B) {
	hubtest.BenchDecoder(b, "opencode", func() normalize.Decoder { return opencode.New("mock/mock-model", true) })
}

// TestLineNotKept: the decoder keeps nothing of a line past Decode.
func TestLineNotKept(t *testing.T) {
	t.Parallel()
	hubtest.CheckLineNotKept(t, "opencode", func() normalize.Decoder { return opencode.New("mock/mock-model", true) })
}
