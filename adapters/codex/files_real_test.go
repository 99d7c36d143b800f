package codex_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestRealContextFiles runs the CLI with two --file files (one of
// hubtest.BigFileBytes, one with a </file> tag and text that is not
// ASCII): both reach the model whole, in a run and in a live session's
// first turn only.
func TestRealContextFiles(t *testing.T) {
	t.Parallel()
	hubtest.ContextFiles(t, agent)
}

// TestRealACPContextFiles: through codex-acp (--agent acp) the files
// reach the model whole too, inlined in the prompt's text block.
func TestRealACPContextFiles(t *testing.T) {
	t.Parallel()
	hubtest.ContextFilesRun(t, agent, codexACP(t))
}
