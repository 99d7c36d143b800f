package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readStatus reads --status-file's object; ok is false while there is no
// file yet.
func readStatus(t *testing.T, path string) (m map[string]any, ok bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("status file %q is not one JSON object: %v", b, err)
	}
	return m, true
}

// TestStatusFile: hub run --status-file shows the run going (its session,
// phase running) while the agent waits, and ends as the run.finished, for
// a run that ends well and for one a limit stops.
func TestStatusFile(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	bin := fakeAgent(t, `echo '{"type":"step_start","sessionID":"ses_x","part":{}}'
while [ ! -e `+gate+` ]; do sleep 0.05; done
echo '{"type":"text","sessionID":"ses_x","part":{"type":"text","text":"the answer"}}'
echo '{"type":"step_finish","sessionID":"ses_x","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}'`)
	status := filepath.Join(dir, "status.json")
	done := make(chan int)
	go func() {
		code, _, _ := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "json", "--status-file", status, "x")
		done <- code
	}()
	for {
		// Bounded by the test's own deadline: the fake waits for the gate.
		if m, ok := readStatus(t, status); ok && m["type"] == "status" && m["phase"] == "running" && m["session_id"] == "ses_x" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if code := <-done; code != 0 {
		t.Fatalf("exit %d, want 0", code)
	}
	m, _ := readStatus(t, status)
	if m["type"] != "run.finished" || m["ok"] != true || m["text"] != "the answer" {
		t.Errorf("final status file %v, want the run.finished", m)
	}

	// A run its --timeout stops ends the file the same way.
	slow := fakeAgent(t, "exec sleep 30")
	code, _, errOut := hubCLI(t, "", "run", "--agent", "opencode", "--bin", slow, "--timeout", "300ms", "--grace", "100ms", "--output", "json", "--status-file", status, "x")
	m, _ = readStatus(t, status)
	if code != 8 || m["type"] != "run.finished" || m["ok"] != false {
		t.Errorf("timed-out run: exit %d, status file %v (stderr %s), want 8 and the run.finished", code, m, errOut)
	}
}

// TestStatusFileUnwritable: a --status-file hub cannot write is a usage
// error before anything starts.
func TestStatusFileUnwritable(t *testing.T) {
	bin := fakeAgent(t, okBody)
	code, out, errOut := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin,
		"--status-file", filepath.Join(t.TempDir(), "no", "such", "dir", "s.json"), "x")
	if code != 2 || out != "" || !strings.Contains(errOut, "--status-file") {
		t.Errorf("exit %d stdout %q stderr %q, want 2 naming --status-file", code, out, errOut)
	}
}
