package budget_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
)

func TestLimitsEvent(t *testing.T) {
	t.Parallel()
	got, _ := json.Marshal(budget.Limits{Timeout: 90 * time.Second, MaxCostUSD: 0.5, MaxTurns: 3}.Event())
	want := `{"timeout_ms":90000,"idle_timeout_ms":null,"max_cost_usd":0.5,"max_tokens":null,"max_turns":3,"max_tool_steps":null}`
	if string(got) != want {
		t.Errorf("Event() = %s, want %s", got, want)
	}
	var l budget.Limits
	if l.GraceOrDefault() != budget.DefaultGrace || l.LingerOrDefault() != budget.DefaultLinger {
		t.Errorf("defaults = %s, %s", l.GraceOrDefault(), l.LingerOrDefault())
	}
}

func TestMeter(t *testing.T) {
	t.Parallel()
	var m budget.Meter
	u, src, turns, tools := m.Totals()
	if u.CostUSD != nil || src != events.CostUnknown || turns != 0 || tools != 0 {
		t.Errorf("empty Meter = %+v %s %d %d, want unknown cost, zeros", u, src, turns, tools)
	}
	c := 0.25
	m.Observe(events.ToolStarted{Name: "bash"})
	m.Observe(events.Usage{Step: events.Tokens{Input: 5}, Total: events.Tokens{Input: 5, CostUSD: &c}, CostSource: events.CostReported})
	m.Observe(events.Message{Text: "x"})
	m.Observe(events.Usage{Step: events.Tokens{Input: 7}, Total: events.Tokens{Input: 12, CostUSD: &c}, CostSource: events.CostReported})
	u, src, turns, tools = m.Totals()
	if u.Input != 12 || u.CostUSD == nil || *u.CostUSD != 0.25 || src != events.CostReported || turns != 2 || tools != 1 {
		t.Errorf("Totals() = %+v %s turns %d tools %d, want 12 in, $0.25 reported, 2 turns, 1 tool", u, src, turns, tools)
	}
}

// TestMeterContinue: after Continue, a second decoder's running totals
// (counted from zero) are added to the first's, in the meter and in the usage
// event Observe returns; an unknown cost on either side makes the total
// unknown.
func TestMeterContinue(t *testing.T) {
	t.Parallel()
	c := func(v float64) *float64 { return &v }
	var m budget.Meter
	m.Observe(events.Usage{Step: events.Tokens{Input: 10, CostUSD: c(1)}, Total: events.Tokens{Input: 10, CostUSD: c(1)}, CostSource: events.CostReported})
	m.Observe(events.ToolStarted{Name: "bash"})
	m.Continue()
	got := m.Observe(events.Usage{Step: events.Tokens{Input: 3, Output: 2, CostUSD: c(0.5)}, Total: events.Tokens{Input: 3, Output: 2, CostUSD: c(0.5)}, CostSource: events.CostReported})
	u, src, turns, tools := m.Totals()
	if ev := got.(events.Usage); ev.Total.Input != 13 || ev.Total.Output != 2 || *ev.Total.CostUSD != 1.5 || ev.Step.Input != 3 {
		t.Errorf("Observe(second segment usage) = %+v, want step 3 in, total 13 in 2 out $1.5", ev)
	}
	if u.Input != 13 || *u.CostUSD != 1.5 || src != events.CostReported || turns != 2 || tools != 1 {
		t.Errorf("Totals() = %+v %s %d %d, want 13 in, $1.5 reported, 2 turns, 1 tool", u, src, turns, tools)
	}
	m.Observe(events.Usage{Total: events.Tokens{Input: 4, Output: 2}, CostSource: events.CostUnknown})
	if u, src, _, _ := m.Totals(); u.Input != 14 || u.CostUSD != nil || src != events.CostUnknown {
		t.Errorf("Totals() after an unknown cost = %+v %s, want 14 in, cost nil, unknown", u, src)
	}
	// Continue before any usage adds nothing.
	var n budget.Meter
	n.Continue()
	if ev := n.Observe(events.Usage{Total: events.Tokens{Input: 1, CostUSD: c(0.1)}, CostSource: events.CostEstimated}).(events.Usage); ev.Total.CostUSD == nil || *ev.Total.CostUSD != 0.1 {
		t.Errorf("Observe after Continue on an empty meter = %+v, want total $0.1", ev)
	}
}

