package budget_test

import (
	"encoding/json"
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
