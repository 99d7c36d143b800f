package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestReplayStreams: replay batches its output but writes the events of
// the lines read so far before it waits for more input, so a transcript
// piped in as it is written is normalized as it comes.
func TestReplayStreams(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "claude", "text.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(raw, []byte("\n"))
	inR, inW := io.Pipe()
	out := &notifyWriter{seen: make(chan struct{}), want: "session.started"}
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), nil, []string{"hub", "replay", "--agent", "claude", "-"}, inR, out, io.Discard)
	}()
	if _, err := inW.Write(append(first, '\n')); err != nil {
		t.Fatal(err)
	}
	select {
	case <-out.seen: // written while replay waits for the next line
	case <-time.After(10 * time.Second):
		t.Fatalf("replay held back the events of a line it read; stdout so far: %q", out.String())
	}
	inW.CloseWithError(errors.New("the writer went away"))
	if code := <-done; code == 0 {
		t.Errorf("replay of a transcript cut after its first line: exit 0, want a failure")
	}
}

type notifyWriter struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	seen chan struct{}
	once sync.Once
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *notifyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestReplayStdinSignal: a SIGTERM while `hub replay -` waits for more of
// a pipe that its writer keeps open ends the replay at once, exit 130 with
// run.finished cancelled/caller, not when the writer next writes or
// closes (here: never, until the test ends).
func TestReplayStdinSignal(t *testing.T) {
	t.Parallel()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	h := startHub(t, r, "replay", "--agent", "claude", "-")
	r.Close() // hub has its own copy
	line := `{"type":"system","subtype":"init","session_id":"s1","model":"m","tools":[]}` + "\n"
	if _, err := w.WriteString(line + `{"type":"assistant","message":{"content":[{"type":"text","te`); err != nil {
		t.Fatal(err)
	}
	// hub has read the first line once it wrote session.started: it is
	// then waiting for the rest of the second.
	if !h.waitFor(func() bool { return strings.Contains(h.stdout.String(), `"session.started"`) }) {
		t.Fatalf("hub exited before reading a line\nstderr: %s", h.stderr)
	}
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	h.wait(t, time.Minute)
	h.wantExit(t, 130, "cancelled", "caller")
	if strings.Contains(h.stdout.String(), "parse_error") || strings.Contains(h.stdout.String(), "non_json") {
		t.Errorf("the part of a line cut by the stop was decoded:\n%s", h.stdout)
	}
}
