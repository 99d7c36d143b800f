package budget

import (
	"fmt"
	"time"

	"github.com/hubcli/hub/events"
)

// Defaults for the durations hub always applies.
const (
	// DefaultGrace is the time between SIGTERM and SIGKILL to the agent's
	// process group.
	DefaultGrace = 5 * time.Second
	// DefaultLinger is how long hub waits for the agent to exit after its
	// terminal event before killing it (the run still counts as ok).
	DefaultLinger = 5 * time.Second
	// DefaultFinalize is the time limit of the final-answer resume after a
	// run crossed --max-tool-steps.
	DefaultFinalize = time.Minute
)

// Limits are the limits of one run (SPEC §5). A zero field is unset: no
// limit for the limits (Timeout … MaxToolSteps), the default for the
// durations that have one (Grace, Linger, Finalize), where a negative value
// means none (SIGKILL at once, kill at the terminal event, no final-answer
// resume).
type Limits struct {
	Timeout      time.Duration // wall-clock limit for the whole run
	IdleTimeout  time.Duration // longest time without a stdout byte
	MaxCostUSD   float64       // observed total cost, USD
	MaxTokens    int64         // total tokens (input + output + cache read + cache write)
	MaxTurns     int64         // model turns
	MaxToolSteps int64         // tool calls
	Grace        time.Duration // SIGTERM → SIGKILL; 0 means DefaultGrace, < 0 none
	Linger       time.Duration // terminal event → kill; 0 means DefaultLinger, < 0 none
	// Finalize is the time limit of the final-answer resume after the run
	// crossed MaxToolSteps (see hub.FinalAnswerPrompt); 0 means
	// DefaultFinalize, a negative value turns the resume off.
	Finalize time.Duration
}

// FinalizeOrDefault returns Finalize, or DefaultFinalize when it is 0; a
// negative result means no final-answer resume.
func (l Limits) FinalizeOrDefault() time.Duration {
	if l.Finalize == 0 {
		return DefaultFinalize
	}
	return l.Finalize
}

// GraceOrDefault returns Grace, DefaultGrace when it is 0, or 0 (SIGKILL
// right after SIGTERM) when it is negative.
func (l Limits) GraceOrDefault() time.Duration { return orDefault(l.Grace, DefaultGrace) }

// LingerOrDefault returns Linger, DefaultLinger when it is 0, or 0 (stop the
// agent at its terminal event) when it is negative.
func (l Limits) LingerOrDefault() time.Duration { return orDefault(l.Linger, DefaultLinger) }

