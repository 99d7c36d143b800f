package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRawLogExistingFileMadePrivate: --raw-log onto an existing file that
// others can read makes it 0600 before writing the agent's output (which
// holds credentials) into it.
func TestRawLogExistingFileMadePrivate(t *testing.T) {
	raw := filepath.Join(t.TempDir(), "raw.jsonl")
	if err := os.WriteFile(raw, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := hubCLI(t, "", "run", "--agent", "opencode", "--bin", fakeAgent(t, okBody), "--output", "json", "--raw-log", raw, "x")
	if code != 0 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	fi, err := os.Stat(raw)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("--raw-log file mode = %v, want 0600", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(raw); !strings.Contains(string(b), "the answer") || strings.Contains(string(b), "old") {
		t.Errorf("--raw-log holds %q, want the agent's output only", b)
	}
}

// TestFlagSwallowedAsValue: a flag that takes a value given none, so that
// it swallows the next flag (`--model --timeout 1s`), is a usage error
// naming both, before anything starts: else the typed limit would silently
// not apply and "1s" would join the prompt.
func TestFlagSwallowedAsValue(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "started")
	bin := fakeAgent(t, "touch "+marker+"\n"+okBody)
	for _, args := range [][]string{
		{"--model", "--timeout", "1s"},
		{"--raw-log", "--timeout", "1s"},
		{"--env", "--timeout=1s"},
		{"--cwd", "-max-cost", "1"},
	} {
		full := append(append([]string{"run", "--agent", "opencode", "--bin", bin}, args...), "hi")
		code, _, stderr := hubCLI(t, "", full...)
		if code != 2 || !strings.Contains(stderr, args[0]) || !strings.Contains(stderr, args[1]) {
			t.Errorf("hub %v: exit %d, stderr %q; want 2 naming %s and %s", full, code, stderr, args[0], args[1])
		}
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("the agent was started")
	}
	// A value that merely starts with a dash is still a value.
	if code, _, stderr := hubCLI(t, "", "run", "--agent", "opencode", "--bin", fakeAgent(t, okBody), "--output", "json", "--model=-weird", "hi"); code != 0 {
		t.Errorf("--model=-weird: exit %d, stderr %s; want 0", code, stderr)
	}
}
