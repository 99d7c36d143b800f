package codex_test

// Golden tests: raw transcripts recorded from the real Codex CLI in
// testdata/codex, replayed through adapters.Replay and compared with their
// .golden.jsonl. Rewrite with: go test ./adapters/codex -run Golden -update

import (
	"testing"

	"github.com/hubcli/hub/internal/goldentest"
)

// TestGolden replays with the model the recordings' config.toml named
// (unknown-model.model overrides it for that transcript).
func TestGolden(t *testing.T) {
	t.Parallel()
	goldentest.Check(t, "codex", model)
}
