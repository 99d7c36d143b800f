package hub

import (
	"context"
	"errors"
	"iter"

	"github.com/hubcli/hub/events"
)

// errStopIteration is the sink error with which Events stops a run whose
// consumer left the loop.
var errStopIteration = errors.New("hub: the caller stopped iterating over the run's events")

// Events runs req like Run and yields its events as they happen, for a
// range-over-func loop:
//
//	for ev, err := range Events(ctx, req) {
//		if err != nil { // the run failed: ev is its run.finished
//			…
//		}
//	}
//
// The last event is always run.finished; it comes with a nil error when the
// run was ok, else with its *events.Error (bin, reason, message, hint), so
// that the loop body sees the failure where it happens. Every other event
// comes with a nil error. Leaving the loop early stops the agent as a
// failing Sink does (SIGTERM, grace, SIGKILL) and returns once its process
// tree is gone; nothing more is yielded. The loop body runs on the
// caller's goroutine, one event at a time.
func Events(ctx context.Context, req Request, opts ...Option) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		left := false
		Run(ctx, req, func(ev events.Event) error {
			if left {
				return errStopIteration
			}
			var err error
			if rf, ok := ev.Body.(events.RunFinished); ok && rf.Error != nil {
				err = rf.Error
			}
			if !yield(ev, err) {
				left = true
				return errStopIteration
			}
			return nil
		}, opts...)
	}
}
