package budget_test

import (
	"math"
	"strings"
	"testing"

	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
)

func TestDefaultPricesRows(t *testing.T) {
	rows := budget.DefaultPrices().Rows()
	if len(rows) == 0 {
		t.Fatal("no default prices")
	}
	for _, p := range rows {
		if p.Source == "" || p.AsOf == "" || p.Input <= 0 || p.Output <= 0 || p.CachedInput <= 0 {
			t.Errorf("row %+v: want a source, a date and positive prices", p)
		}
		if p.CachedInput > p.Input {
			t.Errorf("row %s: cached input %v dearer than input %v", p.Model, p.CachedInput, p.Input)
		}
	}
}

func TestLookup(t *testing.T) {
	tab := budget.DefaultPrices()
	for _, tc := range []struct {
		model string
		want  string // "" for no match
	}{
		{"gpt-5.5", "gpt-5.5"},
		{"GPT-5.5", "gpt-5.5"},
		{"openai/gpt-5.4", "gpt-5.4"},
		{"gpt-5.4-2026-03-05", "gpt-5.4"},
		{"gpt-5.5-pro", "gpt-5.5-pro"},
		{"gpt-5.5-turbo", ""}, // no similarity matching
		{"mock-model", ""},
		{"", ""},
	} {
		p, ok := tab.Lookup(tc.model)
		if ok != (tc.want != "") || ok && p.Model != tc.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tc.model, p.Model, ok, tc.want)
		}
	}
	var none *budget.PriceTable
	if _, ok := none.Lookup("gpt-5.5"); ok {
		t.Error("nil table found a price")
	}
}

// TestCostByHand prices the mock server's large usage (1.5 M input of which
// 1 M cached, 250 k output) at gpt-5.5's $5 / $0.50 / $30 per million:
// 0.5 M × 5 + 1 M × 0.5 + 0.25 M × 30 = 2.5 + 0.5 + 7.5 = $10.50.
func TestCostByHand(t *testing.T) {
	p, ok := budget.DefaultPrices().Lookup("gpt-5.5")
	if !ok {
		t.Fatal("gpt-5.5 not priced")
	}
	got := p.Cost(events.Tokens{Input: 500_000, CacheRead: 1_000_000, Output: 250_000, Reasoning: 100_000})
	if math.Abs(got-10.50) > 1e-9 {
		t.Errorf("cost = %v, want 10.50", got)
	}
	// Cache writes cost input unless the row says otherwise.
	if got := p.Cost(events.Tokens{CacheWrite: 1_000_000}); math.Abs(got-5) > 1e-9 {
		t.Errorf("cache write cost = %v, want 5 (input price)", got)
	}
	w := 6.25
	p.CacheWrite = &w
	if got := p.Cost(events.Tokens{CacheWrite: 1_000_000}); math.Abs(got-6.25) > 1e-9 {
		t.Errorf("cache write cost = %v, want 6.25", got)
	}
}

func TestReadPricesOverride(t *testing.T) {
	rows, err := budget.ReadPrices(strings.NewReader(`{"prices":[
		{"model":"gpt-5.5","input":1,"cached_input":0.1,"output":2,"as_of":"2026-11-01"},
		{"model":"mock-model","input":3,"cached_input":0.3,"output":15,"source":"test","as_of":"2026-11-30"}]}`), "prices.json")
	if err != nil {
		t.Fatal(err)
	}
	if rows[0].Source != "prices.json" || rows[1].Source != "test" {
		t.Errorf("sources = %q, %q", rows[0].Source, rows[1].Source)
	}
	base := budget.DefaultPrices()
	tab, err := base.With(rows)
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := tab.Lookup("gpt-5.5"); p.Input != 1 {
		t.Errorf("override not applied: %+v", p)
	}
	if p, _ := base.Lookup("gpt-5.5"); p.Input != 5 {
		t.Errorf("With changed the base table: %+v", p)
	}
	if _, ok := tab.Lookup("mock-model"); !ok {
		t.Error("added row missing")
	}
	if _, ok := tab.Lookup("gpt-5.4"); !ok {
		t.Error("default row lost")
	}
}

func TestReadPricesErrors(t *testing.T) {
	for name, in := range map[string]string{
		"unknown field": `{"prices":[{"model":"m","input":1,"cached":0.1,"output":2,"as_of":"2026-11-01"}]}`,
		"no date":       `{"prices":[{"model":"m","input":1,"cached_input":0.1,"output":2}]}`,
		"bad date":      `{"prices":[{"model":"m","input":1,"cached_input":0.1,"output":2,"as_of":"last week"}]}`,
		"negative":      `{"prices":[{"model":"m","input":-1,"cached_input":0.1,"output":2,"as_of":"2026-11-01"}]}`,
		"no model":      `{"prices":[{"input":1,"cached_input":0.1,"output":2,"as_of":"2026-11-01"}]}`,
		"not json":      `prices: []`,
		"no cached":     `{"prices":[{"model":"m","input":1,"output":2,"as_of":"2026-11-01"}]}`,
		"no output":     `{"prices":[{"model":"m","input":1,"cached_input":0.1,"as_of":"2026-11-01"}]}`,
		"two values":    `{"prices":[]} {"prices":[{"model":"m","input":-5}]}`,
		"huge":          `{"prices":[{"model":"m","input":1e400,"cached_input":0.1,"output":2,"as_of":"2026-11-01"}]}`,
	} {
		if _, err := budget.ReadPrices(strings.NewReader(in), "f.json"); err == nil || !strings.Contains(err.Error(), "f.json") {
			t.Errorf("%s: err = %v, want an error naming the file", name, err)
		}
	}
}
