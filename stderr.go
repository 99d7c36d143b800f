package hub

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// MaxStderrLine is how many bytes of one stderr line a stderr notice
// carries: 2,000 (after terminal escapes are removed), as a non_json_output
// notice does; the notice says how long the line was when it was cut. At
// most 64 KiB of one line is held while it is read; the rest is counted.
const MaxStderrLine = 2000

// stderrHold bounds the bytes of one unfinished stderr line hub holds.
const stderrHold = 64 << 10

// stderrLines turns the agent's stderr into notices of kind stderr, one per
// non-blank line (SPEC §3), in the order they arrive relative to the
// stdout events: a live run's stderr is read on a goroutine of its own,
// which sends each notice holding the stream's lock (runLock). At most
// MaxNoticesPerKind are sent; the rest are counted (flood.go). Each is
// redacted like every other event. stderr is still kept whole (its last 64
// KiB) for the decoder's verdict.
type stderrLines struct {
	lock *runLock // nil in a replay, which has one goroutine
	s    *stream
	// stop stops the agent when a stderr line's event stopped the stream
	// (a guard's cause): the stdout loop, which does it for stdout's
	// events, may be waiting for a line that never comes. nil in a replay.
	stop func(error)
	buf  []byte
	size int // bytes of the current line, held or not
	dst  []events.Body
	// panicked is what a panic in the sink or a guard, called from the
	// stderr goroutine, panicked with: the agent is stopped, later lines
	// are dropped, and the run's goroutine panics with it once the agent
	// is gone (as a panic on its own goroutine does).
	panicked any
}

// Write implements io.Writer for proc.Spec.Stderr. It never fails.
func (w *stderrLines) Write(p []byte) (int, error) {
	if w.lock != nil {
		w.lock.mu.Lock()
		defer w.lock.mu.Unlock()
	}
	n := len(p)
	if w.panicked != nil {
		return n, nil
	}
	defer w.recover()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := stderrHold - len(w.buf); room > 0 {
			w.buf = append(w.buf, chunk[:min(room, len(chunk))]...)
		}
		w.size += len(chunk)
		if i < 0 {
			break
		}
		w.line()
		p = p[i+1:]
	}
	return n, nil
}

// recover catches a panic of the sink or a guard on the stderr goroutine
// of a live run (see panicked); in a replay the panic goes on.
func (w *stderrLines) recover() {
	if w.lock == nil {
		return
	}
	if p := recover(); p != nil {
		w.panicked = p
		if w.stop != nil {
			w.stop(errPanic)
		}
	}
}

// flush sends the last line when stderr ended without a newline.
func (w *stderrLines) flush() {
	if w.lock != nil {
		w.lock.mu.Lock()
		defer w.lock.mu.Unlock()
	}
	if w.size > 0 && w.panicked == nil {
		w.line()
	}
}

// line sends the held line as a notice unless it is blank once cleaned of
// terminal control (a spinner, colours, a bare "\r").
func (w *stderrLines) line() {
	text := strings.TrimSpace(normalize.CleanText(string(w.buf)))
	size := w.size
	w.buf, w.size = w.buf[:0], 0
	if text == "" || w.s.halted() {
		// After a guard stopped the run nothing more of the agent's is
		// forwarded, stdout's or stderr's (its lines are still drained).
		return
	}
	if sd, ok := w.s.dec.(normalize.StderrDecoder); ok {
		var took bool
		if w.dst, took = sd.DecodeStderr(w.dst[:0], text); took {
			w.s.publish(w.dst)
			clear(w.dst)
			if w.s.over != nil && w.stop != nil {
				w.stop(w.s.over)
			}
			return
		}
	}
	msg := normalize.Shorten(text, MaxStderrLine)
	if msg != text || size > stderrHold {
		// The cut end may be the start of a credential too short to
		// match: redacted as a cut tool output is.
		msg = w.s.secrets.CutText(strings.TrimSuffix(msg, "…")) + fmt.Sprintf("… (line of %d bytes cut)", size)
	}
	w.s.emit(events.Notice{Kind: events.NoticeStderr, Message: msg})
}

// runLock is the lock that lets the stderr goroutine send events into a
// live run's stream (which one goroutine uses at a time): the run's own
// goroutine holds it from before the agent starts (so run.started comes
// first) and lets it go only while it waits for the agent's stdout
// (lockedReader) and once it has read stdout to the end.
type runLock struct {
	mu   sync.Mutex
	held bool // by the run's goroutine; only it reads or writes held
}

func (l *runLock) lock() {
	if !l.held {
		l.mu.Lock()
		l.held = true
	}
}

func (l *runLock) unlock() {
	if l.held {
		l.held = false
		l.mu.Unlock()
	}
}

// lockedReader lets the run lock go while a Read of the agent's stdout
// waits. Reads are large (the framer's buffer), so it costs a lock per read,
// not per line.
type lockedReader struct {
	r io.Reader
	l *runLock
}

func (r lockedReader) Read(p []byte) (int, error) {
	r.l.unlock()
	defer r.l.lock()
	return r.r.Read(p)
}
