package adapters_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
)

// The version cache's tests are not parallel: each sets its own
// XDG_CACHE_HOME (t.Setenv), so that none reads or writes the user's cache
// or another test's.

// cacheHome gives the test a cache directory of its own and returns hub's
// directory in it.
func cacheHome(t *testing.T) string {
	t.Helper()
	xdg := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", xdg)
	return filepath.Join(xdg, "hub")
}

// countingAgent writes an agent whose --version prints version and appends
// a line to a file; probes says how many times it ran.
type countingAgent struct {
	t     *testing.T
	bin   string
	count string
}

func newCountingAgent(t *testing.T, version string) *countingAgent {
	t.Helper()
	dir := t.TempDir()
	a := &countingAgent{t: t, bin: filepath.Join(dir, "agent"), count: filepath.Join(dir, "probes")}
	a.write(a.bin, version)
	return a
}

// script is the agent printing version; a version with a space in it is
// the version command's body instead.
func (a *countingAgent) script(version string) string {
	body := "echo " + version + "; exit 0"
	if strings.Contains(version, " ") {
		body = version
	}
	return "#!/bin/sh\nif [ \"$1\" = --version ]; then echo x >> " + a.count + "; " + body + "; fi\nexit 0\n"
}

func (a *countingAgent) write(path, version string) {
	a.t.Helper()
	if err := hubtest.WriteScript(path, []byte(a.script(version))); err != nil {
		a.t.Fatal(err)
	}
}

func (a *countingAgent) probes() int {
	b, err := os.ReadFile(a.count)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		a.t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// detect runs Detect of a probe with min as its minimum version.
func (a *countingAgent) detect(ctx context.Context, bin, min string) (adapters.Install, error) {
	return adapters.VersionProbe{Info: adapters.Info{Name: "x", Binary: "agent", MinVersion: min}}.Detect(ctx, bin)
}

// entries returns the version cache's entries in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, "version-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// readEntry decodes dir's only entry.
func readEntry(t *testing.T, dir string) map[string]any {
	t.Helper()
	m := entries(t, dir)
	if len(m) != 1 {
		t.Fatalf("cache entries %q, want one", m)
	}
	b, err := os.ReadFile(m[0])
	if err != nil {
		t.Fatal(err)
	}
	var e map[string]any
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("cache entry %s is not JSON (%v): %q", m[0], err, b)
	}
	return e
}

// TestVersionCacheReuse: a second Detect of the same binary takes the
// version from the cache (the version command ran once), a file in a
// directory only the user can read that names the binary, the file it
// resolves to and the probe's arguments.
func TestVersionCacheReuse(t *testing.T) {
	dir := cacheHome(t)
	a := newCountingAgent(t, "1.2.3")
	// npm's .bin entries are symlinks.
	link := filepath.Join(t.TempDir(), "agent")
	if err := os.Symlink(a.bin, link); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		inst, err := a.detect(t.Context(), link, "1.0.0")
		if err != nil || inst.Version != "1.2.3" || inst.Path != link {
			t.Fatalf("Detect %d = %+v, %v; want version 1.2.3 at %s", i+1, inst, err, link)
		}
	}
	if n := a.probes(); n != 1 {
		t.Errorf("the version command ran %d times for three Detects, want once", n)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("cache directory %s: %v, %v; want mode 0700", dir, fi, err)
	}
	e := readEntry(t, dir)
	key, _ := e["key"].(map[string]any)
	file, _ := key["file"].(map[string]any)
	target, err := filepath.EvalSymlinks(a.bin)
	if err != nil {
		t.Fatal(err)
	}
	if e["version"] != "1.2.3" || key["bin"] != link || file["path"] != target || fmt.Sprint(key["args"]) != "[--version]" {
		t.Errorf("cache entry %v: want version 1.2.3 of %s resolved to %s, probed with --version", e, link, target)
	}
	// Another name of the same file is probed on its own (a version
	// manager's shims are one program that dispatches on its name).
	if _, err := a.detect(t.Context(), a.bin, ""); err != nil || a.probes() != 2 {
		t.Errorf("Detect of the target = %v, probes %d; want ok, probed again (2)", err, a.probes())
	}
}

