package opencode_test

import (
	"testing"

	"github.com/hubcli/hub/adapters/adaptertest"
)

// TestRealStructured: --schema answers through the real CLI (SPEC §6.2).
func TestRealStructured(t *testing.T) {
	adaptertest.Structured(t, adaptertest.StructuredAgent{Agent: agent, Schema: adaptertest.StructuredSchema, Valid: `{"score":3}`, Native: false, InPrompt: true})
}
