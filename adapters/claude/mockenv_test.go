package claude_test

import (
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestMockEnvScript: scripts/mock-env.sh, which scripts/demo.sh and README's
// by-hand commands use, points the CLI at the mock server as agent.Configure
// does.
func TestMockEnvScript(t *testing.T) {
	t.Parallel()
	hubtest.CheckMockEnv(t, agent)
}
