package budget

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hubcli/hub/events"
)

// Price is one model's list price in USD per million tokens, with where it
// was read and when.
type Price struct {
	// Model is the model id as the agent names it ("gpt-5.5"), matched
	// case-insensitively.
	Model string `json:"model"`
	// Input is the price of input tokens read neither from nor into the
	// prompt cache.
	Input float64 `json:"input"`
	// CachedInput is the price of input tokens read from the cache.
	CachedInput float64 `json:"cached_input"`
	// CacheWrite is the price of input tokens written to the cache; nil
	// means the provider charges them as Input (OpenAI does).
	CacheWrite *float64 `json:"cache_write,omitempty"`
	// Output is the price of output tokens, reasoning tokens included.
	Output float64 `json:"output"`
	// Source names where the price was read; AsOf is when (YYYY-MM-DD).
	Source string `json:"source"`
	AsOf   string `json:"as_of"`
}

// Cost prices t: token counts times the per-million prices, in USD. t's own
// CostUSD is ignored; Reasoning is part of Output and not added again.
func (p Price) Cost(t events.Tokens) float64 {
	write := p.Input
	if p.CacheWrite != nil {
		write = *p.CacheWrite
	}
	return (float64(t.Input)*p.Input + float64(t.CacheRead)*p.CachedInput +
		float64(t.CacheWrite)*write + float64(t.Output)*p.Output) / 1e6
}

// openAIPricing is where the OpenAI rows were read. OpenAI publishes its
// list prices (standard processing tier) at
// https://developers.openai.com/api/docs/pricing and on each model's page
// under https://developers.openai.com/api/docs/models/. This machine has no
// route to those pages; the rows were read on 2026-11-30 from stored public
// copies: the gpt-5-codex model page itself, and for the newer models a
// November 2026 reading of the pricing page (api-evangelist, 2026-11-06) that
// agrees with GitHub's Copilot price table and two dated third-party tables.
// Check them against the pricing page before relying on an estimate.
const openAIPricing = "OpenAI API pricing, standard tier (developers.openai.com/api/docs/pricing)"

const openAIAsOf = "2026-11-30"

// defaultPrices are the rows hub ships. Models that are not here are priced
// as unknown (cost_usd null), never guessed from a similar name.
var defaultPrices = []Price{
	{Model: "gpt-5.5", Input: 5.00, CachedInput: 0.50, Output: 30.00, Source: openAIPricing, AsOf: openAIAsOf},
	{Model: "gpt-5.5-pro", Input: 30.00, CachedInput: 30.00, Output: 180.00, Source: openAIPricing + "; no cached-input discount", AsOf: openAIAsOf},
	{Model: "gpt-5.4", Input: 2.50, CachedInput: 0.25, Output: 15.00, Source: openAIPricing, AsOf: openAIAsOf},
	{Model: "gpt-5.4-mini", Input: 0.75, CachedInput: 0.075, Output: 4.50, Source: openAIPricing, AsOf: openAIAsOf},
	{Model: "gpt-5.3-codex", Input: 1.75, CachedInput: 0.175, Output: 14.00, Source: openAIPricing, AsOf: openAIAsOf},
	{Model: "gpt-5.2", Input: 1.75, CachedInput: 0.175, Output: 14.00, Source: openAIPricing, AsOf: openAIAsOf},
	{Model: "gpt-5-codex", Input: 1.25, CachedInput: 0.125, Output: 10.00, Source: "OpenAI model page gpt-5-codex (developers.openai.com/api/docs/models/gpt-5-codex)", AsOf: openAIAsOf},
	{Model: "gpt-5", Input: 1.25, CachedInput: 0.125, Output: 10.00, Source: openAIPricing, AsOf: openAIAsOf},
}

// PriceTable maps model ids to prices. The zero value has no rows; use
// DefaultPrices for hub's own. A PriceTable is immutable once built and safe
// for concurrent use.
type PriceTable struct {
	rows map[string]Price // by lower-case model id
}

// DefaultPrices returns the table hub ships: OpenAI's models that Codex runs,
// read on the date in each row's AsOf. Agents that report their own cost
// (Claude Code, OpenCode, pi) do not need it.
func DefaultPrices() *PriceTable {
	t, err := NewPriceTable(defaultPrices)
	if err != nil {
		panic("budget: default prices: " + err.Error()) // covered by a test
	}
	return t
}

// NewPriceTable builds a table from rows; a later row for the same model
// replaces an earlier one. A row with an empty model, a negative or
// non-finite price, or an AsOf that is not a YYYY-MM-DD date is an error.
func NewPriceTable(rows []Price) (*PriceTable, error) {
	t := &PriceTable{rows: make(map[string]Price, len(rows))}
	for i, p := range rows {
		if err := p.check(); err != nil {
			return nil, fmt.Errorf("price row %d: %w", i+1, err)
		}
		t.rows[strings.ToLower(p.Model)] = p
	}
	return t, nil
}

