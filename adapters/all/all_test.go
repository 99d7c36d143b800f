package all_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hubcli/hub/adapters"
	_ "github.com/hubcli/hub/adapters/all"
)

// installScript is scripts/install-agents.sh, from this package's directory.
var installScript = filepath.Join("..", "..", "scripts", "install-agents.sh")

// table reads the bash associative array name of script: `declare -A
// name=(` then `  [agent]="package@version"` lines up to `)`. It fails t
// fatally when the table is missing, empty or has a line of another form.
func table(t *testing.T, script, name string) map[string][2]string {
	t.Helper()
	_, rest, ok := strings.Cut(script, "\ndeclare -A "+name+"=(\n")
	if !ok {
		t.Fatalf("%s: no `declare -A %s=(` table", installScript, name)
	}
	body, _, ok := strings.Cut(rest, "\n)\n")
	if !ok {
		t.Fatalf("%s: table %s has no closing `)` line", installScript, name)
	}
	entry := regexp.MustCompile(`^\s*\[([a-z0-9-]+)\]="(@?[^@"\s]+)@([^@"\s]+)"\s*$`)
	out := map[string][2]string{}
	for _, line := range strings.Split(body, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		m := entry.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s: table %s: line %q is not [agent]=\"package@version\"", installScript, name, line)
		}
		if _, dup := out[m[1]]; dup {
			t.Fatalf("%s: table %s names %s twice", installScript, name, m[1])
		}
		out[m[1]] = [2]string{m[2], m[3]}
	}
	if len(out) == 0 {
		t.Fatalf("%s: table %s is empty", installScript, name)
	}
	return out
}

// TestInstallPins: the two tables of scripts/install-agents.sh, the pins
// (the versions the tests run on) and the minimums (--min, which CI runs
// the contract scenarios on as well), name every registered agent, with its
// Info.Package, at its Info.TestedVersion and Info.MinVersion: the versions
// an adapter claims are the ones its tests ran on.
func TestInstallPins(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(installScript)
	if err != nil {
		t.Fatal(err)
	}
	script := string(b)
	pins, mins := table(t, script, "pins"), table(t, script, "mins")
	names := adapters.Names()
	for _, tab := range []struct {
		name    string
		entries map[string][2]string
		version func(adapters.Info) string
	}{
		{"pins", pins, func(i adapters.Info) string { return i.TestedVersion }},
		{"mins", mins, func(i adapters.Info) string { return i.MinVersion }},
	} {
		for agent := range tab.entries {
			if !slices.Contains(names, agent) {
				t.Errorf("%s: table %s names %s, which is not a registered adapter (%v)", installScript, tab.name, agent, names)
			}
		}
		for _, name := range names {
			a, err := adapters.Lookup(name)
			if err != nil {
				t.Fatal(err)
			}
			info := a.Info()
			if info.CallerCommand {
				continue // the caller names the program (acp): nothing to pin
			}
			e, ok := tab.entries[name]
			if !ok {
				t.Errorf("%s: table %s has no entry for %s", installScript, tab.name, name)
				continue
			}
			if e[0] != info.Package {
				t.Errorf("%s: table %s installs %s for %s, but its Info.Package is %s", installScript, tab.name, e[0], name, info.Package)
			}
			if want := tab.version(info); e[1] != want || want == "" {
				t.Errorf("%s: table %s has %s at %s, but the adapter says %q (its TestedVersion for pins, MinVersion for mins)", installScript, tab.name, name, e[1], want)
			}
		}
	}
}
