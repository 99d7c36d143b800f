package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// The causes with which hub stops a run, as Exit.Cause and record.Cause
// carry them.
var (
	ErrWallTimeout = budget.ErrWallTimeout
	ErrIdleTimeout = budget.ErrIdleTimeout
	ErrLinger      = budget.ErrLinger
	ErrKilled      = errors.New("hub: killed at the caller's request (WithKill)")
)

// sinkCause is a failing Sink.
type sinkCause struct{ err error }

func (s sinkCause) Error() string { return "hub: event sink: " + s.err.Error() }

// record is everything the verdict is decided from: how far the run got,
// what stopped it, what the decoder made of the agent's output and exit,
// and the meter's totals.
type record struct {
	// Start is why no agent process ran (unknown agent, not installed, a
	// refused request, a failed spawn), nil when one ran.
	Start error
	// Guard is the guard's cause that stopped the run, nil if none.
	Guard *events.Error
	// Cause is why hub signalled the agent (a timer, the caller's context,
	// WithKill, a failed sink), or what cancelled the version probe; nil
	// when nothing did.
	Cause error
	// Terminal says the agent had reached its terminal event before it was
	// stopped: a stop then only ended its lingering.
	Terminal bool
	// Outcome is the decoder's verdict, given how the process ended.
	Outcome normalize.Outcome
	// ExitCode and Signal are how the agent process ended.
	ExitCode *int
	Signal   string
	Limits   budget.Limits
	// Usage, CostSource, Turns and ToolCalls are the meter's totals.
	Usage      events.Tokens
	CostSource events.CostSource
	Turns      int64
	ToolCalls  int64
	// AnswerCalls are the calls of the CLI's answer tool among ToolCalls
	// (Info.AnswerTool): no tool steps.
	AnswerCalls int64
	// ToolCallsDenied counts the tool calls the CLI refused.
	ToolCallsDenied int64
	// SinkErr is the sink's first error: the caller did not get the events.
	SinkErr error
	// Partial says Outcome.Text is the final-answer resume's partial answer.
	Partial bool
	// Schema says the run has a --schema: run.finished carries structured.
	// Structured is the answer's value once it matched; Invalid the error of
	// an answer that did not (agent_failed/invalid_output).
	Schema     bool
	Structured json.RawMessage
	Invalid    *events.Error
	// Note, when not "", says what hub was doing when the run failed (a
	// repair of its answer): it ends the error message of a failed run.
	Note string
	// Sandbox is what the sandbox step found (Request.Sandbox), nil
	// without a sandbox.
	Sandbox *sandboxOutcome
	// Now is the run's clock at its end, for the times the agent gave
	// (Outcome.RetryAt).
	Now time.Time
}

