package adapters_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
)

// TestPermissionWatchDeepPathHangs: a write call whose path has many
// components (here 60,000 "a/", 120 KB: an agent's tool event a model can
// make it emit) makes the watch's realPath quadratic (resolveLinks calls
// EvalSymlinks, Dir and Join on the whole path once per component), and it
// runs on the goroutine that reads the agent's stdout: hub neither stops
// the run at --timeout nor emits run.finished until it is done (a 200 KB
// path took 107 s here; hub ignored SIGTERM meanwhile). A run a limit
// stops must end within the grace and adapters.StopWait of the limit.
func TestPermissionWatchDeepPathHangs(t *testing.T) {
	t.Parallel()
	path := strings.Repeat("a/", 60000) + "x"
	part := toolPart("write", fmt.Sprintf(`{"filePath":%q,"content":"x"}`, path))
	lim := budget.Limits{Timeout: 3 * time.Second, Grace: 500 * time.Millisecond}
	res := runFake(t, t.Context(), "tool", func(r *adapters.Request) {
		r.Permission, r.Cwd, r.Limits = adapters.PermissionWorkspaceWrite, t.TempDir(), lim
		r.Env = []string{"HUB_FAKE_TOOL=" + part, "HUB_FAKE_HOLD=20s"}
	})
	if max := lim.Timeout + lim.Grace + adapters.StopWait + 2*time.Second; res.took > max {
		t.Errorf("the run took %v, want at most %v (--timeout %v): the watch held the stream", res.took, max, lim.Timeout)
	}
	if res.fin.Error != nil && res.fin.Error.Bin == events.BinInternal {
		t.Errorf("internal error: %v", res.fin.Error)
	}
}