// TestVersionCacheChange: a binary that changed (touched, rewritten in
// place, replaced by another file, its mode changed, a symlink pointed
// elsewhere) is probed again, and the new version is the one reported.
func TestVersionCacheChange(t *testing.T) {
	tests := []struct {
		name   string
		change func(a *countingAgent, link string)
		want   string
	}{
		{"touched", func(a *countingAgent, _ string) {
			// A time the file cannot have had: the change is seen even on
			// a file system with coarse timestamps.
			old := time.Now().Add(-time.Hour)
			if err := os.Chtimes(a.bin, old, old); err != nil {
				t.Fatal(err)
			}
		}, "1.2.3"},
		{"rewritten in place", func(a *countingAgent, _ string) { a.write(a.bin, "1.2.40") }, "1.2.40"},
		{"replaced, same content", func(a *countingAgent, _ string) {
			tmp := a.bin + ".new"
			a.write(tmp, "1.2.3")
			if err := os.Rename(tmp, a.bin); err != nil {
				t.Fatal(err)
			}
		}, "1.2.3"},
		{"mode changed", func(a *countingAgent, _ string) {
			before, _ := statOf(t, a.bin)
			if err := os.Chmod(a.bin, 0o700); err != nil {
				t.Fatal(err)
			}
			if after, _ := statOf(t, a.bin); after.Ctim == before.Ctim {
				t.Skip("the file system's ctime did not change: no stat can tell")
			}
		}, "1.2.3"},
		{"symlink pointed elsewhere", func(a *countingAgent, link string) {
			other := filepath.Join(filepath.Dir(a.bin), "other")
			a.write(other, "2.0.0")
			tmp := link + ".new"
			if err := os.Symlink(other, tmp); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, link); err != nil {
				t.Fatal(err)
			}
		}, "2.0.0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cacheHome(t)
			a := newCountingAgent(t, "1.2.3")
			link := filepath.Join(t.TempDir(), "agent")
			if err := os.Symlink(a.bin, link); err != nil {
				t.Fatal(err)
			}
			if inst, err := a.detect(t.Context(), link, ""); err != nil || inst.Version != "1.2.3" {
				t.Fatalf("first Detect = %+v, %v", inst, err)
			}
			tt.change(a, link)
			inst, err := a.detect(t.Context(), link, "")
			if err != nil || inst.Version != tt.want {
				t.Errorf("Detect after the change = %+v, %v; want version %s", inst, err, tt.want)
			}
			if n := a.probes(); n != 2 {
				t.Errorf("the version command ran %d times, want 2: the changed binary probed again", n)
			}
			if _, err := a.detect(t.Context(), link, ""); err != nil || a.probes() != 2 {
				t.Errorf("third Detect = %v, probes %d; want the new version from the cache (2 probes)", err, a.probes())
			}
		})
	}
}

// TestVersionCacheFailures: a probe that fails — the command exits
// non-zero, prints no version, prints none in time — is never cached: the
// next Detect runs the command again.
func TestVersionCacheFailures(t *testing.T) {
	tests := []struct {
		name    string
		version string
		timeout time.Duration
		bin     events.Bin
	}{
		{"exit 1", "exit 1", 0, events.BinNotInstalled},
		{"unparseable", "echo usage", 0, events.BinUnsupportedVersion},
		// Killed when the timeout ends, which may come before the shell
		// counted its start: not counted.
		{"hangs", "exec sleep 30", 200 * time.Millisecond, events.BinTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := cacheHome(t)
			a := newCountingAgent(t, tt.version)
			probe := adapters.VersionProbe{Info: adapters.Info{Name: "x", Binary: "agent"}, Timeout: tt.timeout}
			for i := range 2 {
				_, err := probe.Detect(t.Context(), a.bin)
				var e *events.Error
				if !errors.As(err, &e) || e.Bin != tt.bin {
					t.Fatalf("Detect %d = %v, want %s", i+1, err, tt.bin)
				}
			}
			if n := a.probes(); n != 2 && tt.bin != events.BinTimeout {
				t.Errorf("the version command ran %d times for two Detects, want 2 (nothing cached)", n)
			}
			if m := entries(t, dir); len(m) != 0 {
				t.Errorf("cache entries %q after failed probes, want none", m)
			}
		})
	}
}

