package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/hubcli/hub/events"
)

// batchBoard is hub batch --output text: a line on stdout for each request
// as it ends (its outcome, time, tokens and cost, or its bin and hint),
// and, on a terminal (console.status), a live block on stderr with one
// line per running request — its id and the status line hub run shows —
// redrawn in place every statusEvery and cleared before anything else is
// written. Off a terminal there is no block and no escape byte.
//
// Its methods are safe for concurrent use (each run's sink calls observe);
// close stops the redraws and must be called once every run is over.
type batchBoard struct {
	mu      sync.Mutex
	out     io.Writer // stdout: the outcome lines
	info    io.Writer // stderr: the live block
	con     console
	pal     palette
	now     func() time.Time
	running []*boardRow // in the order they started
	drawn   int         // lines of the block on the screen
	frame   int
	stop    chan struct{}
	done    chan struct{}
}

type boardRow struct {
	id     string
	status *liveStatus
}

func newBatchBoard(out, info io.Writer, con console) *batchBoard {
	b := &batchBoard{out: out, info: info, con: con, pal: newPalette(con.color), now: time.Now}
	if con.status {
		b.stop, b.done = make(chan struct{}), make(chan struct{})
		go b.redraw()
	}
	return b
}

func (b *batchBoard) redraw() {
	defer close(b.done)
	t := time.NewTicker(statusEvery)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			b.mu.Lock()
			b.frame++
			b.clear()
			b.draw()
			b.mu.Unlock()
		}
	}
}

// observe takes one event of request id's run.
func (b *batchBoard) observe(id string, ev events.Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var row *boardRow
	for _, r := range b.running {
		if r.id == id {
			row = r
		}
	}
	if row == nil {
		if ev.Type() == events.TypeRunFinished {
			return // ended before it ran: its outcome line says so
		}
		row = &boardRow{id: id, status: newLiveStatus(b.now())}
		b.running = append(b.running, row)
	}
	row.status.observe(ev, b.now())
}

// finished prints request id's outcome (its summary) and takes it off the
// block.
func (b *batchBoard) finished(s batchSummary, agent string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, r := range b.running {
		if r.id == s.ID {
			b.running = append(b.running[:i], b.running[i+1:]...)
			break
		}
	}
	b.clear()
	fmt.Fprintln(b.out, b.outcome(s, agent))
	b.draw()
}

// outcome is a request's line: "✓ a1 (opencode) · 12s · $0.0032" or
// "✗ b2 (codex) · timeout/wall: run exceeded --timeout 10m".
func (b *batchBoard) outcome(s batchSummary, agent string) string {
	name := harmless(s.ID)
	if agent != "" {
		name += " (" + agent + ")"
	}
	parts := []string{name, clock(time.Duration(s.DurationMS) * time.Millisecond)}
	if s.CostUSD != nil {
		parts = append(parts, fmt.Sprintf("$%.4f", *s.CostUSD))
	}
	if s.OK {
		return b.pal.ok.Sprint("✓") + " " + strings.Join(parts, " · ")
	}
	what := s.Bin
	if s.Reason != "" {
		what += "/" + s.Reason
	}
	return b.pal.bad.Sprint("✗") + " " + strings.Join(parts, " · ") + " · " + b.pal.bad.Sprint(what) + ": " + oneLine(harmless(s.Message), 300)
}

// close clears the block and stops its redraws; it blocks until the
// redrawing goroutine is gone. Safe to call twice.
func (b *batchBoard) close() {
	if b.stop == nil {
		return
	}
	b.mu.Lock()
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	b.clear()
	b.running = nil
	b.mu.Unlock()
	<-b.done
}

// draw puts the block on the screen, one line per running request, unless
// hub is a background job. b.mu is held.
func (b *batchBoard) draw() {
	if !b.con.status || len(b.running) == 0 || (b.con.foreground != nil && !b.con.foreground()) {
		return
	}
	cols := b.con.width()
	var sb strings.Builder
	for _, r := range b.running {
		line := oneLine(harmless(r.id), 30) + " " + r.status.line(b.now(), b.frame, 0)
		sb.WriteString(b.pal.status.Sprint(cutColumns(line, cols)) + "\n")
	}
	fmt.Fprint(b.info, sb.String())
	b.drawn = len(b.running)
}

// clear erases the block: up as many lines as it holds, then to the end of
// the screen. b.mu is held.
func (b *batchBoard) clear() {
	if b.drawn > 0 {
		fmt.Fprintf(b.info, "\x1b[%dA\r\x1b[J", b.drawn)
		b.drawn = 0
	}
}
