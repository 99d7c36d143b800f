package hub

import (
	"fmt"

	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Guard watches a run's events and may stop the run. Check sees every event
// decoded from the agent, in order, right after the sink was given it
// (sanitized and counted by the meter, before redaction). A non-nil error
// stops the run at that event: nothing later from the agent is forwarded,
// hub stops the agent's process tree, and run.finished carries the error as
// hub's own cause (SPEC §4), whatever the agent did afterwards.
//
// A run's guards are checked in this order, and the first error wins:
//
//  1. the budget meter: cost, tokens and turns (budget.Limits), at usage
//     events; it also sends the cost_unknown notice when --max-cost cannot
//     be checked yet;
//  2. the tool-step cap (Limits.MaxToolSteps), at tool.started;
//  3. the agent-retry count (Request.AgentRetries), at retry notices;
//  4. fail-fast: the decoder's request to stop an agent that retries what
//     retrying cannot fix (HTTP 401/403; normalize.Status.Abort), and its
//     other aborts (a resume that opened another session);
//  5. the permission watch: a tool call outside Request.Permission, or
//     under workspace-write a write or edit whose path resolves outside the
//     working directory (permission_denied/effect_not_granted);
//  6. the caller's guards (WithGuard), in the order given.
//
// A Guard belongs to one run (it may count) and is used by one goroutine at
// a time.
type Guard interface {
	Check(b events.Body) *events.Error
}

// GuardFunc is a Guard from a function.
type GuardFunc func(events.Body) *events.Error

// Check implements Guard.
func (f GuardFunc) Check(b events.Body) *events.Error { return f(b) }

// guards returns the built-in guards of one attempt with limits lim, in the
// order Guard documents, then the caller's.
func (s *stream) guardsFor(req Request, lim budget.Limits, dec normalize.Decoder, warned *bool, extra []Guard) []Guard {
	gs := []Guard{
		&meterGuard{s: s, lim: lim, agent: req.Agent, warned: warned},
		toolStepGuard{m: &s.meter, lim: lim},
		&retryGuard{max: req.AgentRetries},
		abortGuard{dec: dec},
	}
	return append(gs, extra...)
}

// meterGuard stops a run whose observed cost, tokens or turns go above the
// limits (budget.Meter.Exceeded), at the usage event that crosses.
type meterGuard struct {
	s      *stream
	lim    budget.Limits
	agent  string
	warned *bool // the cost_unknown notice was sent (once per run)
}

func (g *meterGuard) Check(b events.Body) *events.Error {
	if _, ok := b.(events.Usage); !ok {
		return nil
	}
	if over := g.s.meter.Exceeded(g.lim); over != nil {
		return over
	}
	if !*g.warned && g.s.meter.CostUnenforceable(g.lim) {
		*g.warned = true
		g.s.emit(events.Notice{Kind: events.NoticeCostUnknown, Message: fmt.Sprintf(
			"--max-cost $%.4f cannot be checked yet: %s has reported no cost for its model calls (cost unknown); hub checks it once a cost is known, and --max-tokens still applies",
			g.lim.MaxCostUSD, g.agent)})
	}
	return nil
}

// toolStepGuard stops a run at the tool call numbered MaxToolSteps+1.
type toolStepGuard struct {
	m   *budget.Meter
	lim budget.Limits
}

func (g toolStepGuard) Check(b events.Body) *events.Error {
	if _, ok := b.(events.ToolStarted); !ok {
		return nil
	}
	// At a tool call only the tool count has changed: cost, tokens and
	// turns were checked at the usage events that changed them.
	return g.m.Exceeded(g.lim)
}

// retryGuard stops a run at the retry notice numbered AgentRetries+1 (see
// retriesExceeded).
type retryGuard struct {
	max *int
	n   int // retry notices seen
}

func (g *retryGuard) Check(b events.Body) *events.Error {
	if n, ok := b.(events.Notice); ok && n.Kind == events.NoticeRetry {
		g.n++
		return retriesExceeded(g.max, g.n, n)
	}
	return nil
}

// abortGuard stops a run the decoder asked to stop (normalize.Status.Abort).
type abortGuard struct{ dec normalize.Decoder }

func (g abortGuard) Check(events.Body) *events.Error { return g.dec.Status().Abort }
