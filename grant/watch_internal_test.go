package grant

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubcli/hub/events"
)

// TestWatchPaths checks the watch's path rule under workspace-write: where
// a write lands, links followed (also dangling ones, and for paths that do
// not exist yet), decides, whatever the path looks like.
func TestWatchPaths(t *testing.T) {
	t.Parallel()
	cwd, outside := t.TempDir(), t.TempDir()
	for _, l := range []struct{ target, name string }{
		{outside, "out"}, // a directory outside
		{filepath.Join(outside, "new.txt"), "dang"}, // a dangling link to a file outside
		{"../" + filepath.Base(outside), "rel"},     // a relative link outside (both are in the same temp dir)
		{filepath.Join(cwd, "sub"), "in"},           // a link that stays inside
		{"loop2", "loop1"}, {"loop1", "loop2"},      // a cycle
	} {
		if err := os.Symlink(l.target, filepath.Join(cwd, l.name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(cwd, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The run's cwd given through a link: the root is where it leads.
	viaLink := filepath.Join(t.TempDir(), "cwd")
	if err := os.Symlink(cwd, viaLink); err != nil {
		t.Fatal(err)
	}
	w := NewWatch("x", Rule{Level: WorkspaceWrite}, viaLink)
	tests := []struct {
		input string
		ok    bool
	}{
		{`{"filePath":"a.txt"}`, true},
		{`{"file_path":"sub/new/deeper/a.txt"}`, true},
		{`{"path":"in/a.txt"}`, true},
		{`{"filePath":"` + viaLink + `/a.txt"}`, true},
		{`{"filePath":"` + cwd + `"}`, true},
		{`{"content":"no path: left to the CLI"}`, true},
		{`{"filePath":"out/a.txt"}`, false},
		{`{"filePath":"dang"}`, false},
		{`{"filePath":"rel/x"}`, false},
		{`{"filePath":"sub/../../x"}`, false},
		{`{"filePath":"/etc/passwd"}`, false},
		{`{"notebook_path":"` + outside + `/n.ipynb"}`, false},
		{`{"changes":[{"path":"a.txt","kind":"add"},{"path":"` + outside + `/b","kind":"add"}]}`, false},
		{`{"filePath":"loop1/x"}`, false}, // a cycle: hub cannot say where it lands (ELOOP), so it stops
	}
	for _, tt := range tests {
		err := w.Check(events.ToolStarted{Name: "write", Kind: events.ToolWrite, Input: json.RawMessage(tt.input)})
		if (err == nil) != tt.ok {
			t.Errorf("write %s: error %v, want ok=%v", tt.input, err, tt.ok)
		}
		if err != nil && (err.Bin != events.BinPermissionDenied || err.Reason != events.ReasonEffectNotGranted) {
			t.Errorf("write %s: %s/%s", tt.input, err.Bin, err.Reason)
		}
	}
}

// TestWatchKinds checks which tool kinds each level lets through the watch,
// with and without a CLI that confines its shell itself.
func TestWatchKinds(t *testing.T) {
	t.Parallel()
	all := []events.ToolKind{events.ToolShell, events.ToolRead, events.ToolWrite, events.ToolEdit, events.ToolSearch, events.ToolWeb, events.ToolMCP, events.ToolTask, events.ToolOther}
	want := map[Level]string{ // the kinds let through, in all's order
		None:           "",
		ReadOnly:       "read search web other",
		WorkspaceWrite: "read write edit search web other",
		Full:           "shell read write edit search web mcp task other",
	}
	for level, kinds := range want {
		for _, confined := range []bool{false, true} {
			g := Rule{Level: level}
			wantKinds := kinds
			if confined {
				g.Confined = []events.ToolKind{events.ToolShell}
				if level == ReadOnly || level == WorkspaceWrite {
					wantKinds = "shell " + kinds
				}
			}
			w := NewWatch("x", g, t.TempDir())
			var got []string
			for _, k := range all {
				if w.Check(events.ToolStarted{Name: "t", Kind: k, Input: json.RawMessage(`{"filePath":"a"}`)}) == nil {
					got = append(got, string(k))
				}
			}
			if g := strings.Join(got, " "); g != wantKinds {
				t.Errorf("%s (confined shell %v): let through %q, want %q", level, confined, g, wantKinds)
			}
		}
	}
}

// TestCheckLinksAbove checks CheckLinks' rule for links inside the tree: a
// link to a directory no deeper than itself is refused (<link>/../… is
// inside by its letters and outside on the disk), a deeper one is not.
func TestCheckLinksAbove(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		link, target string
		refused      bool
	}{
		{"self", ".", true},
		{"a/x", "../b", true},
		{"a/b/up", "..", true},
		{"a/down", "b/c", false},
		{"a/file", "../f.txt", false}, // a file: <file>/.. is not a path
	} {
		cwd := t.TempDir()
		for _, d := range []string{"a/b/c", "b"} {
			if err := os.MkdirAll(filepath.Join(cwd, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(cwd, "f.txt"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(tt.target, filepath.Join(cwd, tt.link)); err != nil {
			t.Fatal(err)
		}
		if err := CheckLinks("opencode", cwd); (err != nil) != tt.refused {
			t.Errorf("%s -> %s: CheckLinks = %v, want refused %v", tt.link, tt.target, err, tt.refused)
		}
	}
}
