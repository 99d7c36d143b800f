package claude_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestRealStructured: --schema answers through the real CLI (SPEC §6.2).
func TestRealStructured(t *testing.T) {
	hubtest.Structured(t, hubtest.StructuredAgent{Agent: agent, Schema: hubtest.StructuredSchema, Valid: `{"score":3}`, Native: true})
}
