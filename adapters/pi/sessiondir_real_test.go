package pi_test

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestRealPermissionProjectSessionDir: a project's .pi/settings.json
// sessionDir would make pi create that directory, anywhere on the disk,
// and write the run's transcript there. Below full hub pins pi's default
// session directory, and nothing may appear where the project said.
func TestRealPermissionProjectSessionDir(t *testing.T) {
	t.Parallel()
	hubtest.ProjectCode(t, agent, func(lands string) map[string]string {
		settings, _ := json.Marshal(map[string]any{"sessionDir": filepath.Join(lands, "by", "the-project")})
		return map[string]string{".pi/settings.json": string(settings)}
	})
}
