package statusfile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hubcli/hub/events"
)

func read(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("file %q is not one JSON object: %v", b, err)
	}
	return m
}

// TestStates: the file follows the run's phase, session, usage and
// running tool, and ends as the run.finished event.
func TestStates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "status.json")
	w := New(path, "req-1")
	ts := time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
	seq := int64(0)
	ev := func(b events.Body) events.Event {
		e := events.Event{Seq: seq, TS: ts, RunID: "run_1", Agent: "opencode", Body: b}
		seq++
		return e
	}
	cost := 0.5
	steps := []struct {
		body  events.Body
		check func(m map[string]any) bool
	}{
		{events.RunStarted{Argv: []string{"opencode"}}, func(m map[string]any) bool {
			return m["type"] == Type && m["phase"] == "running" && m["id"] == "req-1" && m["run_id"] == "run_1" && m["tool"] == nil
		}},
		{events.SessionStarted{SessionID: "ses_1"}, func(m map[string]any) bool { return m["session_id"] == "ses_1" }},
		{events.ToolStarted{CallID: "c1", Name: "bash", Kind: events.ToolShell}, func(m map[string]any) bool {
			tool, _ := m["tool"].(map[string]any)
			return tool != nil && tool["name"] == "bash" && tool["kind"] == "shell" && m["tool_calls"] == 1.0 && m["seq"] == 2.0
		}},
		{events.ToolFinished{CallID: "c1", Name: "bash", Kind: events.ToolShell, Status: events.ToolOK}, func(m map[string]any) bool { return m["tool"] == nil }},
		{events.RunFinished{OK: true, CostUSD: &cost, CostSource: events.CostReported}, func(m map[string]any) bool {
			return m["type"] == "run.finished" && m["ok"] == true && m["cost_usd"] == 0.5 && m["seq"] == 4.0
		}},
	}
	for i, s := range steps {
		if err := w.Observe(ev(s.body)); err != nil {
			t.Fatal(err)
		}
		if m := read(t, path); !s.check(m) {
			t.Errorf("after event %d (%T): file %v", i, s.body, m)
		}
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".status.json.*"))
	if len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// TestAtomic: a reader that reads the file while it is rewritten as fast
// as events come always reads one whole JSON object.
func TestAtomic(t *testing.T) {
	path := filepath.Join(t.TempDir(), "status.json")
	w := New(path, "")
	if err := w.Observe(events.Event{RunID: "r", Agent: "a", Body: events.RunStarted{}}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	reads := 0
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			b, err := os.ReadFile(path)
			if err != nil || !json.Valid(b) {
				t.Errorf("read %q, %v: not one whole object", b, err)
				return
			}
			reads++
		}
	}()
	for i := range 2000 {
		// A tool start is written at once, whatever MinInterval.
		if err := w.Observe(events.Event{Seq: int64(i), RunID: "r", Agent: "a", Body: events.ToolStarted{CallID: "c", Name: string(make([]byte, i%300+1)), Kind: events.ToolShell}}); err != nil {
			t.Fatal(err)
		}
	}
	close(done)
	wg.Wait()
	if reads == 0 {
		t.Error("the reader never read")
	}
}

// TestWriteError: a directory that cannot take the file is the first
// write's error, kept; the run is not the Writer's to stop.
func TestWriteError(t *testing.T) {
	w := New(filepath.Join(t.TempDir(), "missing", "status.json"), "")
	if err := w.Observe(events.Event{Body: events.RunStarted{}}); err == nil {
		t.Fatal("Observe = nil, want the error of a directory that does not exist")
	}
	if w.Err() == nil {
		t.Error("Err() = nil after a failed write")
	}
}
