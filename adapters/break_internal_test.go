package adapters

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hubcli/hub/events"
)

// TestWatchDotDotAfterLink: the kernel resolves a link before the ".."
// that follows it, so <cwd>/self/../x, with self a link to ".", is the
// parent of --cwd, and <cwd>/out/../x, with out a link to a directory
// outside, is out's parent. The watch cleans the path lexically first
// (filepath.Clean, filepath.Join) and reads both as <cwd>/x: it lets the
// write through, and OpenCode and pi (TestRealPermissionDotDotThroughLink)
// write it outside.
func TestWatchDotDotAfterLink(t *testing.T) {
	t.Parallel()
	cwd, outside := t.TempDir(), filepath.Join(t.TempDir(), "deep")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(".", filepath.Join(cwd, "self")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(cwd, "out")); err != nil {
		t.Fatal(err)
	}
	w := newPermissionGuard("x", Grant{Level: PermissionWorkspaceWrite}, cwd)
	for _, p := range []string{
		"self/../x",
		cwd + "/self/../x",
		"self/../../../etc/x",
		"out/../x",
		cwd + "/out/../x",
	} {
		in, _ := json.Marshal(map[string]string{"filePath": p})
		if err := w.Check(events.ToolStarted{Name: "write", Kind: events.ToolWrite, Input: in}); err == nil {
			t.Errorf("write %s (the kernel puts it outside %s) let through", p, cwd)
		}
	}
}
