package hubtemporal

import (
	"errors"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
)

// FanOutName is the name under which Register registers FanOut.
const FanOutName = "hub.FanOut"

// Defaults of FanOutInput's activity settings.
const (
	DefaultHeartbeatTimeout = 30 * time.Second
	// DefaultStartToClose is the activity's StartToCloseTimeout when the
	// task has no Limits.Timeout.
	DefaultStartToClose = 2 * time.Hour
	DefaultMaxAttempts  = 3
)

// Target is one agent of a fan-out: what differs from the task per agent.
// Empty fields take the task's.
type Target struct {
	Agent string   `json:"agent"`
	Model string   `json:"model,omitempty"`
	Bin   string   `json:"bin,omitempty"`
	Args  []string `json:"args,omitempty"`
	Env   []string `json:"env,omitempty"` // added to the task's
}

// FanOutInput is FanOut's input: one task, the agents to run it on, and
// the activity's settings (zero for the defaults).
type FanOutInput struct {
	Task   Request  `json:"task"`
	Agents []Target `json:"agents"`
	// HeartbeatTimeout is the activity's; also how soon a cancellation
	// reaches a run. 0 means DefaultHeartbeatTimeout.
	HeartbeatTimeout time.Duration `json:"heartbeat_timeout,omitempty"`
	// StartToClose is the activity's StartToCloseTimeout; 0 means the
	// task's Limits.Timeout plus its grace and a minute (hub then reports
	// the wall timeout itself, as timeout/wall), or DefaultStartToClose.
	StartToClose time.Duration `json:"start_to_close,omitempty"`
	// MaxAttempts bounds the attempts per agent, retries included; 0 means
	// DefaultMaxAttempts. Only retryable bins are retried at all.
	MaxAttempts int32 `json:"max_attempts,omitempty"`
}

// AgentResult is one agent's outcome in a fan-out: Finished is its
// run.finished (on failure too, from the error's details, when the run got
// that far), Error the activity's error text and ErrorType its type
// ("<bin>/<reason>" for a failed run, else Temporal's, such as a timeout),
// both "" when the run was ok.
type AgentResult struct {
	Agent     string              `json:"agent"`
	Model     string              `json:"model,omitempty"`
	OK        bool                `json:"ok"`
	Finished  *events.RunFinished `json:"finished"`
	Error     string              `json:"error,omitempty"`
	ErrorType string              `json:"error_type,omitempty"`
}

// FanOutResult is FanOut's value: one AgentResult per target, in the
// input's order.
type FanOutResult struct {
	Results []AgentResult `json:"results"`
}

// FanOut is a sample workflow: it runs in.Task on every agent of in.Agents
// at once, as one hub activity each (ActivityName), and collects every
// run.finished, or the error of each agent that failed. A failed agent does
// not fail the workflow; a cancelled workflow cancels every run, waits for
// each to stop (WaitForCancellation) and returns the cancellation.
//
// Retries: an activity's failure is retried only when hub's bin is
// retryable (rate limits, overloaded or failing servers, network errors,
// idle timeouts), after the provider's retry-after when it gave one, else
// with exponential backoff from 10s; at most MaxAttempts attempts.
func FanOut(ctx workflow.Context, in FanOutInput) (FanOutResult, error) {
	if len(in.Agents) == 0 {
		return FanOutResult{}, temporal.NewNonRetryableApplicationError("hub.FanOut: no agents", "invalid_input/bad_request", nil)
	}
	ao := workflow.ActivityOptions{
		StartToCloseTimeout: startToClose(in),
		HeartbeatTimeout:    orDefault(in.HeartbeatTimeout, DefaultHeartbeatTimeout),
		WaitForCancellation: true,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    10 * time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    5 * time.Minute,
			MaximumAttempts:    max(in.MaxAttempts, 0),
		},
	}
	if ao.RetryPolicy.MaximumAttempts == 0 {
		ao.RetryPolicy.MaximumAttempts = DefaultMaxAttempts
	}
	ctx = workflow.WithActivityOptions(ctx, ao)

	futures := make([]workflow.Future, len(in.Agents))
	for i, t := range in.Agents {
		futures[i] = workflow.ExecuteActivity(ctx, ActivityName, in.Task.For(t))
	}
	out := FanOutResult{Results: make([]AgentResult, len(in.Agents))}
	for i, f := range futures {
		r := &out.Results[i]
		r.Agent, r.Model = in.Agents[i].Agent, in.Task.For(in.Agents[i]).Model
		var fin events.RunFinished
		err := f.Get(ctx, &fin)
		if err == nil {
			r.OK, r.Finished = true, &fin
			continue
		}
		r.Error = err.Error()
		r.Finished = finishedOf(err)
		var app *temporal.ApplicationError
		if errors.As(err, &app) {
			r.ErrorType = app.Type()
		}
	}
	if err := ctx.Err(); err != nil {
		return out, temporal.NewCanceledError(out)
	}
	return out, nil
}

// For returns the task r run on target t: t's non-empty fields replace
// r's, and t.Env is added to r.Env.
func (r Request) For(t Target) Request {
	r.Agent = t.Agent
	if t.Model != "" {
		r.Model = t.Model
	}
	if t.Bin != "" {
		r.Bin = t.Bin
	}
	if t.Args != nil {
		r.Args = t.Args
	}
	if len(t.Env) > 0 {
		r.Env = append(append([]string(nil), r.Env...), t.Env...)
	}
	return r
}

// finishedOf returns the run.finished carried by an activity's error (an
// application or canceled error from Run), nil when there is none.
func finishedOf(err error) *events.RunFinished {
	var fin events.RunFinished
	var app *temporal.ApplicationError
	if errors.As(err, &app) && app.HasDetails() && app.Details(&fin) == nil {
		return &fin
	}
	var canceled *temporal.CanceledError
	if errors.As(err, &canceled) && canceled.HasDetails() && canceled.Details(&fin) == nil {
		return &fin
	}
	return nil
}

// startToClose is the activity's StartToCloseTimeout for in (see
// FanOutInput.StartToClose).
func startToClose(in FanOutInput) time.Duration {
	if in.StartToClose > 0 {
		return in.StartToClose
	}
	if t := in.Task.Limits.Timeout; t > 0 {
		return t + budget.Limits{Grace: in.Task.Limits.Grace}.GraceOrDefault() + hub.StopWait + time.Minute
	}
	return DefaultStartToClose
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Register registers a's Run as ActivityName and FanOut as FanOutName on r
// (a worker.Worker, or a test environment).
func Register(r worker.Registry, a *Activities) {
	r.RegisterActivityWithOptions(a.Run, activity.RegisterOptions{Name: ActivityName})
	r.RegisterWorkflowWithOptions(FanOut, workflow.RegisterOptions{Name: FanOutName})
}
