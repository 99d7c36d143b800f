package claude_test

// Golden tests: raw transcripts recorded from the real Claude Code CLI in
// testdata/claude, replayed through hub.Replay and compared with their
// .golden.jsonl. Rewrite with: go test ./adapters/claude -run Golden -update

import (
	"flag"
	"testing"

	"github.com/hubcli/hub/hubtest"
)

var update = flag.Bool("update", false, "rewrite testdata/claude golden files")

func TestGolden(t *testing.T) {
	t.Parallel()
	hubtest.Transcripts{Agent: "claude", Update: *update}.Check(t)
}
