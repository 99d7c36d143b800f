package grant

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
// outside, is out's parent. A watch that cleaned the path by its letters
// first would read both as <cwd>/x and let the write through (as OpenCode
// and pi would write it: TestRealPermissionDotDotThroughLink).
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
	w := NewWatch("x", Rule{Level: WorkspaceWrite}, cwd)
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

// TestCheckLinksUnlistableDir: a directory of mode 0300 (write and search,
// no read) cannot be listed, yet a process of the same user can go through
// it by name and write: OpenCode would write <cwd>/drop/out/x through the
// link drop/out, which leads outside. CheckLinks must refuse such a --cwd
// rather than skip the directory. (Run it as a user other than root: root
// lists any directory.)
func TestCheckLinksUnlistableDir(t *testing.T) {
	t.Parallel()
	if os.Geteuid() == 0 {
		t.Skip("root lists a mode 0300 directory: run as another user, e.g. go test -c, then setpriv --reuid=65534 --regid=65534 --clear-groups ./adapters.test -test.run TestCheckLinksUnlistableDir")
	}
	cwd, outside := t.TempDir(), t.TempDir()
	drop := filepath.Join(cwd, "drop")
	if err := os.Mkdir(drop, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(drop, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(drop, 0o300); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(drop, 0o755) })
	// What the agent can do: write through the link by name.
	if err := os.WriteFile(filepath.Join(drop, "out", "x"), []byte("x"), 0o644); err != nil {
		t.Fatalf("the write through the unlistable directory failed (%v): nothing to show", err)
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err != nil {
		t.Fatal(err)
	}
	if err := CheckLinks("opencode", cwd); err == nil {
		t.Errorf("CheckLinks let %s through: drop/out leads to %s, and a write through it lands there", cwd, outside)
	}
}