func (p Price) check() error {
	if strings.TrimSpace(p.Model) == "" {
		return errors.New("model is empty")
	}
	prices := []float64{p.Input, p.CachedInput, p.Output}
	if p.CacheWrite != nil {
		prices = append(prices, *p.CacheWrite)
	}
	for _, v := range prices {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("model %s: price %v is not a finite number ≥ 0", p.Model, v)
		}
	}
	if _, err := time.Parse(time.DateOnly, p.AsOf); err != nil {
		return fmt.Errorf("model %s: as_of %q is not a YYYY-MM-DD date", p.Model, p.AsOf)
	}
	return nil
}

// With returns a copy of t in which rows replace t's rows for the same model
// and add the others. t is unchanged.
func (t *PriceTable) With(rows []Price) (*PriceTable, error) {
	extra, err := NewPriceTable(rows)
	if err != nil {
		return nil, err
	}
	out := &PriceTable{rows: maps.Clone(t.rows)}
	if out.rows == nil {
		out.rows = map[string]Price{}
	}
	maps.Copy(out.rows, extra.rows)
	return out, nil
}

// Rows returns the table's rows sorted by model.
func (t *PriceTable) Rows() []Price {
	if t == nil {
		return nil
	}
	return slices.SortedFunc(maps.Values(t.rows), func(a, b Price) int { return strings.Compare(a.Model, b.Model) })
}

// snapshotSuffix is the date OpenAI appends to a pinned snapshot of a model:
// gpt-5.4-2026-03-05 is priced as gpt-5.4.
var snapshotSuffix = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}$`)

// Lookup returns the price of model: an exact (case-insensitive) match,
// else the match of the model without a "provider/" prefix or a -YYYY-MM-DD
// snapshot suffix. No other similarity counts: "gpt-5.5-pro" is never priced
// as "gpt-5.5". A nil table has no rows.
func (t *PriceTable) Lookup(model string) (Price, bool) {
	if t == nil || model == "" {
		return Price{}, false
	}
	m := strings.ToLower(strings.TrimSpace(model))
	if p, ok := t.rows[m]; ok {
		return p, true
	}
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
		if p, ok := t.rows[m]; ok {
			return p, true
		}
	}
	if base := snapshotSuffix.ReplaceAllString(m, ""); base != m {
		p, ok := t.rows[base]
		return p, ok
	}
	return Price{}, false
}

// priceFile is the JSON form ReadPrices reads. The prices are pointers so
// that a missing one is an error, not a price of 0.
type priceFile struct {
	Prices []struct {
		Model       string   `json:"model"`
		Input       *float64 `json:"input"`
		CachedInput *float64 `json:"cached_input"`
		CacheWrite  *float64 `json:"cache_write"`
		Output      *float64 `json:"output"`
		Source      string   `json:"source"`
		AsOf        string   `json:"as_of"`
	} `json:"prices"`
}

// ReadPrices reads price rows from JSON of the form
//
//	{"prices": [{"model": "gpt-5.5", "input": 5, "cached_input": 0.5,
//	             "output": 30, "source": "my contract", "as_of": "2026-11-30"}]}
//
// in USD per million tokens; "cache_write" is optional (default: the input
// price). Errors name source: unknown fields (a misspelt "cached_input" must
// not price cache reads at 0), a missing input, cached_input or output,
// anything after the object, and rows NewPriceTable would refuse. A row
// without a source gets source; as_of is required.
func ReadPrices(r io.Reader, source string) ([]Price, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f priceFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("price table %s: %w", source, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("price table %s: more than one JSON value", source)
	}
	rows := make([]Price, 0, len(f.Prices))
	for i, in := range f.Prices {
		if in.Input == nil || in.CachedInput == nil || in.Output == nil {
			return nil, fmt.Errorf("price table %s: row %d (%s): input, cached_input and output are all required", source, i+1, in.Model)
		}
		p := Price{Model: in.Model, Input: *in.Input, CachedInput: *in.CachedInput, CacheWrite: in.CacheWrite,
			Output: *in.Output, Source: in.Source, AsOf: in.AsOf}
		if p.Source == "" {
			p.Source = source
		}
		if err := p.check(); err != nil {
			return nil, fmt.Errorf("price table %s: row %d: %w", source, i+1, err)
		}
		rows = append(rows, p)
	}
	return rows, nil
}

// UserPricesFile is where a user's own price rows live, relative to the
// user's config directory (os.UserConfigDir: $XDG_CONFIG_HOME or ~/.config).
const UserPricesFile = "hub/prices.json"

// LoadPrices returns DefaultPrices overridden, in order, by the rows of each
// file (see ReadPrices for the format). An empty path is skipped; a missing
// or invalid file is an error naming it.
func LoadPrices(paths ...string) (*PriceTable, error) {
	t := DefaultPrices()
	for _, p := range paths {
		if p == "" {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("price table: %w", err)
		}
		rows, err := ReadPrices(f, p)
		f.Close()
		if err != nil {
			return nil, err
		}
		if t, err = t.With(rows); err != nil {
			return nil, err
		}
	}
	return t, nil
}
