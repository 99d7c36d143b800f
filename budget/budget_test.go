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

// TestMeterPrice: a meter made by NewMeter prices the usage events of an
// agent that reports tokens only, by each event's model, one rule per row.
func TestMeterPrice(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	tab, err := budget.NewPriceTable([]budget.Price{{Model: "m", Input: 1, CachedInput: 0.5, Output: 2, Source: "test", AsOf: "2026-11-30"}})
	if err != nil {
		t.Fatal(err)
	}
	step := events.Tokens{Input: 1e6, CacheRead: 2e6, Output: 1e6} // $1 + $1 + $2 at m's price
	usage := func(model *string) events.Usage {
		return events.Usage{Step: step, Total: step, CostSource: events.CostUnknown, Model: model}
	}
	type want struct {
		step, total *float64 // nil: null cost
		source      events.CostSource
		notice      bool // a cost_unknown notice just before the usage
	}
	c := func(v float64) *float64 { return &v }
	tests := []struct {
		name  string
		meter func() budget.Meter
		in    []events.Body
		want  []want // per usage event, in order
		note  string // the notice's model, when there is one
	}{
		{"priced: step and running total estimated", func() budget.Meter { return budget.NewMeter("agent", tab) },
			[]events.Body{usage(str("m")), usage(str("m"))},
			[]want{{c(4), c(4), events.CostEstimated, false}, {c(4), c(8), events.CostEstimated, false}}, ""},
		{"lookup as PriceTable.Lookup: case and provider prefix", func() budget.Meter { return budget.NewMeter("agent", tab) },
			[]events.Body{usage(str("prov/M"))},
			[]want{{c(4), c(4), events.CostEstimated, false}}, ""},
		{"model not in the table: unknown, one notice", func() budget.Meter { return budget.NewMeter("agent", tab) },
			[]events.Body{usage(str("other")), usage(str("other"))},
			[]want{{nil, nil, events.CostUnknown, true}, {nil, nil, events.CostUnknown, false}}, "other"},
		{"no model: unknown, the notice says so", func() budget.Meter { return budget.NewMeter("agent", tab) },
			[]events.Body{usage(nil)},
			[]want{{nil, nil, events.CostUnknown, true}}, "(not known to hub)"},
		{"priced after unpriced: step estimated, total stays unknown", func() budget.Meter { return budget.NewMeter("agent", tab) },
			[]events.Body{usage(str("other")), usage(str("m"))},
			[]want{{nil, nil, events.CostUnknown, true}, {c(4), nil, events.CostEstimated, false}}, "other"},
		{"nil table: DefaultPrices", func() budget.Meter { return budget.NewMeter("agent", nil) },
			[]events.Body{usage(str("gpt-5.5"))},
			[]want{{c(5 + 1 + 30), c(5 + 1 + 30), events.CostEstimated, false}}, ""},
		{"reported cost: left as it is", func() budget.Meter { return budget.NewMeter("agent", tab) },
			[]events.Body{events.Usage{Step: events.Tokens{Input: 1, CostUSD: c(7)}, Total: events.Tokens{Input: 1, CostUSD: c(7)}, CostSource: events.CostReported, Model: str("m")}},
			[]want{{c(7), c(7), events.CostReported, false}}, ""},
		{"zero Meter: prices nothing", func() budget.Meter { return budget.Meter{} },
			[]events.Body{usage(str("m"))},
			[]want{{nil, nil, events.CostUnknown, false}}, ""},
	}
	eq := func(a, b *float64) bool { return a == nil && b == nil || a != nil && b != nil && *a == *b }
	for _, tt := range tests {
		m := tt.meter()
		got := m.Price(append([]events.Body{events.Message{Text: "x"}}, tt.in...))
		if _, ok := got[0].(events.Message); !ok {
			t.Errorf("%s: first body = %+v, want the message, untouched", tt.name, got[0])
		}
		i := 0
		for j, b := range got {
			u, ok := b.(events.Usage)
			if !ok {
				continue
			}
			if i >= len(tt.want) {
				t.Errorf("%s: more usage events than given", tt.name)
				break
			}
			w := tt.want[i]
			i++
			if !eq(u.Step.CostUSD, w.step) || !eq(u.Total.CostUSD, w.total) || u.CostSource != w.source {
				t.Errorf("%s: usage %d = step %v total %v %s, want %v %v %s", tt.name, i, u.Step.CostUSD, u.Total.CostUSD, u.CostSource, w.step, w.total, w.source)
			}
			n, isNote := got[j-1].(events.Notice)
			switch {
			case w.notice && (!isNote || n.Kind != events.NoticeCostUnknown ||
				n.Message != "agent reports tokens but no cost, and hub's price table has no price for model "+tt.note+": cost is unknown; add the model to a price file (hub run --prices FILE)"):
				t.Errorf("%s: before usage %d: %+v, want the cost_unknown notice for model %s", tt.name, i, got[j-1], tt.note)
			case !w.notice && isNote:
				t.Errorf("%s: before usage %d: notice %+v, want none", tt.name, i, n)
			}
		}
		if i != len(tt.want) {
			t.Errorf("%s: %d usage events, want %d", tt.name, i, len(tt.want))
		}
	}
}

