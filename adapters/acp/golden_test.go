package acp_test

// Golden tests: the stdout of real ACP agents (opencode acp 1.18.33,
// claude-agent-acp 0.23.1, codex-acp 0.16.0) against the mock server, in
// testdata/acp (see its README: each transcript is the agent's side of a
// recording in testdata/acp/recorded whose client sent hub's requests in
// hub's order), replayed through hub.Replay with the default grant
// (read-only) and compared with their .golden.jsonl. Rewrite with:
// go test ./adapters/acp -run Golden -update

import (
	"flag"
	"testing"

	"github.com/hubcli/hub/hubtest"
)

var update = flag.Bool("update", false, "rewrite testdata/acp golden files")

func TestGolden(t *testing.T) {
	t.Parallel()
	hubtest.Transcripts{Agent: "acp", Update: *update}.Check(t)
}
