package hub

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
	cxnorm "github.com/hubcli/hub/normalize/codex"
)

// tokensOnly is an agent that reports no cost, decoded as Codex.
type tokensOnly struct{ adapters.Base }

func (tokensOnly) Command(adapters.Request, adapters.Install) (adapters.Command, error) {
	return adapters.Command{}, nil
}
func (tokensOnly) NewDecoder(req adapters.Request) normalize.Decoder {
	return cxnorm.New(cxnorm.Options{Model: req.Model, Resume: req.Resume})
}

var codexLike = tokensOnly{adapters.NewBase(adapters.Info{Name: "codex", Binary: "codex"})}

// metered decodes lines as a run does (Price, then Observe) and returns the
// events it would emit.
func metered(m *budget.Meter, d normalize.Decoder, lines ...string) []events.Body {
	var out []events.Body
	for _, l := range lines {
		for _, b := range m.Price(d.Decode(nil, []byte(l))) {
			out = append(out, m.Observe(b))
		}
	}
	return out
}

func usageEvents(bodies []events.Body) []events.Usage {
	var out []events.Usage
	for _, b := range bodies {
		if u, ok := b.(events.Usage); ok {
			out = append(out, u)
		}
	}
	return out
}

func costNotices(bodies []events.Body) []events.Notice {
	var out []events.Notice
	for _, b := range bodies {
		if n, ok := b.(events.Notice); ok && n.Kind == events.NoticeCostUnknown {
			out = append(out, n)
		}
	}
	return out
}

const (
	cxStarted   = `{"type":"thread.started","thread_id":"t1"}`
	cxTurn      = `{"type":"turn.started"}`
	cxAnswer    = `{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"done"}}`
	cxCompleted = `{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":200,"cache_write_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":10}}`
)

