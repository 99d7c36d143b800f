package pi_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/adapters/adaptertest"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/mockllm"
)

// TestRealPermissionDotDotThroughLink: under --permission workspace-write,
// a write to <cwd>/self/../escaped.txt, where self is a link to "." (it
// stays inside --cwd, so CheckLinks lets it be), lands in the parent of
// --cwd: the kernel resolves "self" before "..". hub's watch (and the
// CLI's own check) clean the path lexically to <cwd>/escaped.txt and let
// it through. The file must not reach the disk outside --cwd.
func TestRealPermissionDotDotThroughLink(t *testing.T) {
	t.Parallel()
	e := agent.Prepare(t, adaptertest.Setup{})
	if err := os.Symlink(".", filepath.Join(e.Work, "self")); err != nil {
		t.Fatal(err)
	}
	target := e.Work + "/self/../escaped.txt"
	lands := filepath.Join(filepath.Dir(e.Work), "escaped.txt")
	inside := filepath.Join(e.Work, "escaped.txt")
	r := e.Run(t, "Escape. "+string(mockllm.Call)+" "+adaptertest.JSONCall("write", map[string]string{"path": target, "content": "x"}), budget.Limits{}, func(req *adapters.Request) {
		req.Permission = adapters.PermissionWorkspaceWrite
	})
	var tools []string
	for _, ev := range r.Events {
		switch b := ev.Body.(type) {
		case events.ToolStarted:
			tools = append(tools, "started "+b.Name+" "+string(b.Input))
		case events.ToolFinished:
			tools = append(tools, "finished "+b.Name+" "+string(b.Status)+" "+b.Output)
		}
	}
	t.Logf("tools: %s; ok=%v err=%v text=%q", strings.Join(tools, " | "), r.Fin.OK, r.Fin.Error, r.Fin.Text)
	if _, err := os.Lstat(inside); err == nil {
		t.Logf("written inside at %s (lexical)", inside)
	}
	if b, err := os.ReadFile(lands); err == nil {
		t.Fatalf("--permission workspace-write: %s written OUTSIDE --cwd %s (%q); run ok=%v error %v", lands, e.Work, b, r.Fin.OK, r.Fin.Error)
	}
}
