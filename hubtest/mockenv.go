package hubtest

// Checking scripts/mock-env.sh, the shell form of each Agent.Configure that
// scripts/demo.sh and docs/mock-server.md's by-hand commands use, against Configure.

import (
	"bytes"
	"cmp"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// MockEnvScript is the path of scripts/mock-env.sh under [Root].
func MockEnvScript() string { return filepath.Join(Root(), "scripts", "mock-env.sh") }

// CheckMockEnv fails t unless scripts/mock-env.sh points a's CLI at a mock
// server as a.Configure does with the default Setup ([RetriesFew]): it
// exports the same variables with the same values and writes the same files
// with the same content, both relative to its own directory, and names
// a.Model on its "# model:" line. It needs bash, not the CLI; it skips
// when the sources (the script) are not on disk.
func CheckMockEnv(t *testing.T, a Agent) {
	t.Helper()
	script := MockEnvScript()
	if _, err := os.Stat(script); err != nil {
		t.Skipf("%s: %v", script, err)
	}
	e := a.Prepare(t, Setup{})
	dir := t.TempDir()
	// The exports, evaluated by bash in an empty environment, and printed
	// back NUL-separated after a line with the model.
	cmd := exec.Command("bash", "-c", `out=$(bash "$0" "$@") || exit; eval "$out"; grep '^# model: ' <<<"$out"; env -0`,
		script, a.Name, e.Server.URL(), dir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", script, a.Name, err, stderr.Bytes())
	}
	modelLine, envs, _ := bytes.Cut(out, []byte("\n"))
	wantModel := cmp.Or(a.Model, "(none: the CLI's config chooses)")
	if got := strings.TrimPrefix(string(modelLine), "# model: "); got != wantModel {
		t.Errorf("script's model line %q, want %q", modelLine, wantModel)
	}
	got := map[string]string{}
	for _, kv := range strings.Split(strings.TrimSuffix(string(envs), "\x00"), "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "PATH", "PWD", "SHLVL", "_", "OLDPWD":
			continue
		}
		got[k] = strings.ReplaceAll(v, dir, e.Dir)
	}
	want := map[string]string{}
	for _, kv := range e.Env {
		k, v, _ := strings.Cut(kv, "=")
		want[k] = v
	}
	for _, k := range sortedKeys(want, got) {
		w, inWant := want[k]
		g, inGot := got[k]
		switch {
		case !inGot:
			t.Errorf("script sets no %s; Configure sets %s=%q", k, k, w)
		case !inWant:
			t.Errorf("script sets %s=%q; Configure does not set it", k, g)
		case g != w:
			t.Errorf("script sets %s=%q (its directory as the test's), Configure %q", k, g, w)
		}
	}
	gotFiles, wantFiles := files(t, dir), files(t, e.Dir)
	for _, name := range sortedKeys(wantFiles, gotFiles) {
		g, inGot := gotFiles[name]
		w, inWant := wantFiles[name]
		switch {
		case !inGot:
			t.Errorf("script writes no %s; Configure writes:\n%s", name, w)
		case !inWant:
			t.Errorf("script writes %s; Configure does not:\n%s", name, g)
		case strings.TrimSpace(strings.ReplaceAll(g, dir, e.Dir)) != strings.TrimSpace(w): // a heredoc ends with a newline
			t.Errorf("script's %s:\n%s\nConfigure's:\n%s", name, g, w)
		}
	}
}

// files returns the regular files under dir by path relative to it, with
// their content.
func files(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		m[rel] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func sortedKeys(a, b map[string]string) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
