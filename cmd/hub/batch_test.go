package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// batchOut splits hub batch's stdout into the events of each request id
// and the summaries, in order.
func batchOut(t *testing.T, out string) (evs map[string][]map[string]any, sums []map[string]any) {
	t.Helper()
	evs = map[string][]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("stdout line %q: %v", line, err)
		}
		if m["type"] == "batch.summary" {
			sums = append(sums, m)
			continue
		}
		if len(sums) > 0 {
			t.Fatalf("event after the summaries: %s", line)
		}
		id, _ := m["id"].(string)
		evs[id] = append(evs[id], m)
	}
	return evs, sums
}

// TestBatch: every request runs with the batch's flags as defaults and its
// own on top, at most --max-parallel at once; every one's events carry its
// id and end with run.finished; bad lines are reported by line and the
// rest run; the summaries come in input order and the exit status is the
// first failure's.
func TestBatch(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "live")
	if err := os.Mkdir(live, 0o755); err != nil {
		t.Fatal(err)
	}
	counts := filepath.Join(dir, "counts")
	bin := fakeAgent(t, `touch `+live+`/$$; ls `+live+` | wc -l >> `+counts+`; sleep ${SLEEP:-0.2}; rm `+live+`/$$
`+okBody)
	var file strings.Builder
	for i := range 5 {
		fmt.Fprintf(&file, `{"id":"ok%d","prompt":"p%d"}`+"\n", i, i)
	}
	file.WriteString(`{"id":"slow","prompt":"p","timeout":"300ms","grace":"100ms","env":["SLEEP=30"]}` + "\n")
	file.WriteString("\n{\"id\":\"bad\",\"prompt\":\"p\",\"no_such_flag\":true}\n")
	file.WriteString("[1,2]\n")
	reqs := filepath.Join(dir, "reqs.jsonl")
	if err := os.WriteFile(reqs, []byte(file.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := hubCLI(t, "", "batch", "--agent", "opencode", "--bin", bin, "--max-parallel", "2", reqs)
	if code != 8 {
		t.Errorf("exit %d, want 8 (the first failure in input order: slow's timeout) (stderr %s)", code, errOut)
	}
	for _, want := range []string{reqs + `:8: "no_such_flag" is not a hub run flag`, reqs + ":9: not one JSON object"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr %q, want %q", errOut, want)
		}
	}
	evs, sums := batchOut(t, out)
	wantIDs := []string{"ok0", "ok1", "ok2", "ok3", "ok4", "slow", "bad", "line-9"}
	if len(sums) != len(wantIDs) {
		t.Fatalf("%d summaries, want %d", len(sums), len(wantIDs))
	}
	for i, s := range sums {
		id := wantIDs[i]
		if s["id"] != id {
			t.Errorf("summary %d id %v, want %s (input order)", i, s["id"], id)
			continue
		}
		ev := evs[id]
		switch {
		case strings.HasPrefix(id, "ok"):
			if s["ok"] != true || len(ev) == 0 || ev[len(ev)-1]["type"] != "run.finished" || ev[len(ev)-1]["text"] != "the answer" || s["run_id"] != ev[0]["run_id"] {
				t.Errorf("%s: summary %v, %d events, want ok and its own run ending in run.finished", id, s, len(ev))
			}
		case id == "slow":
			if s["bin"] != "timeout" || s["exit_code"] != 8.0 || len(ev) == 0 || ev[len(ev)-1]["type"] != "run.finished" {
				t.Errorf("slow: summary %v, want timeout, 8, and its run.finished", s)
			}
		default:
			if s["bin"] != "usage" || s["exit_code"] != 2.0 || len(ev) != 0 {
				t.Errorf("%s: summary %v, %d events; want a usage summary and no run", id, s, len(ev))
			}
		}
	}
	b, err := os.ReadFile(counts)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range strings.Fields(string(b)) {
		if n, _ := strconv.Atoi(f); n > 2 {
			t.Errorf("%d agents ran at once, want at most --max-parallel 2 (counts %q)", n, b)
		}
	}
}

