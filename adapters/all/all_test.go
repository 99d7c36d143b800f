package all_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hubcli/hub/adapters"
	_ "github.com/hubcli/hub/adapters/all"
)

// The npm projects scripts/install-agents.sh installs from, from this
// package's directory: the pins (and the tools) and the minimums.
var (
	pinProject = filepath.Join("..", "..", "tools", "npm")
	minProject = filepath.Join("..", "..", "tools", "npm-min")
)

// exactVersion is a version that is not a range: what a workspace's
// package.json must name, so that it and its lock say the same.
var exactVersion = regexp.MustCompile(`^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$`)

// packageJSON is what the tests read of a package.json.
type packageJSON struct {
	Name                 string            `json:"name"`
	Private              bool              `json:"private"`
	Workspaces           []string          `json:"workspaces"`
	Dependencies         map[string]string `json:"dependencies"`
	DevDependencies      map[string]string `json:"devDependencies"`
	OptionalDependencies map[string]string `json:"optionalDependencies"`
	PeerDependencies     map[string]string `json:"peerDependencies"`
}

// lockPackage is one entry of a package-lock.json's "packages".
type lockPackage struct {
	Name         string            `json:"name"`
	Version      string            `json:"version"`
	Resolved     string            `json:"resolved"`
	Integrity    string            `json:"integrity"`
	Link         bool              `json:"link"`
	Workspaces   []string          `json:"workspaces"`
	Dependencies map[string]string `json:"dependencies"`
	Bin          map[string]string `json:"bin"`
}

// pin is what one workspace of a project installs: an npm package at an
// exact version.
type pin struct{ pkg, version string }

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// npmProject reads the npm project dir as install-agents.sh uses it and
// checks it: a private root whose package.json lists its workspaces and
// depends on nothing itself; one directory per workspace, each depending
// on one npm package at an exact version; a package-lock.json that records
// the same workspaces and dependencies, locks each workspace's package at
// the top of node_modules (where .bin/<workspace> comes from) at that very
// version, gives that package a binary named like the workspace, and for
// every package an integrity hash and no tarball address (the .npmrc's
// omit-lockfile-registry-resolved; its prefer-dedupe keeps a changed pin
// at the top). It returns workspace → pin.
func npmProject(t *testing.T, dir string) map[string]pin {
	t.Helper()
	var root packageJSON
	readJSON(t, filepath.Join(dir, "package.json"), &root)
	var lock struct {
		LockfileVersion int                    `json:"lockfileVersion"`
		Packages        map[string]lockPackage `json:"packages"`
	}
	lockPath := filepath.Join(dir, "package-lock.json")
	readJSON(t, lockPath, &lock)
	if !root.Private || len(root.Workspaces) == 0 || len(root.Dependencies)+len(root.DevDependencies)+len(root.OptionalDependencies)+len(root.PeerDependencies) > 0 {
		t.Errorf("%s/package.json: want a private root with workspaces and no dependencies of its own (install-agents.sh installs by workspace)", dir)
	}
	rc, err := os.ReadFile(filepath.Join(dir, ".npmrc"))
	if err != nil {
		t.Error(err)
	}
	for setting, why := range map[string]string{
		"omit-lockfile-registry-resolved": "so that npm writes no tarball address into the lock",
		"prefer-dedupe":                   "so that a changed pin is locked at the top of node_modules, not in its workspace",
	} {
		if !regexp.MustCompile(`(?m)^` + setting + `\s*=\s*true\s*$`).Match(rc) {
			t.Errorf("%s/.npmrc: want %s=true, %s", dir, setting, why)
		}
	}
	if lock.LockfileVersion < 2 {
		t.Errorf("%s: lockfileVersion %d, want 2 or more (its \"packages\")", lockPath, lock.LockfileVersion)
	}
	if got := lock.Packages[""].Workspaces; !slices.Equal(got, root.Workspaces) {
		t.Errorf("%s: workspaces %v, but package.json says %v: run npm install --package-lock-only (docs/agents.md)", lockPath, got, root.Workspaces)
	}
	// Every directory is a workspace (a workspace left out of the list
	// would not be installed).
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != "node_modules" && !slices.Contains(root.Workspaces, e.Name()) {
			t.Errorf("%s/%s: a directory that %s/package.json does not list as a workspace", dir, e.Name(), dir)
		}
	}
	pins := map[string]pin{}
	for _, ws := range root.Workspaces {
		wsPath := filepath.Join(dir, ws, "package.json")
		if strings.Contains(ws, "/") || ws != filepath.Base(filepath.Clean(ws)) {
			t.Errorf("%s/package.json: workspace %q, want a directory beside it named after the binary", dir, ws)
			continue
		}
		var w packageJSON
		readJSON(t, wsPath, &w)
		if len(w.Dependencies) != 1 || len(w.DevDependencies)+len(w.OptionalDependencies)+len(w.PeerDependencies) > 0 {
			t.Errorf("%s: dependencies %v, want exactly one (the package that provides %s) and no other kind", wsPath, w.Dependencies, ws)
			continue
		}
		var p pin
		for pkg, version := range w.Dependencies { // the one
			p = pin{pkg, version}
		}
		if !exactVersion.MatchString(p.version) {
			t.Errorf("%s: %s at %q, want an exact version (no range)", wsPath, p.pkg, p.version)
		}
		if got := lock.Packages[ws]; got.Name != w.Name || !maps.Equal(got.Dependencies, w.Dependencies) {
			t.Errorf("%s: workspace %s is %s with %v, but its package.json says %s with %v: run npm install --package-lock-only (docs/agents.md)", lockPath, ws, got.Name, got.Dependencies, w.Name, w.Dependencies)
		}
		if l := lock.Packages["node_modules/"+w.Name]; !l.Link || l.Resolved != ws {
			t.Errorf("%s: node_modules/%s is not the link to workspace %s", lockPath, w.Name, ws)
		}
		locked, ok := lock.Packages["node_modules/"+p.pkg]
		switch {
		case !ok:
			t.Errorf("%s: no node_modules/%s (%s's package at the top, where .bin/%s comes from): run npm install --package-lock-only with --prefer-dedupe (docs/agents.md)", lockPath, p.pkg, ws, ws)
		case locked.Version != p.version:
			t.Errorf("%s: node_modules/%s is locked at %s, but %s says %s: run npm install --package-lock-only (docs/agents.md)", lockPath, p.pkg, locked.Version, wsPath, p.version)
		case locked.Bin[ws] == "":
			t.Errorf("%s: %s@%s has no binary %s (bins %v): install-agents.sh runs .bin/%s", lockPath, p.pkg, locked.Version, ws, locked.Bin, ws)
		}
		pins[ws] = p
	}
	for path, l := range lock.Packages {
		if !strings.Contains(path, "node_modules/") || l.Link {
			continue // the root, a workspace or a link to one: nothing fetched
		}
		if l.Integrity == "" {
			t.Errorf("%s: %s has no integrity hash: npm ci could not check what it fetches", lockPath, path)
		}
		if strings.Contains(l.Resolved, ":") {
			t.Errorf("%s: %s is resolved to an address (%s): regenerate the lock with --omit-lockfile-registry-resolved (docs/agents.md)", lockPath, path, l.Resolved)
		}
	}
	return pins
}

