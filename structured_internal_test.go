package hub

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/answer"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// TestCheckAnswerBounded: checking an answer can take long (this schema's
// anyOf over contains is exponential in the answer's nesting: about 0.8 s
// for 18 levels here, 2.8 s for 20, 11 s for 22), and the caller's cancel
// (after checkGrace) or the run's --timeout ends the wait before the check
// ends, saying what hub was doing; a check that ends within checkGrace of a
// cancel that came first still counts.
func TestCheckAnswerBounded(t *testing.T) {
	t.Parallel()
	sch, err := answer.Compile([]byte(`{"$defs":{"a":{"anyOf":[{"items":{"$ref":"#/$defs/a"},"contains":{"const":"never"}},{"items":{"$ref":"#/$defs/a"}}]}},"$ref":"#/$defs/a"}`))
	if err != nil {
		t.Fatal(err)
	}
	out := normalize.Outcome{OK: true, Text: strings.Repeat("[", 20) + strings.Repeat("]", 20)}
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	lim := budget.Limits{Timeout: time.Minute}
	for _, tt := range []struct {
		name   string
		ctx    context.Context
		began  time.Time
		bin    events.Bin
		reason events.Reason
	}{
		{"cancelled", cancelled, time.Now(), events.BinCancelled, events.ReasonCaller},
		{"past --timeout", t.Context(), time.Now().Add(-lim.Timeout), events.BinTimeout, events.ReasonWall},
	} {
		r := &runner{req: Request{Schema: sch, Limits: lim}, began: tt.began}
		v, ps, stop := r.checkAnswer(tt.ctx, sch, out)
		if v != nil || ps != nil || stop == nil || stop.Bin != tt.bin || stop.Reason != tt.reason ||
			!strings.Contains(stop.Message, "while hub checked the answer against --schema") {
			t.Errorf("%s: checkAnswer = %s, %v, %v; want %s/%s saying hub was checking", tt.name, v, ps, stop, tt.bin, tt.reason)
		}
	}
	// Not stopped, or cancelled with a check that ends at once, it waits
	// for the result.
	r := &runner{req: Request{Schema: sch, Limits: lim}, began: time.Now()}
	for _, ctx := range []context.Context{t.Context(), cancelled} {
		if v, ps, stop := r.checkAnswer(ctx, sch, normalize.Outcome{Text: "[[]]"}); string(v) != "[[]]" || ps != nil || stop != nil {
			t.Errorf("checkAnswer([[]]) = %s, %v, %v; want the value", v, ps, stop)
		}
	}
}
