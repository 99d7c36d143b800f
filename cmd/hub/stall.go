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

// stallGuard is hub's stdout (or stderr) while a run writes to it. A write
// blocks while the consumer reads slowly, as on any pipe — nothing is lost —
// until giveUp is closed: then a write still blocked (after stallLast, for
// a write that begins after giveUp) is abandoned and every later one fails
// at once, so the run ends instead of hanging on a pipe nobody reads. Safe
// for concurrent use.
type stallGuard struct {
	w      io.Writer
	giveUp <-chan struct{}

	mu  sync.Mutex
	err error
}

func (g *stallGuard) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.err != nil {
		return 0, g.err
	}
	// The write may outlive this call (abandoned, blocked in the kernel):
	// it gets its own copy of p.
	buf := append([]byte(nil), p...)
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := g.w.Write(buf)
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		return r.n, r.err
	case <-g.giveUp:
		select {
		case r := <-done:
			return r.n, r.err
		case <-time.After(stallLast):
		}
		g.err = errStalled
		return 0, g.err
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
