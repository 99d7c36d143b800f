package codex_test

import (
	"testing"

	"github.com/hubcli/hub/adapters/adaptertest"
)

// TestRealStructured: --schema answers through the real CLI (SPEC §6.2).
func TestRealStructured(t *testing.T) {
	adaptertest.Structured(t, adaptertest.StructuredAgent{Agent: agent, Schema: adaptertest.StructuredStrictSchema, Valid: `{"score":3,"when":null}`, Native: false})
}
