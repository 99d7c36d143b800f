package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubcli/hub/hubtest"
)

// TestVersionCacheCommands: hub run and hub agents take the agent's
// version from the version cache once a probe has put it there; hub doctor
// runs the version command every time (it checks that the agent starts),
// and what it finds is cached for the runs after it.
func TestVersionCacheCommands(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	t.Setenv("HUB_AGENT", "")
	t.Setenv("HUB_BIN", "")
	dir := t.TempDir()
	count := filepath.Join(dir, "probes")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo x >> " + count + "; echo 1.18.33; exit 0; fi\n" + okBody + "\n"
	if err := hubtest.WriteScript(filepath.Join(dir, "opencode"), []byte(script)); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir) // only the fake: the other agents are not installed
	probes := func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "\n")
	}
	steps := []struct {
		args   []string
		probes int // the version command's runs after the step
	}{
		{[]string{"run", "--agent", "opencode", "x"}, 1},
		{[]string{"run", "--agent", "opencode", "x"}, 1},
		{[]string{"agents", "--json"}, 1},
		{[]string{"doctor", "--json", "opencode"}, 2},
		{[]string{"doctor", "--json", "opencode"}, 3},
		{[]string{"run", "--agent", "opencode", "x"}, 3},
	}
	for _, s := range steps {
		code, out, errOut := hubCLI(t, "", s.args...)
		if code != 0 {
			t.Fatalf("hub %q: exit %d, want 0\nstdout %s\nstderr %s", s.args, code, out, errOut)
		}
		if !strings.Contains(out, "1.18.33") && s.args[0] != "run" {
			t.Errorf("hub %q printed no version 1.18.33: %s", s.args, out)
		}
		if n := probes(); n != s.probes {
			t.Fatalf("after hub %q the version command ran %d times, want %d", s.args, n, s.probes)
		}
	}
}