// TestVersionCacheTooOld: a cached version is checked against MinVersion
// like a probed one, and a refusal is confirmed by a real probe: a cached
// version that is too old still fails unsupported_version/too_old, and one
// the cache holds wrongly (a binary changed in a way no stat sees) does
// not refuse a binary that is new enough.
func TestVersionCacheTooOld(t *testing.T) {
	dir := cacheHome(t)
	a := newCountingAgent(t, "1.0.0")
	if inst, err := a.detect(t.Context(), a.bin, ""); err != nil || inst.Version != "1.0.0" {
		t.Fatalf("Detect without a minimum = %+v, %v", inst, err)
	}
	inst, err := a.detect(t.Context(), a.bin, "2.0.0")
	var e *events.Error
	if !errors.As(err, &e) || e.Bin != events.BinUnsupportedVersion || e.Reason != events.ReasonTooOld || inst.Version != "1.0.0" {
		t.Fatalf("Detect with MinVersion 2.0.0 = %+v, %v; want unsupported_version/too_old of 1.0.0", inst, err)
	}
	if n := a.probes(); n != 2 {
		t.Errorf("the version command ran %d times, want 2: a refusal is probed", n)
	}

	// A binary that changed in a way no stat sees: the entry says 1.0.0,
	// the binary says 3.0.0.
	dir = cacheHome(t)
	a = newCountingAgent(t, "3.0.0")
	if _, err := a.detect(t.Context(), a.bin, ""); err != nil {
		t.Fatal(err)
	}
	path := entries(t, dir)[0]
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	stale := strings.Replace(string(b), `"version":"3.0.0"`, `"version":"1.0.0"`, 1)
	if stale == string(b) {
		t.Fatalf("entry %q has no version 3.0.0", b)
	}
	if err := os.WriteFile(path, []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	inst, err = a.detect(t.Context(), a.bin, "2.0.0")
	if err != nil || inst.Version != "3.0.0" || a.probes() != 2 {
		t.Errorf("Detect with a stale cached 1.0.0 = %+v, %v (probes %d); want 3.0.0 from a second probe", inst, err, a.probes())
	}
}

// TestVersionCacheChangedDuringProbe: a binary that changes while it is
// probed (here its --version changes its own mode, so its ctime) is not
// cached: what was probed may not be what the key names.
func TestVersionCacheChangedDuringProbe(t *testing.T) {
	dir := cacheHome(t)
	a := newCountingAgent(t, `chmod 755 "$0"; echo 1.2.3`)
	for i := range 2 {
		if inst, err := a.detect(t.Context(), a.bin, ""); err != nil || inst.Version != "1.2.3" {
			t.Fatalf("Detect %d = %+v, %v", i+1, inst, err)
		}
	}
	if n, m := a.probes(), entries(t, dir); n != 2 || len(m) != 0 {
		t.Errorf("the version command ran %d times, entries %q; want 2 and none", n, m)
	}
}

// TestVersionCacheConcurrent: 16 Detects at once of a binary not cached
// yet all succeed, and leave one entry that is whole JSON, which the next
// Detect uses.
func TestVersionCacheConcurrent(t *testing.T) {
	dir := cacheHome(t)
	a := newCountingAgent(t, "1.2.3")
	const n = 16
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			inst, err := a.detect(t.Context(), a.bin, "1.0.0")
			if err == nil && inst.Version != "1.2.3" {
				err = fmt.Errorf("version %q", inst.Version)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Detect: %v", err)
		}
	}
	if e := readEntry(t, dir); e["version"] != "1.2.3" {
		t.Errorf("cache entry %v, want version 1.2.3", e)
	}
	if tmp, _ := filepath.Glob(filepath.Join(dir, ".version-*")); len(tmp) != 0 {
		t.Errorf("temporary files left: %q", tmp)
	}
	probed := a.probes()
	if probed < 1 || probed > n {
		t.Errorf("the version command ran %d times for %d Detects", probed, n)
	}
	if _, err := a.detect(t.Context(), a.bin, ""); err != nil || a.probes() != probed {
		t.Errorf("Detect after = %v, probes %d → %d; want the cached version", err, probed, a.probes())
	}
}

// TestVersionCacheUnwritable: without a cache directory hub can write (or
// any), Detect works as without a cache: it probes every time.
func TestVersionCacheUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	hubFile := t.TempDir() // its "hub" is a file
	if err := os.WriteFile(filepath.Join(hubFile, "hub"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, xdg, home string
	}{
		{"XDG_CACHE_HOME under a file", filepath.Join(file, "cache"), "/nonexistent"},
		{"hub is a file", hubFile, "/nonexistent"},
		{"XDG_CACHE_HOME relative", "relative/cache", "/nonexistent"},
		{"no XDG_CACHE_HOME, no HOME", "", ""},
		{"read-only directory", "", ""}, // made below
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "read-only directory" {
				if os.Geteuid() == 0 {
					t.Skip("root writes a read-only directory")
				}
				tt.xdg = t.TempDir()
				if err := os.Mkdir(filepath.Join(tt.xdg, "hub"), 0o500); err != nil {
					t.Fatal(err)
				}
			}
			t.Setenv("XDG_CACHE_HOME", tt.xdg)
			t.Setenv("HOME", tt.home)
			a := newCountingAgent(t, "1.2.3")
			for i := range 2 {
				if inst, err := a.detect(t.Context(), a.bin, "1.0.0"); err != nil || inst.Version != "1.2.3" {
					t.Fatalf("Detect %d = %+v, %v; want version 1.2.3", i+1, inst, err)
				}
			}
			if n := a.probes(); n != 2 {
				t.Errorf("the version command ran %d times, want 2", n)
			}
		})
	}
}