// TestInstallPins: the npm projects of scripts/install-agents.sh, tools/npm
// (the versions the tests run on, and the tools) and tools/npm-min (the
// minimums, which CI runs the contract scenarios on as well, for the agents
// whose minimum is not the pin), and their package-lock.json, install
// every registered agent, with its Info.Package, at its Info.TestedVersion
// and Info.MinVersion: the versions an adapter claims are the ones its
// tests ran on.
func TestInstallPins(t *testing.T) {
	t.Parallel()
	pins, mins := npmProject(t, pinProject), npmProject(t, minProject)
	names := adapters.Names()
	for ws := range mins {
		if !slices.Contains(names, ws) {
			t.Errorf("%s: workspace %s is not a registered adapter (%v)", minProject, ws, names)
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
		p, ok := pins[name]
		switch {
		case !ok:
			t.Errorf("%s: no workspace %s", pinProject, name)
		case p.pkg != info.Package:
			t.Errorf("%s: workspace %s installs %s, but the adapter's Info.Package is %s", pinProject, name, p.pkg, info.Package)
		case p.version != info.TestedVersion || info.TestedVersion == "":
			t.Errorf("%s: %s is pinned at %s, but the adapter's TestedVersion is %q", pinProject, name, p.version, info.TestedVersion)
		}
		m, ok := mins[name]
		switch {
		case info.MinVersion == "":
			t.Errorf("adapter %s has no MinVersion", name)
		case info.MinVersion == info.TestedVersion && ok:
			t.Errorf("%s: workspace %s, but the adapter's MinVersion is its TestedVersion (%s): leave it out, the plain install has it", minProject, name, info.MinVersion)
		case info.MinVersion == info.TestedVersion:
		case !ok:
			t.Errorf("%s: no workspace %s, for its MinVersion %s", minProject, name, info.MinVersion)
		case m.pkg != info.Package:
			t.Errorf("%s: workspace %s installs %s, but the adapter's Info.Package is %s", minProject, name, m.pkg, info.Package)
		case m.version != info.MinVersion:
			t.Errorf("%s: %s is at %s, but the adapter's MinVersion is %s", minProject, name, m.version, info.MinVersion)
		}
	}
}
