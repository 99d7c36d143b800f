package codex

import (
	"testing"

	"github.com/hubcli/hub/events"
)

// Every row of rules takes its own example first, and Classify gives the
// row's bin and reason.
func TestRules(t *testing.T) {
	t.Parallel()
	for i, r := range rules {
		if r.example == "" || r.seen == "" {
			t.Errorf("row %d (%v): no example or seen", i, r.patterns)
			continue
		}
		status := HTTPStatus(r.example)
		for j, o := range rules[:i] {
			if o.matches(r.example, status) {
				t.Errorf("row %d's example %q is taken by row %d first", i, r.example, j)
			}
		}
		if !r.matches(r.example, status) {
			t.Errorf("row %d does not take its example %q", i, r.example)
		}
		if e := Classify(r.example); e.Bin != r.bin || e.Reason != r.reason {
			t.Errorf("row %d: Classify(%q) = %s/%s, want %s/%s", i, r.example, e.Bin, e.Reason, r.bin, r.reason)
		}
	}
	if e := Classify("something new went wrong"); e.Bin != events.BinAgentFailed {
		t.Errorf("an unknown message is %s/%s, want agent_failed", e.Bin, e.Reason)
	}
}
