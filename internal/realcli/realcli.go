// Package realcli is test support for running the real agent CLIs (installed
// by scripts/install-agents.sh into .tools/npm) against internal/mockllm:
// finding the binaries, giving every run its own HOME and XDG directories,
// and finding processes a run left behind.
package realcli

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/mockllm"
)

// RequireEnv names the variable that turns a missing real CLI from a skip
// into a failure. scripts/test.sh (and so CI) sets it after installing them.
const RequireEnv = "HUB_REQUIRE_REAL_CLIS"

// Root returns the repository root (the directory holding go.mod).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// Bin returns the path of the real CLI name: $HUB_<NAME>_BIN if set, else
// .tools/npm/node_modules/.bin/<name>. When it is missing the test is
// skipped with the command that installs it, or fails if RequireEnv is set.
func Bin(t testing.TB, name string) string {
	t.Helper()
	env := "HUB_" + upper(name) + "_BIN"
	path := os.Getenv(env)
	if path == "" {
		path = filepath.Join(Root(), ".tools", "npm", "node_modules", ".bin", name)
	}
	if _, err := os.Stat(path); err != nil {
		msg := "real " + name + " CLI not found at " + path + ": run `bash scripts/install-agents.sh " + name + "` (or set " + env + ")"
		if os.Getenv(RequireEnv) != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// Home makes a fresh home for one run of a real CLI: HOME and the XDG
// directories under one temporary directory. It returns that directory and
// the environment entries to pass to the agent. The directory path is unique
// and appears in every process of the run's environment (see Leftovers).
func Home(t testing.TB) (dir string, env []string) {
	t.Helper()
	dir = t.TempDir()
	env = []string{"HOME=" + filepath.Join(dir, "home")}
	for _, x := range []string{"CONFIG", "DATA", "CACHE", "STATE"} {
		env = append(env, "XDG_"+x+"_HOME="+filepath.Join(dir, "xdg", upper(x)))
	}
	for _, e := range env {
		_, p, _ := bytes.Cut([]byte(e), []byte("="))
		if err := os.MkdirAll(string(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, env
}

// Leftovers returns the pids of live processes (not zombies) whose
// environment contains marker, for example "HOME=<dir>" from Home. A run
// whose agent and tools are all gone has none.
func Leftovers(marker string) []int {
	ents, _ := os.ReadDir("/proc")
	self := os.Getpid()
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, []byte(marker)) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// ModelCalls returns the model calls the mock server received (requests it
// parsed into a scenario), leaving out probes such as count_tokens.
func ModelCalls(s *mockllm.Server) []mockllm.Request {
	var out []mockllm.Request
	for _, r := range s.Requests() {
		if r.Scenario != "" {
			out = append(out, r)
		}
	}
	return out
}

// WantErr fails t unless fin is a failure with bin/reason, the retryable
// flag SPEC §4 gives them, a hint, and (when status is not 0) that HTTP
// status.
func WantErr(t testing.TB, fin events.RunFinished, bin events.Bin, reason events.Reason, status int) {
	t.Helper()
	e := fin.Error
	if fin.OK || e == nil {
		t.Fatalf("run.finished ok, want %s/%s", bin, reason)
	}
	if e.Bin != bin || e.Reason != reason {
		t.Fatalf("error = %s/%s (%s), want %s/%s", e.Bin, e.Reason, e.Message, bin, reason)
	}
	if e.Retryable != events.Retryable(bin, reason) || e.Hint == "" {
		t.Errorf("error retryable=%v hint=%q, want %v and a hint", e.Retryable, e.Hint, events.Retryable(bin, reason))
	}
	if status != 0 && (e.HTTPStatus == nil || *e.HTTPStatus != status) {
		t.Errorf("http_status = %v, want %d", e.HTTPStatus, status)
	}
}
