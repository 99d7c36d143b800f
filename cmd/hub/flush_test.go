package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestRunStreams: hub run --output jsonl writes its events in batches, but
// an event is on hub's stdout before hub waits for the agent again. The
// fake agent writes one event (or one stderr line, a notice), then waits
// until the test has read that event from hub's stdout, a pipe, and only
// then finishes. A hub that holds the event back until the run ends waits
// for an agent that waits for it: the run's --timeout stops the agent, and
// the run ends as timeout/wall instead of ok.
func TestRunStreams(t *testing.T) {
	t.Parallel()
	const timeout = "60s" // only a hub that holds events back waits for it
	for _, tc := range []struct {
		name, first, want string
	}{
		{"stdout event", `echo '{"type":"step_start","sessionID":"ses_x","part":{}}'`, `"type":"session.started"`},
		{"stderr notice", `echo 'warming up' >&2`, `"message":"warming up"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			fifo := filepath.Join(dir, "go")
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			// Open read-write: neither this open nor the agent's blocks,
			// and what the test writes stays in the fifo until the agent
			// reads it.
			gate, err := os.OpenFile(fifo, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer gate.Close()
			bin := fakeAgent(t, tc.first+"\nread go < "+fifo+"\n"+okBody)
			exe, _ := os.Executable()
			cmd := exec.Command(exe, "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--timeout", timeout, "x")
			cmd.Env = append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0")
			var errb bytes.Buffer
			cmd.Stderr = &errb
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			r := bufio.NewReader(stdout)
			for {
				line, err := r.ReadString('\n')
				out.WriteString(line)
				if err != nil {
					t.Fatalf("hub's stdout ended before %s: %v\n%s", tc.want, err, out.String())
				}
				if strings.Contains(line, tc.want) {
					break
				}
			}
			if _, err := gate.WriteString("go\n"); err != nil {
				t.Fatal(err)
			}
			rest, _ := io.ReadAll(r)
			out.Write(rest)
			if err := cmd.Wait(); err != nil || !strings.Contains(out.String(), `"type":"run.finished","ok":true`) {
				t.Errorf("hub run = %v, stdout %s\nstderr %s\nwant exit 0 and an ok run.finished: hub writes %s before it waits for the agent, which waits for it", err, out.String(), errb.String(), tc.want)
			}
		})
	}
}

// TestStallGuardBatch: with batch, writes wait in the buffer for Flush
// (a write to a pipe nobody reads yet returns at once); a slow reader
// loses nothing; a Flush to a stalled one fails stallLast after giveUp,
// and every later write at once.
func TestStallGuardBatch(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		r, w := io.Pipe()
		defer r.Close()
		giveUp := make(chan struct{})
		g := &stallGuard{w: w, giveUp: giveUp, batch: true}
		defer g.close()
		for _, s := range []string{"one\n", "two\n"} {
			if n, err := g.Write([]byte(s)); n != len(s) || err != nil {
				t.Fatalf("Write(%q) = %d, %v; want it buffered", s, n, err)
			}
		}
		const slow = time.Second
		got := make(chan string)
		go func() {
			time.Sleep(slow)
			b := make([]byte, len("one\ntwo\n"))
			n, _ := io.ReadFull(r, b)
			got <- string(b[:n])
		}()
		start := time.Now()
		if err := g.Flush(); err != nil {
			t.Fatalf("Flush to a slow reader = %v", err)
		}
		if took := time.Since(start); took != slow {
			t.Errorf("Flush returned after %s, want when the reader read, after %s", took, slow)
		}
		if s := <-got; s != "one\ntwo\n" {
			t.Fatalf("reader got %q, want both writes in order", s)
		}

		if _, err := g.Write([]byte("three\n")); err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		go func() {
			time.Sleep(stallMargin)
			close(giveUp)
		}()
		if err := g.Flush(); !errors.Is(err, errStalled) {
			t.Errorf("Flush to a stalled reader = %v, want errStalled", err)
		}
		if took := time.Since(start); took != stallMargin+stallLast {
			t.Errorf("Flush to a stalled reader gave up after %s, want %s (giveUp, then stallLast)", took, stallMargin+stallLast)
		}
		start = time.Now()
		if _, err := g.Write([]byte("four\n")); !errors.Is(err, errStalled) {
			t.Errorf("Write after giving up = %v, want errStalled", err)
		}
		if err := g.Flush(); !errors.Is(err, errStalled) || time.Since(start) != 0 {
			t.Errorf("Flush after giving up = %v after %s, want errStalled at once", err, time.Since(start))
		}
		r.CloseWithError(errors.New("the reader went away")) // ends the abandoned write
	})
}
