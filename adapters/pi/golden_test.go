package pi_test

// Golden tests: raw transcripts recorded from the real pi CLI in testdata/pi
// (see its README), replayed through adapters.Replay and compared with their
// .golden.jsonl. Rewrite with: go test ./adapters/pi -run Golden -update

import (
	"testing"

	"github.com/hubcli/hub/internal/goldentest"
)

func TestGolden(t *testing.T) {
	t.Parallel()
	goldentest.Check(t, "pi", "mock/mock-model")
}