// decide is the one place that decides how a run ended (SPEC §4): ok, bin
// and reason, and the totals run.finished reports. In order:
//
//  1. a failed sink: internal (the caller did not get the run's events);
//  2. hub's own cause: a guard (budget, tool steps, retries, fail-fast), a
//     timeout, the caller's cancel or deadline, WithKill — unless the agent
//     had already reached its terminal event, when the stop only ended its
//     lingering (a linger_kill notice, returned) and the agent's outcome
//     stands; the probe's or start's own error when no agent ran;
//  3. the decoder's outcome, which applies the rest of the order itself:
//     the agent's structured error fields, its terminal event, then exit
//     status and stderr;
//  4. the agent's own final totals (Claude Code's result) replace the
//     meter's, and an ok run whose final totals are over a limit is
//     budget_exceeded;
//  5. with a --schema, an ok run's answer must have matched it: else the
//     run is agent_failed/invalid_output (structured is null);
//  6. in a sandboxed run, a change to a protected path fails the run
//     whatever else happened (permission_denied/protected_path); a
//     conflict on --apply, a refused approval or a change hub could not
//     read fails a run that was ok;
//  7. a failure without an error is internal (a hub bug, named as such);
//  8. an ok run whose agent exited nonzero or by a signal on its own, after
//     its terminal event, stays ok with an exit_status notice (returned):
//     every decoder judges the terminal event first, whatever the exit
//     (OpenCode's last step that finished with reason "stop" is its
//     terminal event).
//
// DurationMS, RunID and the like are not its business; decide is pure.
func decide(rec record) (events.RunFinished, *events.Notice) {
	out := rec.Outcome
	var notice *events.Notice
	switch {
	case rec.Start != nil:
		out = normalize.Outcome{Error: asError(rec.Start)}
		if e := hubCause(rec.Cause, rec.Limits); e != nil {
			out.Error = e
		}
	case rec.Guard != nil:
		out.OK, out.Error = false, rec.Guard
	case rec.Cause == nil:
	case rec.Terminal:
		notice = &events.Notice{Kind: events.NoticeLingerKill, Message: fmt.Sprintf(
			"agent had not exited after its terminal event; hub stopped it (%s)", lingerReason(rec.Cause, rec.Limits))}
	default:
		if e := hubCause(rec.Cause, rec.Limits); e != nil {
			if r := rec.Outcome.Retrying; r != nil && e.Bin == events.BinTimeout {
				c := *e
				c.Message += fmt.Sprintf(" while the agent was retrying a failed model call (%s/%s: %s)", r.Bin, r.Reason, r.Message)
				e = &c
			}
			out.OK, out.Error = false, e
		}
	}
	usage, source, turns := rec.Usage, rec.CostSource, rec.Turns
	if t := out.Totals; t != nil {
		usage, source = t.Usage.Sane(), t.CostSource
		if usage.CostUSD == nil {
			source = events.CostUnknown
		}
		if t.Turns > 0 {
			turns = t.Turns
		}
		if out.OK && out.Error == nil {
			if over := budget.ExceededTotals(rec.Limits, usage, turns, rec.ToolCalls-rec.AnswerCalls); over != nil {
				out.OK, out.Error = false, over
			}
		}
	}
	rf := events.RunFinished{
		OK:              out.OK && out.Error == nil,
		Error:           out.Error,
		Text:            out.Text,
		ExitCode:        rec.ExitCode,
		Turns:           turns,
		ToolCalls:       rec.ToolCalls,
		ToolCallsDenied: rec.ToolCallsDenied,
		Usage:           usage,
		CostUSD:         usage.CostUSD,
		CostSource:      source,
		Partial:         rec.Partial,
	}
	if rec.Schema && rf.OK {
		switch {
		case rec.Invalid != nil:
			rf.OK, rf.Error = false, rec.Invalid
		case rec.Structured == nil:
			rf.OK, rf.Error = false, events.NewError(events.BinInternal, "", "report this as a hub bug", "the run's answer was not checked against --schema")
		default:
			rf.Structured = rec.Structured
		}
	}
	if sb := rec.Sandbox; sb != nil {
		rf.Diff, rf.DiffBytes, rf.Applied = sb.Diff, sb.DiffBytes, sb.Applied
		if e := sb.Err; e != nil && (rf.OK || e.Reason == events.ReasonProtectedPath) {
			if !rf.OK && rf.Error != nil {
				c := *e
				c.Message += fmt.Sprintf(" (the run had also failed: %s/%s: %s)", rf.Error.Bin, rf.Error.Reason, rf.Error.Message)
				e = &c
			}
			rf.OK, rf.Error, rf.Structured = false, e, nil
		}
	}
	if e := rf.Error; e != nil && e.Bin == events.BinUnavailable && (e.Reason == events.ReasonQuota || e.Reason == events.ReasonRateLimit) {
		rf.Error = whenLimitLifts(e, out.RetryAt, rec.Now)
	}
	if rec.SinkErr != nil {
		rf.OK, rf.Partial = false, false
		rf.Error = events.NewError(events.BinInternal, "", "check the consumer of hub's output", "event sink: %v", rec.SinkErr)
	}
	if !rf.OK && rf.Error == nil {
		rf.Error = events.NewError(events.BinInternal, "", "report this as a hub bug", "run failed without an error")
	}
	if !rf.OK && rec.Note != "" && rf.Error != rec.Invalid {
		e := *rf.Error
		e.Message += " (" + rec.Note + ")"
		rf.Error = &e
	}
	if rf.OK && notice == nil && rec.Cause == nil && (rec.Signal != "" || rec.ExitCode != nil && *rec.ExitCode != 0) {
		notice = exitNotice(rec.ExitCode, rec.Signal)
	}
	if out.SessionID != "" {
		rf.SessionID = &out.SessionID
	}
	if rec.Schema && !rf.OK {
		rf.Structured = json.RawMessage("null")
	}
	if rec.Signal != "" {
		rf.Signal = &rec.Signal
	}
	return rf, notice
}

