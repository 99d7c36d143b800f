package claude_test

// Golden tests: raw transcripts recorded from the real Claude Code CLI in
// testdata/claude, replayed through adapters.Replay and compared with their
// .golden.jsonl. Rewrite with: go test ./adapters/claude -run Golden -update

import (
	"testing"

	"github.com/hubcli/hub/internal/goldentest"
)

func TestGolden(t *testing.T) {
	t.Parallel()
	goldentest.Check(t, "claude", "")
}