// TestMeterCodex: the run's meter prices Codex's usage events (tokens only)
// from the price table by the events' model, as Codex's decoder did before
// the price moved to the meter.
func TestMeterCodex(t *testing.T) {
	t.Parallel()
	near := func(c *float64, want float64) bool { return c != nil && math.Abs(*c-want) <= 1e-12 }

	t.Run("usage", func(t *testing.T) {
		req := Request{Model: "gpt-5.5"}
		m := newMeter(req, codexLike)
		second := `{"type":"turn.completed","usage":{"input_tokens":2500,"cached_input_tokens":700,"cache_write_input_tokens":100,"output_tokens":80,"reasoning_output_tokens":10}}`
		bodies := metered(&m, codexLike.NewDecoder(req.adapterRequest()), cxStarted, cxTurn, cxAnswer, cxCompleted, second)
		us := usageEvents(bodies)
		if len(us) != 2 {
			t.Fatalf("%d usage events, want 2", len(us))
		}
		// 800 × 5 + 200 × 0.5 + 50 × 30 per million = 0.0056.
		if s := us[0].Step; us[0].CostSource != events.CostEstimated || !near(s.CostUSD, 0.0056) {
			t.Errorf("first cost = %v %s, want 0.0056 estimated", s.CostUSD, us[0].CostSource)
		}
		want := (1700*5 + 700*0.5 + 100*5 + 80*30) / 1e6 // cache writes at the input price
		if tot := us[1].Total; !near(tot.CostUSD, want) {
			t.Errorf("total cost = %v, want %v", tot.CostUSD, want)
		}
		if n := costNotices(bodies); len(n) != 0 {
			t.Errorf("cost_unknown for a priced model: %+v", n)
		}
		if _, src, _, _ := m.Totals(); src != events.CostEstimated {
			t.Errorf("meter cost source = %s, want estimated", src)
		}
	})

	t.Run("unknown model", func(t *testing.T) {
		for _, model := range []string{"", "mock-model"} {
			req := Request{Model: model}
			m := newMeter(req, codexLike)
			bodies := metered(&m, codexLike.NewDecoder(req.adapterRequest()), cxStarted, cxTurn, cxAnswer, cxCompleted, cxCompleted)
			us := usageEvents(bodies)
			if len(us) != 2 || us[1].Total.CostUSD != nil || us[1].CostSource != events.CostUnknown {
				t.Fatalf("model %q: usage = %+v, want cost null and unknown", model, us)
			}
			n := costNotices(bodies)
			if len(n) != 1 {
				t.Fatalf("model %q: %d cost_unknown notices, want exactly 1", model, len(n))
			}
			name := model
			if name == "" {
				name = "(not known to hub)"
			}
			if want := "codex reports tokens but no cost, and hub's price table has no price for model " + name + ":"; !strings.HasPrefix(n[0].Message, want) {
				t.Errorf("notice %q, want it to start %q", n[0].Message, want)
			}
			// The notice comes right before the first usage event.
			if i := slices.IndexFunc(bodies, func(b events.Body) bool { _, ok := b.(events.Usage); return ok }); i < 1 || bodies[i-1].(events.Notice).Kind != events.NoticeCostUnknown {
				t.Errorf("bodies = %+v, want the cost_unknown notice just before the first usage", bodies)
			}
		}
	})

	t.Run("price override", func(t *testing.T) {
		tab, err := budget.DefaultPrices().With([]budget.Price{{Model: "mock-model", Input: 1, CachedInput: 0.1, Output: 2, Source: "test", AsOf: "2026-11-30"}})
		if err != nil {
			t.Fatal(err)
		}
		req := Request{Model: "mock-model", Prices: tab}
		m := newMeter(req, codexLike)
		us := usageEvents(metered(&m, codexLike.NewDecoder(req.adapterRequest()), cxStarted, cxCompleted))
		want := (800*1 + 200*0.1 + 50*2) / 1e6
		if len(us) != 1 || !near(us[0].Step.CostUSD, want) {
			t.Errorf("usage = %+v, want cost %v", us, want)
		}
	})

	t.Run("reroute", func(t *testing.T) {
		req := Request{Model: "mock-model"}
		m := newMeter(req, codexLike)
		bodies := metered(&m, codexLike.NewDecoder(req.adapterRequest()), cxStarted,
			`{"type":"item.completed","item":{"id":"item_0","type":"error","message":"model rerouted: mock-model -> gpt-5.4 (HighRiskCyberActivity)"}}`,
			cxCompleted)
		us := usageEvents(bodies)
		want := (800*2.5 + 200*0.25 + 50*15) / 1e6
		if len(us) != 1 || us[0].Model == nil || *us[0].Model != "gpt-5.4" || !near(us[0].Step.CostUSD, want) {
			t.Errorf("usage = %+v, want gpt-5.4 priced at %v", us, want)
		}
		if n := costNotices(bodies); len(n) != 0 {
			t.Errorf("cost_unknown for the rerouted, priced model: %+v", n)
		}
	})

	// A resumed session's first report (its running total) is priced whole,
	// after the decoder's notice that it includes earlier turns.
	t.Run("resume", func(t *testing.T) {
		req := Request{Model: "gpt-5.5", Resume: "t1"}
		m := newMeter(req, codexLike)
		bodies := metered(&m, codexLike.NewDecoder(req.adapterRequest()), cxStarted, cxCompleted)
		us := usageEvents(bodies)
		if len(us) != 1 || !near(us[0].Total.CostUSD, 0.0056) || us[0].CostSource != events.CostEstimated {
			t.Errorf("usage = %+v, want 0.0056 estimated", us)
		}
		if n := costNotices(bodies); len(n) != 1 || !strings.Contains(n[0].Message, "resumed session") {
			t.Errorf("cost_unknown notices = %+v, want only the decoder's resumed-session one", n)
		}
	})
}

// TestNewMeterReportsCost: an agent that reports its cost gets a meter that
// prices nothing, whatever price table the request has.
func TestNewMeterReportsCost(t *testing.T) {
	t.Parallel()
	ad := tokensOnly{adapters.NewBase(adapters.Info{Name: "reports", ReportsCost: true})}
	m := newMeter(Request{Model: "gpt-5.5", Prices: budget.DefaultPrices()}, ad)
	model := "gpt-5.5"
	u := events.Usage{Step: events.Tokens{Input: 10}, Total: events.Tokens{Input: 10}, CostSource: events.CostUnknown, Model: &model}
	got := m.Price([]events.Body{u})
	if len(got) != 1 || got[0].(events.Usage).Step.CostUSD != nil || got[0].(events.Usage).CostSource != events.CostUnknown {
		t.Errorf("Price = %+v, want the usage unchanged", got)
	}
}