// TestVersionCacheBadEntry: an entry that is not whole JSON, names
// another key, is too old, is dated in the future, is not a file or is not
// the user's is ignored: the binary is probed again, and the entry
// rewritten where it can be.
func TestVersionCacheBadEntry(t *testing.T) {
	// edit sets the entry's field to value (JSON), the key as it was
	// but for the replacements of old by new in it.
	edit := func(field, value string, replace ...string) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var e map[string]json.RawMessage
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatal(err)
			}
			key := strings.NewReplacer(replace...).Replace(string(e["key"]))
			if len(replace) > 0 && key == string(e["key"]) {
				t.Fatalf("key %s has no %q", key, replace[0])
			}
			e["key"] = json.RawMessage(key)
			if field != "" {
				e[field] = json.RawMessage(value)
			}
			if b, err = json.Marshal(e); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	at := func(d time.Duration) string { return `"` + time.Now().Add(d).Format(time.RFC3339Nano) + `"` }
	tests := []struct {
		name    string
		spoil   func(t *testing.T, path string)
		rewrite bool // the probe's version replaces the entry (else: not probed, or cannot be)
	}{
		{"garbage", func(t *testing.T, path string) { os.WriteFile(path, []byte("\x00\xffnot json"), 0o600) }, true},
		{"truncated", func(t *testing.T, path string) {
			b, _ := os.ReadFile(path)
			os.WriteFile(path, b[:len(b)/2], 0o600)
		}, true},
		{"empty", func(t *testing.T, path string) { os.WriteFile(path, nil, 0o600) }, true},
		{"as written", edit("", ""), false}, // the edit itself spoils nothing: used, no probe
		{"another binary's key", edit("", "", `"bin":"`, `"bin":"/other`), true},
		{"other arguments", edit("", "", `"args":["--version"]`, `"args":["-V"]`), true},
		{"another hub", edit("", "", `"hub":{"path":"`, `"hub":{"path":"/other`), true},
		{"expired", edit("probed_at", at(-25*time.Hour)), true},
		{"dated in the future", edit("probed_at", at(time.Hour)), true},
		{"version not a version", edit("version", `"one"`), true},
		{"a directory", func(t *testing.T, path string) {
			os.Remove(path)
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"a link to a valid entry", func(t *testing.T, path string) {
			moved := path + ".real"
			if err := os.Rename(path, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(moved, path); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"another user's", func(t *testing.T, path string) {
			if os.Geteuid() != 0 {
				t.Skip("needs root to give the entry to another user")
			}
			if err := os.Chown(path, 12345, 12345); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := cacheHome(t)
			a := newCountingAgent(t, "1.2.3")
			if _, err := a.detect(t.Context(), a.bin, ""); err != nil {
				t.Fatal(err)
			}
			path := entries(t, dir)[0]
			tt.spoil(t, path)
			if tt.name == "as written" {
				if _, err := a.detect(t.Context(), a.bin, "1.0.0"); err != nil || a.probes() != 1 {
					t.Errorf("Detect with the entry re-encoded = %v, probes %d; want it used (1 probe)", err, a.probes())
				}
				return
			}
			inst, err := a.detect(t.Context(), a.bin, "1.0.0")
			if err != nil || inst.Version != "1.2.3" || a.probes() != 2 {
				t.Fatalf("Detect with a spoilt entry = %+v, %v, probes %d; want 1.2.3, probed again (2)", inst, err, a.probes())
			}
			if !tt.rewrite {
				return
			}
			if e := readEntry(t, dir); e["version"] != "1.2.3" {
				t.Errorf("entry after the probe: %v, want version 1.2.3", e)
			}
			if st, ok := statOf(t, path); ok && int(st.Uid) != os.Geteuid() {
				t.Errorf("entry owned by %d after the probe, want %d", st.Uid, os.Geteuid())
			}
			if _, err := a.detect(t.Context(), a.bin, ""); err != nil || a.probes() != 2 {
				t.Errorf("third Detect = %v, probes %d; want the rewritten entry (2 probes)", err, a.probes())
			}
		})
	}
}

func statOf(t *testing.T, path string) (*syscall.Stat_t, bool) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return st, ok
}

// TestVersionCacheFresh: under WithFreshProbe (hub doctor) Detect runs the
// version command whatever the cache holds, and caches what it found.
func TestVersionCacheFresh(t *testing.T) {
	cacheHome(t)
	a := newCountingAgent(t, "1.2.3")
	ctx := adapters.WithFreshProbe(t.Context())
	for i := range 2 {
		if _, err := a.detect(ctx, a.bin, ""); err != nil {
			t.Fatal(err)
		}
		if n := a.probes(); n != i+1 {
			t.Fatalf("fresh Detect %d: the version command ran %d times, want %d", i+1, n, i+1)
		}
	}
	if _, err := a.detect(t.Context(), a.bin, ""); err != nil || a.probes() != 2 {
		t.Errorf("Detect after fresh ones = %v, probes %d; want the cached version (2 probes)", err, a.probes())
	}
}

// TestVersionCachePrune: writing an entry removes the entries and
// temporary files last written more than a day ago and the entries whose
// binary or hub is gone, and nothing else.
func TestVersionCachePrune(t *testing.T) {
	dir := cacheHome(t)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(t.TempDir(), "gone")
	old := time.Now().Add(-25 * time.Hour)
	files := []struct {
		name, content string
		old, removed  bool
	}{
		{"version-000000000000000000000001.json", "{}", true, true},
		{".version-123", "{}", true, true},
		{"version-000000000000000000000002.json", "{}", false, false}, // recent, not understood
		{"version-000000000000000000000003.json", `{"key":{"bin":"` + gone + `","file":{"path":"` + gone + `"}}}`, false, true},
		{"version-000000000000000000000004.json", `{"key":{"bin":"/bin/sh","file":{"path":"/bin/sh"},"hub":{"path":"/bin/sh"}}}`, false, false},
		{"version-000000000000000000000005.json", `{"key":{"bin":"/bin/sh","file":{"path":"/bin/sh"},"hub":{"path":"` + gone + `"}}}`, false, true},
		{".version-456", `{"key":{"bin":"` + gone + `"}}`, false, false}, // being written
		{"pi-ext-0123456789ab.ts", "x", true, false},                     // CacheFile's
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, []byte(f.content), 0o600); err != nil {
			t.Fatal(err)
		}
		if f.old {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := newCountingAgent(t, "1.2.3")
	if _, err := a.detect(t.Context(), a.bin, ""); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, f.name))
		if gone := errors.Is(err, os.ErrNotExist); gone != f.removed {
			t.Errorf("%s: removed %v, want %v", f.name, gone, f.removed)
		}
	}
	if m := entries(t, dir); len(m) != 3 {
		t.Errorf("entries %q, want the two kept and the agent's", m)
	}
}

