package budget

import (
	"errors"
	"sync"
	"time"
)

// The causes with which Timers stop a run.
var (
	ErrWallTimeout = errors.New("wall-clock timeout (--timeout)")
	ErrIdleTimeout = errors.New("idle timeout (--idle-timeout)")
	ErrLinger      = errors.New("agent did not exit after its terminal event (--linger)")
)

// Timers are the time limits of one agent process (SPEC §5): the wall-clock
// Timeout, counted from the run's start; the IdleTimeout, counted from the
// agent's last output; and the Linger, counted from the agent's terminal
// event. When one runs out, Timers call fire with its cause —
// ErrWallTimeout, ErrIdleTimeout or ErrLinger — on a goroutine of their
// own; fire must be safe to call more than once (a context.CancelCauseFunc
// is) and must not call the Timers' methods. Zero limits never fire, except
// Linger, whose zero is DefaultLinger. Timers are safe for concurrent use.
type Timers struct {
	lim  Limits
	fire func(error)

	mu      sync.Mutex
	stopped bool
	wall    *time.Timer
	idle    *time.Timer // nil without an IdleTimeout
	paused  bool        // idle is not counting (see Pause)
	held    bool        // idle is not counting: no turn of a session runs (see Hold)
	linger  *time.Timer // running after a terminal event
}

// StartTimers starts the wall-clock and idle limits of l for a run that
// began at began (the wall-clock limit counts from there, so what the run
// spent before, such as probing the agent's version, counts too).
func StartTimers(l Limits, began time.Time, fire func(error)) *Timers {
	t := &Timers{lim: l, fire: fire}
	t.mu.Lock()
	defer t.mu.Unlock()
	if l.Timeout > 0 {
		t.wall = time.AfterFunc(l.Timeout-time.Since(began), t.firing(ErrWallTimeout))
	}
	if l.IdleTimeout > 0 {
		t.idle = time.AfterFunc(l.IdleTimeout, t.firing(ErrIdleTimeout))
	}
	return t
}

// firing returns the timer function of the limit with cause: it calls fire
// unless the Timers were stopped, holding the lock so that Stop waits for a
// firing under way.
func (t *Timers) firing(cause error) func() {
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if !t.stopped {
			t.fire(cause)
		}
	}
}

// Output says the agent wrote something: the idle limit counts again from
// now, unless it is paused.
func (t *Timers) Output() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.idle != nil && !t.paused && !t.held && !t.stopped {
		t.idle.Reset(t.lim.IdleTimeout)
	}
}

// Hold stops the idle limit (on) while a live session has no turn running:
// the agent then waits for hub's next prompt and its silence is no stall.
// Hold(false), at a turn's start, counts it again from now. Pause and
// Resume do not undo a Hold.
func (t *Timers) Hold(on bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.held = on
	switch {
	case t.idle == nil || t.stopped:
	case on:
		t.idle.Stop()
	case !t.paused:
		t.idle.Reset(t.lim.IdleTimeout)
	}
}

// Pause stops the idle limit while hub, not the agent, is busy (handing
// events to a slow consumer); Resume counts it again from the start.
func (t *Timers) Pause() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.idle != nil {
		t.idle.Stop()
		t.paused = true
	}
}

// Resume ends a Pause: the idle limit counts from now.
func (t *Timers) Resume() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.paused = false
	if t.idle != nil && !t.held && !t.stopped {
		t.idle.Reset(t.lim.IdleTimeout)
	}
}

// Terminal says whether the agent's last event left it finished (its
// terminal event): the linger limit starts at the first such event and is
// called off when the agent goes on after it (a new step). It reports
// whether the linger limit is running.
func (t *Timers) Terminal(done bool) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.stopped:
	case done && t.linger == nil:
		t.linger = time.AfterFunc(t.lim.LingerOrDefault(), t.firing(ErrLinger))
	case !done && t.linger != nil:
		t.linger.Stop()
		t.linger = nil
	}
	return t.linger != nil
}

// Stop stops every limit: none fires after it returns.
func (t *Timers) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopped = true
	for _, tm := range []*time.Timer{t.wall, t.idle, t.linger} {
		if tm != nil {
			tm.Stop()
		}
	}
}
