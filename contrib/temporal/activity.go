package hubtemporal

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/hubcli/hub"
	_ "github.com/hubcli/hub/adapters/all" // registers every agent hub knows
	"github.com/hubcli/hub/events"
)

// ActivityName is the name under which Register registers Activities.Run,
// and by which workflows (FanOut) call it.
const ActivityName = "hub.Run"

// DefaultHeartbeatEvery is how often Run records a heartbeat while nothing
// else prompts one, when neither Activities.HeartbeatEvery nor the
// activity's HeartbeatTimeout says otherwise.
const DefaultHeartbeatEvery = 10 * time.Second

// Activities holds the hub activity. Its zero value is ready to use; one
// value serves any number of concurrent activity executions (runs share
// nothing mutable).
type Activities struct {
	// HeartbeatEvery is the longest time between two heartbeats Run
	// records; 0 means a third of the activity's HeartbeatTimeout (clamped
	// to [100ms, DefaultHeartbeatEvery]), or DefaultHeartbeatEvery when the
	// activity has none. The SDK throttles what it sends to the server to
	// about 0.8 × HeartbeatTimeout, so recording often costs little.
	HeartbeatEvery time.Duration
	// Options, when not nil, returns extra run options for a request (for
	// example hub.WithGuard or hub.WithRawLog).
	Options func(Request) []hub.Option
}

// Progress is the detail of Run's heartbeats: where the run is. A workflow
// sees the last one in a heartbeat timeout's details, and a retried
// attempt in activity.GetHeartbeatDetails.
type Progress struct {
	RunID     string `json:"run_id"`
	Agent     string `json:"agent"`
	Attempt   int32  `json:"attempt"` // the activity's attempt, from 1
	PID       int    `json:"pid,omitempty"`
	SessionID string `json:"session_id,omitempty"`
	// Seq is the seq of the last event seen, -1 before the first.
	Seq        int64             `json:"seq"`
	Type       events.Type       `json:"type,omitempty"` // the last event's type
	Tokens     int64             `json:"tokens"`         // total tokens so far
	CostUSD    *float64          `json:"cost_usd"`       // total cost so far; nil when unknown
	CostSource events.CostSource `json:"cost_source,omitempty"`
	Turns      int64             `json:"turns"`
	ToolCalls  int64             `json:"tool_calls"`
	// Tool is the tool running now (the agent's own name), "" when none.
	Tool string `json:"tool,omitempty"`
}

// Run is the activity: it runs req through hub's library and returns its
// run.finished. It blocks until the agent's process tree is gone.
//
// While the run goes, Run records heartbeats carrying Progress: on
// run.started, session.started, every usage and tool event, and at least
// every HeartbeatEvery. When ctx is cancelled (Temporal delivers an
// activity's cancellation through a heartbeat's answer, so only when the
// activity has a HeartbeatTimeout) hub stops the agent's process group and
// Run returns a canceled error whose details are the run.finished.
//
// A failed run is returned as the error of ErrorOf: an application error
// of type "<bin>/<reason>", non-retryable unless hub says retrying can
// help, with retry_after_s as its next retry delay and the run.finished as
// its details. A request that does not map onto hub's (a bad permission
// name, an unreadable prices file) is invalid_input/bad_request.
func (a *Activities) Run(ctx context.Context, req Request) (events.RunFinished, error) {
	areq, err := req.Hub()
	if err != nil {
		fin := events.RunFinished{
			Error:      events.NewError(events.BinInvalidInput, events.ReasonBadRequest, "fix the request", "%v", err),
			CostSource: events.CostUnknown,
		}
		return events.RunFinished{}, ErrorOf(fin)
	}
	info := activity.GetInfo(ctx)
	hb := &heartbeat{ctx: ctx, p: Progress{Agent: req.Agent, Attempt: info.Attempt, Seq: -1}}

	every := a.heartbeatEvery(info.HeartbeatTimeout)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				hb.record()
			}
		}
	})

	var opts []hub.Option
	if a.Options != nil {
		opts = a.Options(req)
	}
	fin := hub.Run(ctx, areq, func(ev events.Event) error {
		if hb.observe(ev) {
			hb.record()
		}
		return nil
	}, opts...)
	close(stop)
	wg.Wait()

	if fin.OK {
		return fin, nil
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		// Temporal asked for the cancellation (or the worker is stopping):
		// a canceled error is what the SDK reports as the activity's
		// cancellation, rather than as a failure to retry.
		return events.RunFinished{}, temporal.NewCanceledError(fin)
	}
	return events.RunFinished{}, ErrorOf(fin)
}

// heartbeatEvery is the ticker period of Run's heartbeats.
func (a *Activities) heartbeatEvery(timeout time.Duration) time.Duration {
	switch {
	case a.HeartbeatEvery > 0:
		return a.HeartbeatEvery
	case timeout > 0:
		return min(max(timeout/3, 100*time.Millisecond), DefaultHeartbeatEvery)
	}
	return DefaultHeartbeatEvery
}

// heartbeat is a run's progress, updated by the sink (one goroutine at a
// time) and read by the ticker: its mutex guards p.
type heartbeat struct {
	ctx context.Context
	mu  sync.Mutex
	p   Progress
}

// observe folds ev into the progress and reports whether it is worth a
// heartbeat of its own (the SDK throttles what is sent).
func (h *heartbeat) observe(ev events.Event) (record bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := &h.p
	p.RunID, p.Seq, p.Type = ev.RunID, ev.Seq, ev.Type()
	switch b := ev.Body.(type) {
	case events.RunStarted:
		if b.PID != nil {
			p.PID = *b.PID
		}
		return true
	case events.SessionStarted:
		p.SessionID = b.SessionID
		return true
	case events.Usage:
		p.Tokens = b.Total.Sum()
		p.CostUSD = b.Total.CostUSD
		p.CostSource = b.CostSource
		p.Turns++
		return true
	case events.ToolStarted:
		p.Tool = b.Name
		p.ToolCalls++
		return true
	case events.ToolFinished:
		p.Tool = ""
		return true
	}
	return false
}

// record records a heartbeat with the progress so far.
func (h *heartbeat) record() {
	h.mu.Lock()
	p := h.p
	h.mu.Unlock()
	activity.RecordHeartbeat(h.ctx, p)
}

// ErrorOf returns fin's failure as a Temporal application error: its type
// is "<bin>/<reason>" ("internal" for the bin without reasons), its message
// the error's message, NonRetryable unless fin.Error.Retryable, NextRetryDelay
// fin.Error.RetryAfterS when set, and its one detail fin itself. It returns
// nil when fin is ok. A run that failed without an error object (which hub
// never reports) is an internal error.
func ErrorOf(fin events.RunFinished) error {
	if fin.OK {
		return nil
	}
	e := fin.Error
	if e == nil {
		e = events.NewError(events.BinInternal, "", "", "the run failed without an error object")
	}
	opts := temporal.ApplicationErrorOptions{
		NonRetryable: !e.Retryable,
		Details:      []any{fin},
	}
	if s := e.RetryAfterS; s != nil && *s > 0 {
		opts.NextRetryDelay = time.Duration(*s * float64(time.Second))
	}
	msg := e.Message
	if msg == "" {
		msg = e.Error()
	}
	return temporal.NewApplicationErrorWithOptions(msg, ErrorType(e), opts)
}

// ErrorType is the application error type of e: "<bin>/<reason>", or the
// bin alone when e has no reason (internal).
func ErrorType(e *events.Error) string {
	if e.Reason == "" {
		return string(e.Bin)
	}
	return string(e.Bin) + "/" + string(e.Reason)
}
