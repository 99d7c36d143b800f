package hub

import (
	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/budget"
)

// newMeter is the meter of one run of req with ad: for an agent that reports
// no cost (Info.ReportsCost false), one that estimates its usage events'
// costs (budget.Meter.Price) from req.Prices, or budget.DefaultPrices() when
// that is nil; else the zero Meter, which estimates nothing. The run keeps
// the one meter for all its agent processes (budget.Meter.Continue).
func newMeter(req Request, ad adapters.Adapter) budget.Meter {
	if ad.Info().ReportsCost {
		return budget.Meter{}
	}
	return budget.NewMeter(ad.Name(), req.Prices)
}
