package pi_test

// Golden tests: raw transcripts recorded from the real pi CLI in testdata/pi
// (see its README), replayed through hub.Replay and compared with their
// .golden.jsonl. Rewrite with: go test ./adapters/pi -run Golden -update

import (
	"flag"
	"testing"

	"github.com/hubcli/hub/hubtest"
)

var update = flag.Bool("update", false, "rewrite testdata/pi golden files")

func TestGolden(t *testing.T) {
	t.Parallel()
	hubtest.Transcripts{Agent: "pi", Model: "mock/mock-model", Update: *update}.Check(t)
}
