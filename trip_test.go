package hub_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
)

// TestBudgetTripLatency measures the time from the agent writing the line
// that crosses a budget to SIGTERM arriving in the agent, over a number of
// runs (HUB_TRIPS, default 20), and logs the median and the maximum. It
// fails when a trip takes longer than half a second: enforcement must not
// wait for a timer or the next line.
//
//	HUB_TRIPS=100 go test -run TestBudgetTripLatency -v .
func TestBudgetTripLatency(t *testing.T) {
	n := 20
	if v, err := strconv.Atoi(os.Getenv("HUB_TRIPS")); err == nil && v > 0 {
		n = v
	}
	bin := fakeBin(t, "trip")
	var lat []time.Duration
	for i := 0; i < n; i++ {
		out := filepath.Join(t.TempDir(), "times")
		fin := hub.Run(t.Context(), hub.Request{Agent: "opencode", Prompt: "x", Bin: bin,
			Env:    []string{"HUB_FAKE_OUT=" + out},
			Limits: budget.Limits{MaxCostUSD: 0.25, Timeout: 20 * time.Second, Grace: 5 * time.Second}},
			func(events.Event) error { return nil })
		if fin.Error == nil || fin.Error.Reason != events.ReasonCost {
			t.Fatalf("run %d: %+v, want budget_exceeded/cost", i, fin.Error)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("run %d: the agent never got SIGTERM: %v", i, err)
		}
		var t0, t1 int64
		if _, err := fmt.Sscan(string(b), &t0, &t1); err != nil {
			t.Fatal(err)
		}
		lat = append(lat, time.Duration(t1-t0))
	}
	slices.Sort(lat)
	median, worst := lat[len(lat)/2], lat[len(lat)-1]
	t.Logf("budget trip → SIGTERM in the agent over %d runs: median %s, max %s", n, median, worst)
	if worst > 500*time.Millisecond {
		t.Errorf("slowest trip %s, want well under 500ms", worst)
	}
}
