package pi_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/adapters/adaptertest"
	"github.com/hubcli/hub/budget"
)

// TestRealPermissionProjectSessionDirWrites: the project's
// .pi/settings.json sets sessionDir, and pi (given no session flag by hub)
// creates that directory and writes the run's transcript there, anywhere
// on the disk, under every level below full: a write outside --cwd chosen
// by the repository's own configuration. The directory must not be on the
// disk.
func TestRealPermissionProjectSessionDirWrites(t *testing.T) {
	t.Parallel()
	for _, level := range []adapters.Permission{adapters.PermissionNone, adapters.PermissionReadOnly} {
		t.Run(string(level), func(t *testing.T) {
			t.Parallel()
			e := agent.Prepare(t, adaptertest.Setup{})
			lands := filepath.Join(t.TempDir(), "chosen", "by", "the-project")
			settings, _ := json.Marshal(map[string]any{"sessionDir": lands})
			p := filepath.Join(e.Work, ".pi", "settings.json")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, settings, 0o644); err != nil {
				t.Fatal(err)
			}
			r := e.Run(t, "Just answer hello.", budget.Limits{}, func(req *adapters.Request) { req.Permission = level })
			t.Logf("ok=%v err=%v text=%q", r.Fin.OK, r.Fin.Error, r.Fin.Text)
			if entries, err := os.ReadDir(lands); err == nil {
				names := []string{}
				for _, en := range entries {
					names = append(names, en.Name())
				}
				t.Fatalf("--permission %s: pi created %s, named by the project's .pi/settings.json sessionDir, and wrote %v in it; the grant allows no write", level, lands, names)
			}
		})
	}
}
