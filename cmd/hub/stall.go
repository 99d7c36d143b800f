package main

import (
	"context"
	"errors"
	"io"
	"math"
	"sync"
	"time"
)

// stallMargin is how long, past the moment a run must have ended (its
// --timeout plus --grace, or a signal plus --grace), hub still waits for its
// own stdout to take the last events before it gives up on a consumer that
// does not read.
const stallMargin = 2 * time.Second

// errStalled is what writes to a stalled stdout return once hub gave up.
var errStalled = errors.New("hub's stdout is not being read (the consumer stalled); hub gave up writing to it")

// stallGuard is hub's stdout (or stderr) while a run writes to it. What is
// written goes out through one writer goroutine of its own, started by the
// first write out and ended by close. A write out blocks while the consumer
// reads slowly, as on any pipe — nothing is lost — until giveUp is closed:
// then a write out still blocked (after stallLast, for one that begins after
// giveUp) is abandoned to the writer goroutine, and every later Write and
// Flush fails at once, so the run ends instead of hanging on a pipe nobody
// reads. The first error of a write out is returned by every later Write
// and Flush too: what follows a lost batch is not written after it.
//
// Without batch every Write is written out before it returns. With batch a
// Write only appends to a buffer, written out by Flush (which the run calls
// whenever it is about to wait for the agent: hub.WithFlush) or once
// it holds batchSize bytes; close writes out the rest. A guard with first
// set flushes first before each Write (stderr's flushes stdout's), so that
// its lines come after what was written before them on the other.
//
// Safe for concurrent use: Write, Flush and close take turns.
type stallGuard struct {
	w      io.Writer
	giveUp <-chan struct{}
	batch  bool
	first  *stallGuard

	mu      sync.Mutex
	buf     []byte // not yet written out; nil after a write out was abandoned (the writer goroutine keeps it)
	err     error
	writes  chan []byte      // to the writer goroutine; nil until it starts
	results chan writeResult // from it, one per write
}

// batchSize is how many bytes a batching stallGuard holds before it writes
// them out without waiting for a Flush: a burst of events between two reads
// of the agent's stdout is written in pieces of about this size.
const batchSize = 64 << 10

type writeResult struct {
	n   int
	err error
}

// Write writes p out (without batch) or appends it to the buffer (with
// batch), see stallGuard. It blocks while a write out does.
func (g *stallGuard) Write(p []byte) (int, error) {
	if g.first != nil {
		_ = g.first.Flush() // its error is its writers'
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return 0, g.err
	}
	g.buf = append(g.buf, p...)
	if g.batch && len(g.buf) < batchSize {
		return len(p), nil
	}
	if err := g.flush(); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes out what the buffer holds. It blocks while the write does
// (see stallGuard) and returns the guard's error, if it has one.
func (g *stallGuard) Flush() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.flush()
}

// flush is Flush, holding mu.
func (g *stallGuard) flush() error {
	if g.err != nil || len(g.buf) == 0 {
		return g.err
	}
	if g.writes == nil {
		g.writes, g.results = make(chan []byte), make(chan writeResult, 1)
		go write(g.w, g.writes, g.results)
	}
	g.writes <- g.buf // the writer goroutine is idle: every write out before this one was waited for
	var r writeResult
	select {
	case r = <-g.results:
	case <-g.giveUp:
		select {
		case r = <-g.results:
		case <-time.After(stallLast):
			g.buf, g.err = nil, errStalled
			return g.err
		}
	}
	g.buf = g.buf[:0]
	if cap(g.buf) > keepBuf {
		g.buf = nil // a giant event's: give it back
	}
	g.err = r.err
	return g.err
}

// keepBuf is the largest buffer a stallGuard keeps for the next batch.
const keepBuf = 1 << 20

// close writes out what the buffer holds, as Flush does (call Flush first
// to learn of its error), and ends the writer goroutine once it is idle: at
// once, unless a write out was abandoned (then when that write returns, if
// ever). Later writes fail with errClosed. Safe to call twice.
func (g *stallGuard) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	_ = g.flush()
	if g.writes != nil {
		close(g.writes)
		g.writes = nil
	}
	if g.err == nil {
		g.err = errClosed
	}
}

// errClosed is what a stallGuard's Write returns after close.
var errClosed = errors.New("hub's output was closed")

// write is a stallGuard's writer goroutine: it writes each batch to w and
// sends the result, until writes is closed.
func write(w io.Writer, writes <-chan []byte, results chan<- writeResult) {
	for b := range writes {
		n, err := w.Write(b)
		if err == nil && n < len(b) {
			err = io.ErrShortWrite
		}
		results <- writeResult{n, err} // buffered: an abandoned write's result is not waited for
	}
}

// stallLast is how long a write may take once hub has given up waiting on a
// stalled consumer: enough for a reader that is there (the closing lines on
// a stderr that is read), not for one that is not.
const stallLast = 200 * time.Millisecond

// giveUpAfter returns a channel closed stallMargin after the run must have
// ended: timeout+grace after now when timeout is set, or grace after ctx is
// done, whichever comes first; and a func that stops the watch. The sums
// saturate: a --timeout of 2562047h (the largest Duration) means never,
// not an overflow to a negative wait that gives up at once.
func giveUpAfter(ctx context.Context, timeout, grace time.Duration) (<-chan struct{}, func()) {
	giveUp := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		var wall <-chan time.Time
		if timeout > 0 {
			t := time.NewTimer(addSat(timeout, grace, stallMargin))
			defer t.Stop()
			wall = t.C
		}
		select {
		case <-stop:
			return
		case <-wall:
		case <-ctx.Done():
			t := time.NewTimer(addSat(grace, stallMargin))
			defer t.Stop()
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
		close(giveUp)
	}()
	var once sync.Once
	return giveUp, func() { once.Do(func() { close(stop) }) }
}

// addSat returns the sum of ds, which are not negative, or the largest
// Duration when the sum would overflow.
func addSat(ds ...time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		if d > math.MaxInt64-sum {
			return math.MaxInt64
		}
		sum += d
	}
	return sum
}
