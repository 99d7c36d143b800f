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
