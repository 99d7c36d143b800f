package codex_test

// Golden tests: raw transcripts recorded from the real Codex CLI in
// testdata/codex, replayed through adapters.Replay and compared with their
// .golden.jsonl. Rewrite with: go test ./adapters/codex -run Golden -update

import (
	"flag"
	"testing"

	"github.com/hubcli/hub/adapters/adaptertest"
)

var update = flag.Bool("update", false, "rewrite testdata/codex golden files")

// TestGolden replays with the model the recordings' config.toml named
// (unknown-model.model overrides it for that transcript).
func TestGolden(t *testing.T) {
	t.Parallel()
	adaptertest.Transcripts{Agent: "codex", Model: model, Update: *update}.Check(t)
}
