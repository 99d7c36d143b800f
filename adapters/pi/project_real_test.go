package pi_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestRealPermissionProjectNpmCommand: pi installs a package of a
// settings.json not installed yet with the settings' npmCommand, which a
// project's .pi/settings.json sets too: {"npmCommand":["sh","-c","<any
// command>"],"packages":["npm:<a name>"]} would run that command at start.
// Below full hub runs pi --offline, and the command must not run. The
// test harness sets PI_OFFLINE=1 to keep pi off the network; hub does not
// set it for a user's run, so this test drops it (the "install" is the
// project's sh, offline).
func TestRealPermissionProjectNpmCommand(t *testing.T) {
	t.Parallel()
	hubtest.ProjectCode(t, agent, func(lands string) map[string]string {
		settings, _ := json.Marshal(map[string]any{
			"npmCommand": []string{"sh", "-c", "echo pi-npmCommand > " + lands, "sh"},
			"packages":   []string{"npm:hub-test-not-installed"},
		})
		return map[string]string{".pi/settings.json": string(settings)}
	}, func(e *hubtest.Env) {
		e.Env = slices.DeleteFunc(e.Env, func(kv string) bool { return kv == "PI_OFFLINE=1" })
	})
}
