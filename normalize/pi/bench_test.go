package pi_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/normalize"
	"github.com/hubcli/hub/normalize/pi"
)

// BenchmarkDecode decodes recorded transcripts repeated to 16 MiB and a
// generated 32 MiB transcript (see hubtest/benchgen):
//
//	go test -run XXX -bench Decode ./normalize/pi
func BenchmarkDecode(b *testing.B) {
	hubtest.BenchDecoder(b, "pi", func() normalize.Decoder { return pi.New("", true) })
}

// TestLineNotKept: the decoder keeps nothing of a line past Decode.
func TestLineNotKept(t *testing.T) {
	t.Parallel()
	hubtest.CheckLineNotKept(t, "pi", func() normalize.Decoder { return pi.New("", true) })
}
