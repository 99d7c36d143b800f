package hub

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/hubcli/hub/events"
)

// TestSanitize: what an agent can write that JSON or the schema cannot
// carry is made safe before it is encoded.
func TestSanitize(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	for _, c := range []*float64{f(math.Inf(1)), f(math.Inf(-1)), f(math.NaN()), f(-100)} {
		u := sanitize(events.Usage{Step: events.Tokens{Input: -5, Output: math.MaxInt64, CostUSD: c}, Total: events.Tokens{CostUSD: c}}).(events.Usage)
		if u.Step.CostUSD != nil || u.Total.CostUSD != nil || u.Step.Input != 0 || u.Step.Output != events.MaxCount {
			t.Errorf("cost %v: %+v, want cost nil, counts clamped to [0, MaxCount]", *c, u)
		}
		if _, err := json.Marshal(u); err != nil {
			t.Errorf("cost %v: encoding: %v", *c, err)
		}
	}
	if u := sanitize(events.Usage{Step: events.Tokens{CostUSD: f(0.5)}}).(events.Usage); u.Step.CostUSD == nil || *u.Step.CostUSD != 0.5 {
		t.Errorf("a sane cost changed: %+v", u.Step)
	}
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	for _, in := range []string{`{"command":` + deep + `}`, `{"command":"a` + "\xff" + `"}`, `[1,2]`, `not json`} {
		ts := sanitize(events.ToolStarted{CallID: "c", Name: "bash", Kind: events.ToolShell, Input: json.RawMessage(in)}).(events.ToolStarted)
		b, err := events.Event{Body: ts}.MarshalJSON()
		if err != nil || !json.Valid(b) || strings.Contains(string(b), "\xff") || ts.Input[0] != '{' {
			t.Errorf("tool input %.40q: %.200s, %v; want a valid event with an object input", in, b, err)
		}
	}
	if ts := sanitize(events.ToolStarted{Input: json.RawMessage(`{"a":1}`)}).(events.ToolStarted); string(ts.Input) != `{"a":1}` {
		t.Errorf("a good input changed: %s", ts.Input)
	}
	rf := sanitize(events.RunFinished{Usage: events.Tokens{CostUSD: f(math.Inf(1))}, CostUSD: f(math.Inf(1))}).(events.RunFinished)
	if rf.CostUSD != nil || rf.Usage.CostUSD != nil {
		t.Errorf("run.finished with an infinite cost: %+v, want unknown", rf)
	}
}