// TestMeterPriceContinue: the estimate of a further agent process starts
// from zero, as its decoder's running total does, and Observe adds the
// earlier processes' totals; a model without a price is reported again.
func TestMeterPriceContinue(t *testing.T) {
	t.Parallel()
	m := budget.NewMeter("codex", nil)
	model, other := "gpt-5.5", "mock-model"
	step := events.Tokens{Input: 1e6}                     // $5 at gpt-5.5's price
	use := func(model string, total int64) events.Usage { // total: the decoder's running total
		return events.Usage{Step: step, Total: events.Tokens{Input: total}, CostSource: events.CostUnknown, Model: &model}
	}
	for _, b := range m.Price([]events.Body{use(model, 1e6), use(model, 2e6)}) {
		m.Observe(b)
	}
	m.Continue()
	got := m.Price([]events.Body{use(model, 1e6)})
	ev := m.Observe(got[0]).(events.Usage)
	if ev.Step.CostUSD == nil || *ev.Step.CostUSD != 5 || ev.Total.CostUSD == nil || *ev.Total.CostUSD != 15 || ev.Total.Input != 2e6+1e6 {
		t.Errorf("usage after Continue = %+v, want step $5, total $15 (10 before, 5 now), 3M input", ev)
	}
	m.Price([]events.Body{use(other, 2e6)})
	m.Continue()
	if got := m.Price([]events.Body{use(other, 1e6)}); len(got) != 2 {
		t.Errorf("after Continue, Price(unpriced usage) = %+v, want the cost_unknown notice again", got)
	}
}

// TestMeterExempt: the calls of the Exempt tool count as tool calls, not
// as tool steps: --max-tool-steps 2 holds after two steps and the answer
// tool's call, and the third step crosses it.
func TestMeterExempt(t *testing.T) {
	var m budget.Meter
	m.Exempt("StructuredOutput")
	lim := budget.Limits{MaxToolSteps: 2}
	for _, name := range []string{"Read", "StructuredOutput", "Bash"} {
		m.Observe(events.ToolStarted{Name: name})
		if e := m.Exceeded(lim); e != nil {
			t.Fatalf("after %s: Exceeded = %v, want nil", name, e)
		}
	}
	if _, _, _, calls := m.Totals(); calls != 3 || m.Steps() != 2 {
		t.Errorf("tool calls %d, steps %d; want 3 and 2", calls, m.Steps())
	}
	m.Observe(events.ToolStarted{Name: "Grep"})
	if e := m.Exceeded(lim); e == nil || !strings.Contains(e.Message, "tool call 3 is over --max-tool-steps 2") {
		t.Errorf("after the third step: Exceeded = %v, want tool call 3 over --max-tool-steps 2", e)
	}
}
