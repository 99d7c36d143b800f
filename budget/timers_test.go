package budget_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hubcli/hub/budget"
)

// causes records what Timers fire, and when (fake time inside a synctest
// bubble, from its start).
type causes struct {
	mu    sync.Mutex
	start time.Time
	got   []string
}

func (c *causes) fire(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, time.Since(c.start).String()+" "+err.Error())
}

func (c *causes) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.got...)
}

func wantFired(t *testing.T, c *causes, want ...string) {
	t.Helper()
	synctest.Wait()
	got := c.list()
	if len(got) != len(want) {
		t.Fatalf("fired %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("firing %d = %q, want %q", i, got[i], want[i])
		}
	}
}

var (
	wall   = budget.ErrWallTimeout.Error()
	idle   = budget.ErrIdleTimeout.Error()
	linger = budget.ErrLinger.Error()
)

// TestTimersWall: the wall-clock limit counts from the run's start, time
// spent before StartTimers included, whatever the agent writes.
func TestTimersWall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &causes{start: time.Now()}
		began := time.Now()
		time.Sleep(3 * time.Second) // the version probe
		tm := budget.StartTimers(budget.Limits{Timeout: 10 * time.Second}, began, c.fire)
		defer tm.Stop()
		for range 6 {
			time.Sleep(time.Second)
			tm.Output()
		}
		wantFired(t, c)
		time.Sleep(time.Second + time.Nanosecond)
		wantFired(t, c, "10s "+wall)
	})
}

// TestTimersIdle: output re-arms the idle limit; a pause (hub busy with a
// slow consumer) does not count as the agent's silence, however long.
func TestTimersIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &causes{start: time.Now()}
		tm := budget.StartTimers(budget.Limits{IdleTimeout: 2 * time.Second}, time.Now(), c.fire)
		defer tm.Stop()
		time.Sleep(1500 * time.Millisecond)
		tm.Output() // idle counts from 1.5 s
		time.Sleep(1500 * time.Millisecond)
		tm.Pause()
		time.Sleep(time.Minute) // the consumer is slow
		tm.Output()             // ignored while paused
		tm.Resume()             // idle counts from 63 s
		wantFired(t, c)
		time.Sleep(2 * time.Second)
		wantFired(t, c, "1m5s "+idle)
	})
}

// TestTimersLinger: the linger limit starts at the terminal event, is called
// off when the agent goes on after it, and starts again at the next one.
func TestTimersLinger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &causes{start: time.Now()}
		tm := budget.StartTimers(budget.Limits{Linger: 3 * time.Second}, time.Now(), c.fire)
		defer tm.Stop()
		if tm.Terminal(false) {
			t.Error("Terminal(false) before any terminal event = running")
		}
		if !tm.Terminal(true) {
			t.Error("Terminal(true) = not running")
		}
		time.Sleep(2 * time.Second)
		tm.Terminal(true) // a second terminal event does not restart it
		time.Sleep(500 * time.Millisecond)
		if tm.Terminal(false) { // a new step at 2.5 s
			t.Error("Terminal(false) after a new step = running")
		}
		time.Sleep(10 * time.Second)
		wantFired(t, c)
		tm.Terminal(true) // at 12.5 s
		time.Sleep(3 * time.Second)
		wantFired(t, c, "15.5s "+linger)
	})
}

// TestTimersDefaultsAndStop: zero limits never fire but Linger's default
// does; nothing fires after Stop.
func TestTimersDefaultsAndStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &causes{start: time.Now()}
		tm := budget.StartTimers(budget.Limits{}, time.Now(), c.fire)
		time.Sleep(time.Hour)
		wantFired(t, c)
		tm.Terminal(true)
		time.Sleep(budget.DefaultLinger)
		wantFired(t, c, "1h0m5s "+linger)
		tm.Stop()

		c2 := &causes{start: time.Now()}
		tm2 := budget.StartTimers(budget.Limits{Timeout: time.Second, IdleTimeout: time.Second}, time.Now(), c2.fire)
		tm2.Terminal(true)
		tm2.Stop()
		tm2.Output()
		tm2.Resume()
		tm2.Terminal(true)
		time.Sleep(time.Hour)
		wantFired(t, c2)
	})
}

// TestTimersHold: between a session's turns (Hold) the agent's silence is
// no stall, whatever the read loop's Pause and Resume do meanwhile; the
// next turn (Hold(false)) counts it again from its start.
func TestTimersHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &causes{start: time.Now()}
		tm := budget.StartTimers(budget.Limits{IdleTimeout: 2 * time.Second}, time.Now(), c.fire)
		defer tm.Stop()
		time.Sleep(time.Second)
		tm.Hold(true) // the turn ended at 1 s
		tm.Pause()    // the read loop hands the last line on
		tm.Resume()
		tm.Output()
		time.Sleep(10 * time.Minute) // nobody sends a prompt
		wantFired(t, c)
		tm.Hold(false) // the next turn starts at 10m1s
		time.Sleep(2*time.Second - time.Nanosecond)
		wantFired(t, c)
		time.Sleep(time.Nanosecond)
		wantFired(t, c, "10m3s "+idle)
	})
}
