package codex_test

// Golden tests: raw transcripts recorded from the real Codex CLI in
// testdata/codex, replayed through hub.Replay and compared with their
// .golden.jsonl. Rewrite with: go test ./adapters/codex -run Golden -update

import (
	"flag"
	"testing"
	"time"

	"github.com/hubcli/hub/hubtest"
)

var update = flag.Bool("update", false, "rewrite testdata/codex golden files")

// The recordings were made in UTC, and Codex names a usage limit's reset
// in local time ("try again at 10:14 PM", usagelimit): the goldens' wait is
// from the replay's clock to that time in UTC, whatever zone the tests run
// in.
func init() { time.Local = time.UTC }

// TestGolden replays with the model the recordings' config.toml named
// (unknown-model.model overrides it for that transcript).
func TestGolden(t *testing.T) {
	t.Parallel()
	hubtest.Transcripts{Agent: "codex", Model: model, Update: *update}.Check(t)
}