// TestBatchCancel: a cancel (Ctrl-C) stops every run, those not started
// yet included, and each still gets its run.finished (cancelled/caller);
// hub exits 130 and no agent is left.
func TestBatchCancel(t *testing.T) {
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	bin := fakeAgent(t, `echo $$ >> `+pids+`; exec sleep 30`)
	var file strings.Builder
	for i := range 4 {
		fmt.Fprintf(&file, `{"id":"r%d","prompt":"p"}`+"\n", i)
	}
	reqs := filepath.Join(dir, "reqs.jsonl")
	if err := os.WriteFile(reqs, []byte(file.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int)
	go func() {
		done <- run(ctx, nil, []string{"hub", "batch", "--agent", "opencode", "--bin", bin, "--grace", "100ms", "--max-parallel", "2", reqs}, strings.NewReader(""), &out, &errb)
	}()
	for { // until both running agents have started (the test's deadline bounds it)
		if b, _ := os.ReadFile(pids); len(strings.Fields(string(b))) == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if code := <-done; code != 130 {
		t.Errorf("exit %d, want 130 (stderr %s)", code, errb.String())
	}
	evs, sums := batchOut(t, out.String())
	for i, s := range sums {
		id := fmt.Sprintf("r%d", i)
		ev := evs[id]
		if s["bin"] != "cancelled" || len(ev) == 0 || ev[len(ev)-1]["type"] != "run.finished" {
			t.Errorf("%s: summary %v, %d events, want cancelled and its run.finished", id, s, len(ev))
		}
	}
	if len(sums) != 4 {
		t.Errorf("%d summaries, want 4", len(sums))
	}
	b, _ := os.ReadFile(pids)
	for _, f := range strings.Fields(string(b)) {
		pid, _ := strconv.Atoi(f)
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			if st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); !strings.Contains(string(st), ") Z ") {
				t.Errorf("agent %d still running", pid)
			}
		}
	}
}

// TestBatchText: hub batch --output text in a real terminal (a tmux pane)
// shows one live line per running request, and then, the block gone, a
// line per request as it ended and the count; off a terminal the same
// lines with no escape byte.
func TestBatchText(t *testing.T) {
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	bin := fakeAgent(t, `while [ ! -e `+gate+` ]; do sleep 0.05; done
`+okBody)
	reqs := filepath.Join(dir, "reqs.jsonl")
	if err := os.WriteFile(reqs, []byte(`{"id":"first","prompt":"p"}`+"\n"+`{"id":"second","prompt":"p"}`+"\n"+`{"id":"bad"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"batch", "--output", "text", "--agent", "opencode", "--bin", bin, reqs}
	p := startInTmux(t, []string{"HUB_CONFIG=" + os.DevNull}, args...)
	live := regexp.MustCompile(`(?m)^(first|second) [⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] \d+s`)
	screen := p.waitScreen(time.Minute, "a live line for each running request", func(s string) bool { return len(live.FindAllString(s, -1)) == 2 })
	if !strings.Contains(screen, "✗ bad") {
		t.Errorf("the bad line's outcome is not shown above the block:\n%s", screen)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	screen = p.waitScreen(time.Minute, "hub's exit", func(s string) bool { return strings.Contains(s, "HUB-EXIT=") })
	for _, want := range []string{"✓ first (opencode)", "✓ second (opencode)", "batch: 2 of 3 ok", "HUB-EXIT=2"} {
		if !strings.Contains(screen, want) {
			t.Errorf("after the batch, want %q:\n%s", want, screen)
		}
	}
	if live.MatchString(screen) {
		t.Errorf("a live line is still on the screen after the batch:\n%s", screen)
	}
	// Off a terminal: the same outcome lines, not one escape byte.
	code, out, errOut := hubCLI(t, "", args...)
	if code != 2 || strings.Contains(out+errOut, "\x1b") || !strings.Contains(out, "batch: 2 of 3 ok") {
		t.Errorf("piped: exit %d, stdout %q, stderr %q; want 2, the count, no escape byte", code, out, errOut)
	}
}