// TestVersionCacheFIFO: a FIFO where the entry should be (anyone who can
// write to the cache directory can put one there) is not opened for a
// read that waits for a writer: Detect probes, within the probe's own
// bound. Before, the open blocked, ahead of every limit of the run (found
// by the breaker: hub run --timeout 3s still there after a minute).
func TestVersionCacheFIFO(t *testing.T) {
	dir := cacheHome(t)
	a := newCountingAgent(t, "1.2.3")
	if _, err := a.detect(t.Context(), a.bin, ""); err != nil {
		t.Fatal(err)
	}
	path := entries(t, dir)[0]
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := a.detect(t.Context(), a.bin, "")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil || a.probes() != 2 {
			t.Errorf("Detect with a FIFO as the entry = %v, probes %d; want a probe (2)", err, a.probes())
		}
	case <-time.After(adapters.DefaultProbeTimeout):
		// Unblock the open, so that the test ends.
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatalf("Detect still blocked on the FIFO after %s", adapters.DefaultProbeTimeout)
	}
}

// TestVersionCacheSharedDir: a cache directory that others may write to
// (or another user's) is neither believed nor written: every Detect probes.
func TestVersionCacheSharedDir(t *testing.T) {
	dir := cacheHome(t)
	a := newCountingAgent(t, "1.2.3")
	if _, err := a.detect(t.Context(), a.bin, ""); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := a.detect(t.Context(), a.bin, ""); err != nil || a.probes() != 2+i {
			t.Fatalf("Detect %d in a world-writable cache = %v, probes %d; want %d", i+2, err, a.probes(), 2+i)
		}
	}
}
