package hub_test

import (
	"strings"
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// TestReplayRedactsSecrets: a replayed raw log holds the agent's output
// byte for byte, credentials included; replay redacts those of hub's own
// environment as a live run redacts the agent's. Not parallel: it sets an
// environment variable.
func TestReplayRedactsSecrets(t *testing.T) {
	const key = "sk-replay-0123456789abcdef"
	t.Setenv("HUB_TEST_REPLAY_API_KEY", key)
	raw := "warning: using key " + key + "\n" + stepLine + "\n"
	zero := 0
	var out strings.Builder
	hub.Replay(t.Context(), hub.Request{Agent: "opencode"}, strings.NewReader(raw),
		normalize.End{ExitCode: &zero}, func(ev events.Event) error {
			b, err := ev.MarshalJSON()
			out.Write(b)
			out.WriteByte('\n')
			return err
		})
	if strings.Contains(out.String(), key) {
		t.Errorf("the key of hub's environment is in the replayed events:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "using key [REDACTED]") {
		t.Errorf("replayed events = %s, want the non-JSON line's key [REDACTED]", out.String())
	}
}
