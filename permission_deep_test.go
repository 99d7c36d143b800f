package hub_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
)

// TestPermissionWatchDeepPath: a write call whose path has 60,000
// components (120 KB, an event a model can make an agent emit) is past
// PATH_MAX: the watch stops the run at once rather than resolve it (a
// resolver that walked the whole path per component took 35 s here, on
// the goroutine that reads the agent's stdout, past --timeout). A run a
// limit stops must end within the grace and hub.StopWait of it.
func TestPermissionWatchDeepPath(t *testing.T) {
	t.Parallel()
	path := strings.Repeat("a/", 60000) + "x"
	part := toolPart("write", fmt.Sprintf(`{"filePath":%q,"content":"x"}`, path))
	lim := budget.Limits{Timeout: 3 * time.Second, Grace: 500 * time.Millisecond}
	res := runFake(t, t.Context(), "tool", func(r *hub.Request) {
		r.Permission, r.Cwd, r.Limits = grant.WorkspaceWrite, t.TempDir(), lim
		r.Env = []string{"HUB_FAKE_TOOL=" + part, "HUB_FAKE_HOLD=20s"}
	})
	if max := lim.Timeout + lim.Grace + hub.StopWait + 2*time.Second; res.took > max {
		t.Errorf("the run took %v, want at most %v (--timeout %v): the watch held the stream", res.took, max, lim.Timeout)
	}
	wantBin(t, res.fin, events.BinPermissionDenied, events.ReasonEffectNotGranted)
}
