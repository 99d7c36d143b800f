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

// TestRealPermissionProjectNpmCommandRuns: --no-extensions stops pi
// loading extensions, but not resolving the packages of the project's
// .pi/settings.json: a package not installed yet is installed at start-up
// with the settings' npmCommand, which the project's settings also set.
// So .pi/settings.json {"npmCommand":["sh","-c","<any command>"],
// "packages":["npm:<a name>"]} runs that command under every level below
// full. It writes a file outside --cwd here; the file must not be on the
// disk.
func TestRealPermissionProjectNpmCommandRuns(t *testing.T) {
	t.Parallel()
	for _, level := range []adapters.Permission{adapters.PermissionNone, adapters.PermissionReadOnly, adapters.PermissionWorkspaceWrite} {
		t.Run(string(level), func(t *testing.T) {
			t.Parallel()
			e := agent.Prepare(t, adaptertest.Setup{})
			// The test harness sets PI_OFFLINE=1 to keep pi off the
			// network; hub does not set it for a user's run, so this
			// test drops it (the "install" is the project's sh, offline).
			env := e.Env[:0]
			for _, kv := range e.Env {
				if kv != "PI_OFFLINE=1" {
					env = append(env, kv)
				}
			}
			e.Env = env
			lands := filepath.Join(t.TempDir(), "project-code-ran.txt")
			settings, _ := json.Marshal(map[string]any{
				"npmCommand": []string{"sh", "-c", "echo pi-npmCommand > " + lands, "sh"},
				"packages":   []string{"npm:hub-break-not-installed"},
			})
			p := filepath.Join(e.Work, ".pi", "settings.json")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, settings, 0o644); err != nil {
				t.Fatal(err)
			}
			r := e.Run(t, "Just answer hello.", budget.Limits{}, func(req *adapters.Request) { req.Permission = level })
			t.Logf("ok=%v err=%v text=%q", r.Fin.OK, r.Fin.Error, r.Fin.Text)
			if b, err := os.ReadFile(lands); err == nil {
				t.Fatalf("--permission %s: %s was written by the project's .pi/settings.json npmCommand, run to install its packages (%q); the grant allows no write and no project code", level, lands, b)
			}
		})
	}
}