// orDefault is the one rule for the durations that have a default: zero is
// unset (the default), negative is none.
func orDefault(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// Event returns the limits as run.started reports them: milliseconds and
// USD, null where unset.
func (l Limits) Event() events.Limits {
	ms := func(d time.Duration) *int64 {
		if d <= 0 {
			return nil
		}
		v := d.Milliseconds()
		return &v
	}
	n := func(v int64) *int64 {
		if v <= 0 {
			return nil
		}
		return &v
	}
	var cost *float64
	if l.MaxCostUSD > 0 {
		c := l.MaxCostUSD
		cost = &c
	}
	return events.Limits{
		TimeoutMS:     ms(l.Timeout),
		IdleTimeoutMS: ms(l.IdleTimeout),
		MaxCostUSD:    cost,
		MaxTokens:     n(l.MaxTokens),
		MaxTurns:      n(l.MaxTurns),
		MaxToolSteps:  n(l.MaxToolSteps),
	}
}

// Meter keeps a run's observed totals from its normalized events and, for
// an agent that reports tokens but no cost (NewMeter), estimates the cost
// from a price table (Price). The zero Meter is ready to use and estimates
// nothing. It is not safe for concurrent use.
type Meter struct {
	total      events.Tokens
	turns      int64
	toolCalls  int64
	exempt     string // the tool whose calls are no tool steps (Exempt)
	exempted   int64  // its calls
	costSource events.CostSource
	sawUsage   bool
	// base is the total of the run's earlier agent processes (see
	// Continue), to which the current decoder's running totals are added.
	base    events.Tokens
	hasBase bool

	// Cost estimation (NewMeter): agent names the agent in the notice of
	// a model the table lacks; cost is the current agent process's
	// running estimate, unpriced is set once one of its steps could not
	// be priced (its running cost is then unknown), warned once that
	// notice was sent. Continue resets the last three.
	agent    string
	prices   *PriceTable
	cost     float64
	unpriced bool
	warned   bool
}

// NewMeter returns a Meter for an agent (named agent) that reports tokens
// but no cost: Price estimates its usage events' costs from prices; nil
// prices means DefaultPrices().
func NewMeter(agent string, prices *PriceTable) Meter {
	if prices == nil {
		prices = DefaultPrices()
	}
	return Meter{agent: agent, prices: prices}
}

// Price estimates the cost of the usage events among bodies, the events
// decoded from one line of the agent's output, for a Meter made by
// NewMeter; it leaves events of other types, usage with a reported cost, and
// everything when m estimates nothing (the zero Meter), as they are. Call it
// before Observe, on every decoded event, once.
//
// A usage event is priced by its own Model (the model the decoder reports:
// the one the run asked for, or the one the agent says it used) with
// PriceTable.Lookup: its step gets that price's cost and cost_source
// "estimated", and its total the running sum of the step costs of the
// current agent process (since NewMeter or Continue; Observe then adds
// the earlier processes' totals). A step whose model has no price gets a
// null cost and cost_source "unknown", and from then on the running total's
// cost is unknown too; the first such step of an agent process is preceded
// by a cost_unknown notice naming the model.
//
// Price rewrites bodies in place and returns it, or returns a new slice
// (like append) when it inserts a notice.
func (m *Meter) Price(bodies []events.Body) []events.Body {
	if m.prices == nil {
		return bodies
	}
	var out []events.Body // nil until a notice is inserted
	for i, b := range bodies {
		if u, ok := b.(events.Usage); ok && u.CostSource != events.CostReported {
			var note *events.Notice
			b, note = m.price(u)
			if note != nil {
				out = append(make([]events.Body, 0, len(bodies)+1), bodies[:i]...)
				out = append(out, *note)
			}
		}
		if out != nil {
			out = append(out, b)
		} else {
			bodies[i] = b
		}
	}
	if out != nil {
		return out
	}
	return bodies
}

// price prices one usage event (see Price); note is the cost_unknown notice
// to send before it, nil if none.
func (m *Meter) price(u events.Usage) (_ events.Usage, note *events.Notice) {
	model := ""
	if u.Model != nil {
		model = *u.Model
	}
	u.Step.CostUSD, u.Total.CostUSD = nil, nil
	if p, ok := m.prices.Lookup(model); ok {
		c := p.Cost(u.Step)
		u.Step.CostUSD = &c
		u.CostSource = events.CostEstimated
		m.cost += c
	} else {
		u.CostSource = events.CostUnknown
		m.unpriced = true
		if !m.warned {
			m.warned = true
			if model == "" {
				model = "(not known to hub)"
			}
			note = &events.Notice{Kind: events.NoticeCostUnknown, Message: fmt.Sprintf(
				"%s reports tokens but no cost, and hub's price table has no price for model %s: cost is unknown; add the model to a price file (hub run --prices FILE)",
				m.agent, model)}
		}
	}
	if !m.unpriced {
		c := m.cost
		u.Total.CostUSD = &c
	}
	return u, note
}

// Observe updates the totals from one event body: a usage event sets the
// running total (decoders compute it) and counts one turn; a tool.started
// counts one tool call. Other bodies are ignored. It returns b, with a usage
// event's Total made the run's running total when the run has had an earlier
// agent process (see Continue).
func (m *Meter) Observe(b events.Body) events.Body {
	switch u := b.(type) {
	case events.Usage:
		if m.hasBase {
			u.Total = m.base.Add(u.Total)
			b = u
		}
		m.total = u.Total
		m.turns++
		m.sawUsage = true
		m.costSource = u.CostSource
		if u.Total.CostUSD == nil {
			m.costSource = events.CostUnknown
		}
	case events.ToolStarted:
		m.toolCalls++
		if m.exempt != "" && b.(events.ToolStarted).Name == m.exempt {
			m.exempted++
		}
	}
	return b
}

// Exempt makes the calls of the tool named name count as tool calls
// (Totals) but not as tool steps (Steps, Limits.MaxToolSteps): the tool
// through which a CLI delivers a structured answer (Claude Code's
// StructuredOutput) is no step of the work.
func (m *Meter) Exempt(name string) { m.exempt = name }

// Steps returns the tool calls seen that count as tool steps: all but
// those of the Exempt tool.
func (m *Meter) Steps() int64 { return m.toolCalls - m.exempted }

// Continue starts the usage count of a further agent process of the same run
// (hub's final-answer resume after --max-tool-steps), whose decoder counts
// its running total from zero: the running totals it reports are added to
// the totals so far. Turns and tool calls go on counting. Price's estimate
// starts again from zero for the new process, as its decoder's count does,
// and warns again of a model it cannot price.
func (m *Meter) Continue() {
	if m.sawUsage {
		m.base, m.hasBase = m.total, true
	}
	m.cost, m.unpriced, m.warned = 0, false, false
}

// Totals returns the total usage (cost nil when unknown), the cost source,
// and the number of turns and tool calls seen. Before any usage event the
// total is zero tokens with an unknown cost.
func (m *Meter) Totals() (usage events.Tokens, source events.CostSource, turns, toolCalls int64) {
	source = m.costSource
	if !m.sawUsage || source == "" {
		source = events.CostUnknown
	}
	return m.total, source, m.turns, m.toolCalls
}

// Exceeded returns the first limit of l that the totals are above — cost,
// then tokens, then turns, then tool steps — as a budget_exceeded error
// (reason cost, tokens, turns or tool_steps) whose message names the
// observed total, the limit and the overrun; nil when none is. A cost that
// is unknown (nil) is never above a limit: see CostUnenforceable.
//
// "Above" is strict: a run that spends exactly --max-cost is within it. For
// tool steps the crossing is the tool call numbered MaxToolSteps+1.
func (m *Meter) Exceeded(l Limits) *events.Error {
	return exceeded(l, m.total, m.turns, m.Steps())
}

// ExceededTotals is Exceeded for final totals an agent reported itself
// (Claude Code's result): usage, turns (0 when unknown) and tool steps.
func ExceededTotals(l Limits, usage events.Tokens, turns, toolSteps int64) *events.Error {
	return exceeded(l, usage, turns, toolSteps)
}

func exceeded(l Limits, usage events.Tokens, turns, tools int64) *events.Error {
	switch c := usage.CostUSD; {
	case l.MaxCostUSD > 0 && c != nil && *c > l.MaxCostUSD:
		return events.NewError(events.BinBudgetExceeded, events.ReasonCost,
			"raise --max-cost, or give the agent a smaller task or a cheaper model",
			"total cost $%.4f is over --max-cost $%.4f (by $%.4f)", *c, l.MaxCostUSD, *c-l.MaxCostUSD)
	case l.MaxTokens > 0 && usage.Sum() > l.MaxTokens:
		return events.NewError(events.BinBudgetExceeded, events.ReasonTokens,
			"raise --max-tokens, or give the agent a smaller task",
			"%d tokens (input, output, cache read and write) are over --max-tokens %d (by %d)",
			usage.Sum(), l.MaxTokens, usage.Sum()-l.MaxTokens)
	case l.MaxTurns > 0 && turns > l.MaxTurns:
		return events.NewError(events.BinBudgetExceeded, events.ReasonTurns,
			"raise --max-turns, or split the task",
			"model turn %d is over --max-turns %d", turns, l.MaxTurns)
	case l.MaxToolSteps > 0 && tools > l.MaxToolSteps:
		return events.NewError(events.BinBudgetExceeded, events.ReasonToolSteps,
			"raise --max-tool-steps, or ask for less tool use",
			"tool call %d is over --max-tool-steps %d", tools, l.MaxToolSteps)
	}
	return nil
}

// CostUnenforceable reports whether l has a cost limit that the usage seen
// so far cannot be checked against: a usage event has come and the running
// cost is unknown.
func (m *Meter) CostUnenforceable(l Limits) bool {
	return l.MaxCostUSD > 0 && m.sawUsage && m.total.CostUSD == nil
}