func TestExceeded(t *testing.T) {
	cost := func(c float64) *float64 { return &c }
	tests := []struct {
		name   string
		limits budget.Limits
		usage  events.Tokens
		turns  int64
		tools  int64
		want   events.Reason // "" for none
	}{
		{"no limits", budget.Limits{}, events.Tokens{Input: 1e9, CostUSD: cost(1e6)}, 99, 99, ""},
		{"cost over", budget.Limits{MaxCostUSD: 1}, events.Tokens{CostUSD: cost(1.0001)}, 0, 0, events.ReasonCost},
		{"cost exactly at the limit", budget.Limits{MaxCostUSD: 1}, events.Tokens{CostUSD: cost(1)}, 0, 0, ""},
		{"unknown cost never crosses", budget.Limits{MaxCostUSD: 1}, events.Tokens{Input: 1e9}, 0, 0, ""},
		{"tokens count cache", budget.Limits{MaxTokens: 100}, events.Tokens{Input: 50, Output: 20, CacheRead: 20, CacheWrite: 11, Reasoning: 500}, 0, 0, events.ReasonTokens},
		{"reasoning is part of output", budget.Limits{MaxTokens: 100}, events.Tokens{Input: 50, Output: 50, Reasoning: 50}, 0, 0, ""},
		{"turns", budget.Limits{MaxTurns: 3}, events.Tokens{}, 4, 0, events.ReasonTurns},
		{"tool steps", budget.Limits{MaxToolSteps: 3}, events.Tokens{}, 0, 4, events.ReasonToolSteps},
		{"tool steps at the limit", budget.Limits{MaxToolSteps: 3}, events.Tokens{}, 0, 3, ""},
		{"cost is checked first", budget.Limits{MaxCostUSD: 1, MaxTokens: 1, MaxTurns: 1, MaxToolSteps: 1},
			events.Tokens{Input: 5, CostUSD: cost(2)}, 5, 5, events.ReasonCost},
	}
	for _, tt := range tests {
		e := budget.ExceededTotals(tt.limits, tt.usage, tt.turns, tt.tools)
		switch {
		case tt.want == "" && e != nil:
			t.Errorf("%s: %v, want no crossing", tt.name, e)
		case tt.want != "" && (e == nil || e.Bin != events.BinBudgetExceeded || e.Reason != tt.want || e.Hint == "" || e.Retryable):
			t.Errorf("%s: %+v, want budget_exceeded/%s with a hint, not retryable", tt.name, e, tt.want)
		}
	}
}

func TestMeterExceeded(t *testing.T) {
	var m budget.Meter
	lim := budget.Limits{MaxCostUSD: 1, MaxToolSteps: 1}
	m.Observe(events.ToolStarted{CallID: "1"})
	if m.Exceeded(lim) != nil || m.CostUnenforceable(lim) {
		t.Fatal("crossed after one tool call of one allowed, or no usage yet")
	}
	m.Observe(events.Usage{Step: events.Tokens{Input: 10}, Total: events.Tokens{Input: 10}, CostSource: events.CostUnknown})
	if !m.CostUnenforceable(lim) {
		t.Error("a usage event with unknown cost: the cost limit cannot be checked")
	}
	m.Observe(events.ToolStarted{CallID: "2"})
	if e := m.Exceeded(lim); e == nil || e.Reason != events.ReasonToolSteps || !strings.Contains(e.Message, "tool call 2") {
		t.Errorf("second tool call: %v, want tool_steps naming call 2", e)
	}
}