// whenLimitLifts says in a quota or rate-limit error whether waiting will
// help (SPEC §4): a limit the agent says lifts at a time (retryAt, given
// now) sets retry_after_s to the wait, and a quota that lifts on a clock (a
// plan's usage limit) is a rate_limit, retryable then; a quota with no time
// is one waiting will not lift (credits, billing, plan).
func whenLimitLifts(e *events.Error, retryAt func(time.Time) time.Time, now time.Time) *events.Error {
	c := *e
	if c.RetryAfterS != nil && (*c.RetryAfterS <= 0 || *c.RetryAfterS > normalize.MaxWaitS) {
		c.RetryAfterS = nil // not a wait anyone means
	}
	if retryAt != nil && !now.IsZero() {
		if at := retryAt(now); at.After(now) && at.Sub(now).Seconds() <= normalize.MaxWaitS {
			wait := at.Sub(now).Seconds()
			if c.RetryAfterS == nil || *c.RetryAfterS < wait {
				c.RetryAfterS = &wait
			}
		}
	}
	switch {
	case c.RetryAfterS != nil && *c.RetryAfterS > 0:
		if c.Reason == events.ReasonQuota {
			c.Reason, c.Retryable = events.ReasonRateLimit, events.Retryable(events.BinUnavailable, events.ReasonRateLimit)
		}
		c.Message += fmt.Sprintf(" (the limit lifts in %s: waiting helps)", time.Duration(*c.RetryAfterS*float64(time.Second)).Round(time.Second))
	case c.Reason == events.ReasonQuota:
		c.Message += " (a quota that waiting will not lift: credits, billing or the plan)"
	}
	return &c
}

// exitNotice is the exit_status notice of an ok run whose agent, on its
// own, exited with a nonzero status or was ended by a signal after its
// terminal event.
func exitNotice(code *int, signal string) *events.Notice {
	how, data := "", map[string]any{}
	if signal != "" {
		how, data["signal"] = "was ended by "+signal, signal
	} else {
		how, data["exit_code"] = fmt.Sprintf("exited with status %d", *code), *code
	}
	d, _ := json.Marshal(data)
	return &events.Notice{Kind: events.NoticeExitStatus, Data: d, Message: "the agent " + how +
		" after its terminal event reported success; the terminal event decides (its stderr notices may say why)"}
}

// hubCause maps the reason hub stopped the agent to its error, or nil when
// hub did not stop it or stopped it for a reason the decoder judges (the
// linger limit) or decide reports itself (a failed sink).
func hubCause(cause error, lim budget.Limits) *events.Error {
	var sc sinkCause
	var he *events.Error
	switch {
	case cause == nil, errors.Is(cause, ErrLinger), errors.As(cause, &sc):
		return nil
	case errors.Is(cause, ErrWallTimeout):
		return events.NewError(events.BinTimeout, events.ReasonWall,
			"raise --timeout, or split the task", "run exceeded --timeout %s", lim.Timeout)
	case errors.Is(cause, ErrIdleTimeout):
		return events.NewError(events.BinTimeout, events.ReasonIdle,
			"the agent or its provider hung; retry, or raise --idle-timeout",
			"no output from the agent for %s (--idle-timeout)", lim.IdleTimeout)
	case errors.Is(cause, context.DeadlineExceeded):
		return events.NewError(events.BinTimeout, events.ReasonWall,
			"give the run a later deadline", "the caller's deadline passed")
	case errors.As(cause, &he): // the caller chose the error
		return he
	default:
		return events.NewError(events.BinCancelled, events.ReasonCaller,
			"nothing to do if you meant to stop it; run again to retry", "run cancelled by the caller: %v", cause)
	}
}

func lingerReason(cause error, lim budget.Limits) string {
	switch {
	case errors.Is(cause, ErrLinger):
		return fmt.Sprintf("--linger %s", lim.LingerOrDefault())
	case errors.Is(cause, ErrWallTimeout):
		return "--timeout"
	case errors.Is(cause, ErrIdleTimeout):
		return "--idle-timeout"
	}
	return cause.Error()
}

// asError is err as a run error: itself when it is one, else internal.
func asError(err error) *events.Error {
	var he *events.Error
	if errors.As(err, &he) {
		return he
	}
	return events.NewError(events.BinInternal, "", "report this as a hub bug", "%v", err)
}
