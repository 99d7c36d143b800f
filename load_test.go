package hub_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/internal/proc"
)

// TestLoad runs 64 library runs at once, again and again, against a small
// fake OpenCode (a shell script: version probe, then one answer), and checks
// that each run gets exactly one run.finished, last and ok, and that nothing
// grows: goroutines and open file descriptors are back to where they were,
// and every process started was waited for (no child, live or zombie, is
// left). Half the workers run the agent on pseudo-terminals
// (Request.TTY). Iterations per worker: HUB_LOAD_ITER (default 8, 1 with -short, so CI stays
// fast; the issue's 1,000 is `HUB_LOAD_ITER=1000 go test -run TestLoad -v
// .`). Not parallel, so other tests' goroutines do not move the
// counts.
func TestLoad(t *testing.T) {
	iters := 8
	if testing.Short() {
		iters = 1 // the fast tier: 64 runs at once still
	}
	if v, err := strconv.Atoi(os.Getenv("HUB_LOAD_ITER")); err == nil && v > 0 {
		iters = v
	}
	const workers = 64
	bin := filepath.Join(t.TempDir(), "opencode")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 1.18.33; exit 0; fi\ncat >/dev/null\n" +
		"printf '%s\\n' '" + stepLine + "' '" + textLine + "' '" + stopLine + "'\n"
	if err := hubtest.WriteScript(bin, []byte(script)); err != nil {
		t.Fatal(err)
	}
	req := hub.Request{Agent: "opencode", Prompt: "hello", Bin: bin,
		Limits: budget.Limits{Timeout: time.Minute, Grace: time.Second}}

	settle := func() (goroutines, fds int) {
		// Give exiting goroutines (timers, os/exec's) a moment.
		for i := 0; i < 50; i++ {
			runtime.GC()
			goroutines, fds = runtime.NumGoroutine(), openFDs(t)
			if goroutines <= baseG && fds <= baseFD {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		return
	}
	baseG, baseFD = 1<<30, 1<<30
	baseG, baseFD = settle()

	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iters {
				var n, finished int
				var last events.Type
				req := req
				req.TTY = w%2 == 1 // half the workers on pseudo-terminals
				fin := hub.Run(context.Background(), req, func(ev events.Event) error {
					n++
					last = ev.Type()
					if last == events.TypeRunFinished {
						finished++
					}
					return nil
				})
				if finished != 1 || last != events.TypeRunFinished || !fin.OK || fin.Text != "fake answer" {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("worker %d run %d: %d events, %d run.finished, last %s, ok=%v %v", w, i, n, finished, last, fin.OK, fin.Error))
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	for i, b := range bad {
		if i == 10 {
			t.Errorf("… and %d more", len(bad)-10)
			break
		}
		t.Error(b)
	}
	g, fds := settle()
	t.Logf("%d runs (%d workers × %d) in %s (%.0f runs/s); goroutines %d → %d, open fds %d → %d",
		workers*iters, workers, iters, took.Round(time.Millisecond), float64(workers*iters)/took.Seconds(), baseG, g, baseFD, fds)
	if g > baseG {
		t.Errorf("goroutines grew from %d to %d", baseG, g)
	}
	if fds > baseFD {
		t.Errorf("open file descriptors grew from %d to %d", baseFD, fds)
	}
	if left := proc.Descendants(os.Getpid()); len(left) > 0 {
		t.Errorf("processes left below the test (not waited for): %s", describe(left))
	}
}

// baseG and baseFD are TestLoad's baseline counts (package level so that
// its settle loop can compare against them while measuring them).
var baseG, baseFD int

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
