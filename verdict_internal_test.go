package hub

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// TestDecide has one row per rule of decide's order (SPEC §4).
func TestDecide(t *testing.T) {
	t.Parallel()
	cost := func(v float64) *float64 { return &v }
	ok := normalize.Outcome{OK: true, Text: "done", SessionID: "s1"}
	agentErr := events.NewError(events.BinUnavailable, events.ReasonRateLimit, "wait", "429 from the provider")
	failed := normalize.Outcome{Error: agentErr, Text: "partial"}
	budgetErr := events.NewError(events.BinBudgetExceeded, events.ReasonTokens, "raise", "over")
	notFound := events.NewError(events.BinNotInstalled, events.ReasonNotFound, "install", "no binary")
	code0 := 0
	lim := budget.Limits{Timeout: time.Minute, IdleTimeout: time.Second, MaxCostUSD: 1}
	tests := []struct {
		name       string
		rec        record
		ok         bool
		bin        events.Bin
		reason     events.Reason
		linger     bool   // a linger_kill notice
		text       string // run.finished.text
		costSource events.CostSource
	}{
		{name: "ok outcome stands", rec: record{Outcome: ok}, ok: true, text: "done"},
		{name: "sink error overrides an ok run", rec: record{Outcome: ok, SinkErr: errors.New("broken pipe")},
			bin: events.BinInternal, text: "done"},
		{name: "sink error overrides hub's cause", rec: record{Guard: budgetErr, SinkErr: errors.New("broken pipe")},
			bin: events.BinInternal},
		{name: "start error", rec: record{Start: notFound}, bin: events.BinNotInstalled, reason: events.ReasonNotFound},
		{name: "start error that is no run error is internal", rec: record{Start: errors.New("pipe: too many files")},
			bin: events.BinInternal},
		{name: "wall timeout during the probe beats the probe's error", rec: record{Start: notFound, Cause: ErrWallTimeout},
			bin: events.BinTimeout, reason: events.ReasonWall},
		{name: "caller cancel during the probe", rec: record{Start: notFound, Cause: errors.New("hub received interrupt")},
			bin: events.BinCancelled, reason: events.ReasonCaller},
		{name: "guard beats an ok outcome", rec: record{Guard: budgetErr, Outcome: ok},
			bin: events.BinBudgetExceeded, reason: events.ReasonTokens, text: "done"},
		{name: "guard beats the agent's error", rec: record{Guard: budgetErr, Outcome: failed},
			bin: events.BinBudgetExceeded, reason: events.ReasonTokens, text: "partial"},
		{name: "guard beats a terminal event", rec: record{Guard: budgetErr, Outcome: ok, Terminal: true, Cause: budgetErr},
			bin: events.BinBudgetExceeded, reason: events.ReasonTokens, text: "done"},
		{name: "wall timeout", rec: record{Cause: ErrWallTimeout, Outcome: failed}, bin: events.BinTimeout, reason: events.ReasonWall, text: "partial"},
		{name: "idle timeout", rec: record{Cause: ErrIdleTimeout, Outcome: ok}, bin: events.BinTimeout, reason: events.ReasonIdle, text: "done"},
		{name: "caller's deadline", rec: record{Cause: context.DeadlineExceeded}, bin: events.BinTimeout, reason: events.ReasonWall},
		{name: "caller's cancel", rec: record{Cause: context.Canceled}, bin: events.BinCancelled, reason: events.ReasonCaller},
		{name: "force kill", rec: record{Cause: ErrKilled}, bin: events.BinCancelled, reason: events.ReasonCaller},
		{name: "caller's chosen error", rec: record{Cause: events.NewError(events.BinInternal, "", "check", "stdout closed")},
			bin: events.BinInternal},
		{name: "linger limit: the decoder judges", rec: record{Cause: ErrLinger, Outcome: ok, Terminal: true},
			ok: true, linger: true, text: "done"},
		{name: "a timeout after the terminal event only ended the lingering", rec: record{Cause: ErrWallTimeout, Outcome: ok, Terminal: true},
			ok: true, linger: true, text: "done"},
		{name: "a failed sink's stop is reported as internal, not cancelled", rec: record{Cause: sinkCause{errors.New("x")}, Outcome: failed, SinkErr: errors.New("x")},
			bin: events.BinInternal, text: "partial"},
		{name: "agent's error when hub did not stop it", rec: record{Outcome: failed},
			bin: events.BinUnavailable, reason: events.ReasonRateLimit, text: "partial"},
		{name: "agent's final totals replace the meter's", rec: record{Outcome: normalize.Outcome{OK: true,
			Totals: &normalize.Totals{Usage: events.Tokens{Input: 5, CostUSD: cost(0.5)}, CostSource: events.CostReported, Turns: 2}},
			Usage: events.Tokens{Input: 1}, CostSource: events.CostUnknown}, ok: true, costSource: events.CostReported},
		{name: "agent's final totals over a limit", rec: record{Outcome: normalize.Outcome{OK: true,
			Totals: &normalize.Totals{Usage: events.Tokens{CostUSD: cost(2)}, CostSource: events.CostReported}}},
			bin: events.BinBudgetExceeded, reason: events.ReasonCost, costSource: events.CostReported},
		{name: "final totals without a cost are unknown", rec: record{Outcome: normalize.Outcome{OK: true,
			Totals: &normalize.Totals{CostSource: events.CostReported}}}, ok: true, costSource: events.CostUnknown},
		{name: "failure without an error is internal", rec: record{Outcome: normalize.Outcome{}}, bin: events.BinInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.rec.Limits, tt.rec.ExitCode = lim, &code0
			rf, notice := decide(tt.rec)
			if rf.OK != tt.ok {
				t.Fatalf("decide().OK = %v (error %v), want %v", rf.OK, rf.Error, tt.ok)
			}
			switch {
			case tt.ok && rf.Error != nil:
				t.Errorf("decide().Error = %v, want nil", rf.Error)
			case !tt.ok && (rf.Error == nil || rf.Error.Bin != tt.bin || rf.Error.Reason != tt.reason):
				t.Errorf("decide().Error = %v, want %s/%s", rf.Error, tt.bin, tt.reason)
			}
			if got := notice != nil && notice.Kind == events.NoticeLingerKill; got != tt.linger {
				t.Errorf("decide() linger notice = %v, want %v", notice, tt.linger)
			}
			if rf.Text != tt.text {
				t.Errorf("decide().Text = %q, want %q", rf.Text, tt.text)
			}
			if tt.costSource != "" && rf.CostSource != tt.costSource {
				t.Errorf("decide().CostSource = %q, want %q", rf.CostSource, tt.costSource)
			}
			if tot := tt.rec.Outcome.Totals; tot != nil && tt.ok && (rf.Usage.Input != tot.Usage.Input || tot.Turns > 0 && rf.Turns != tot.Turns) {
				t.Errorf("decide() usage %+v, turns %d; want the agent's totals %+v, turns %d", rf.Usage, rf.Turns, tot.Usage, tot.Turns)
			}
			if rf.ExitCode == nil || *rf.ExitCode != 0 {
				t.Errorf("decide().ExitCode = %v, want 0", rf.ExitCode)
			}
		})
	}
}

// TestDecideAnswerCalls: the answer tool's calls are no tool steps when an
// agent's own final totals are checked against --max-tool-steps.
func TestDecideAnswerCalls(t *testing.T) {
	rec := record{Outcome: normalize.Outcome{OK: true, Totals: &normalize.Totals{CostSource: events.CostUnknown}},
		Limits: budget.Limits{MaxToolSteps: 1}, ToolCalls: 2, AnswerCalls: 1}
	if rf, _ := decide(rec); !rf.OK {
		t.Errorf("one step and one answer call under --max-tool-steps 1: %v, want ok", rf.Error)
	}
	rec.AnswerCalls = 0
	if rf, _ := decide(rec); rf.OK || rf.Error.Reason != events.ReasonToolSteps {
		t.Errorf("two steps under --max-tool-steps 1: ok=%v %v, want tool_steps", rf.OK, rf.Error)
	}
}

// TestSumTotals: an agent whose cost is only in its final totals (Claude
// Code) keeps it across a repair: the run's tokens are both attempts', its
// cost the resume's running total.
func TestSumTotals(t *testing.T) {
	// The resume's cost is the session's running total: $0.25 before it,
	// $0.75 with it.
	c1, c2 := 0.25, 0.75
	a := &normalize.Totals{Usage: events.Tokens{Input: 10, Output: 5, CostUSD: &c1}, CostSource: events.CostReported, Turns: 2}
	b := &normalize.Totals{Usage: events.Tokens{Input: 20, Output: 7, CostUSD: &c2}, CostSource: events.CostReported, Turns: 1}
	s := sumTotals(a, b)
	if s == nil || s.Usage.Input != 30 || s.Usage.Output != 12 || s.Usage.CostUSD == nil || *s.Usage.CostUSD != 0.75 || s.Turns != 3 || s.CostSource != events.CostReported {
		t.Fatalf("sumTotals = %+v, want 30 in, 12 out, $0.75 reported, 3 turns", s)
	}
	rec := record{Outcome: normalize.Outcome{OK: true, Totals: s}, Limits: budget.Limits{MaxCostUSD: 0.5}}
	if rf, _ := decide(rec); rf.OK || rf.Error.Reason != events.ReasonCost {
		t.Errorf("$0.75 in all under --max-cost 0.5: ok=%v %v, want budget_exceeded/cost", rf.OK, rf.Error)
	}
	if sumTotals(a, nil) != nil || sumTotals(nil, b) != nil {
		t.Error("sumTotals with one side unknown is not nil: the meter's totals must decide")
	}
}

// whenLimitLifts: a limit that lifts at a time the agent names gets the
// wait and is retryable (a usage-limit "quota" becomes rate_limit); a quota
// with no time says waiting will not lift it; waits no one means (past,
// over MaxWaitS) are dropped.
func TestWhenLimitLifts(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 1, 22, 0, 0, 0, time.UTC)
	at := func(d time.Duration) func(time.Time) time.Time {
		return func(time.Time) time.Time { return now.Add(d) }
	}
	quota := func() *events.Error { return events.NewError(events.BinUnavailable, events.ReasonQuota, "h", "out") }
	tests := []struct {
		name    string
		e       *events.Error
		retryAt func(time.Time) time.Time
		reason  events.Reason
		wait    float64 // 0: none
		says    string
	}{
		{"quota with a reset", quota(), at(14 * time.Minute), events.ReasonRateLimit, 840, "lifts in 14m0s: waiting helps"},
		{"hard quota", quota(), nil, events.ReasonQuota, 0, "waiting will not lift"},
		{"reset in the past", quota(), at(-time.Hour), events.ReasonQuota, 0, "waiting will not lift"},
		{"reset in a century", quota(), at(100 * 365 * 24 * time.Hour), events.ReasonQuota, 0, "waiting will not lift"},
		{"absurd retry_after", events.NewError(events.BinUnavailable, events.ReasonRateLimit, "h", "slow").WithRetryAfter(3.6e14), nil, events.ReasonRateLimit, 0, "slow"},
		{"rate limit's own wait", events.NewError(events.BinUnavailable, events.ReasonRateLimit, "h", "slow").WithRetryAfter(20), nil, events.ReasonRateLimit, 20, "lifts in 20s"},
	}
	for _, tt := range tests {
		got := whenLimitLifts(tt.e, tt.retryAt, now)
		var wait float64
		if got.RetryAfterS != nil {
			wait = *got.RetryAfterS
		}
		if got.Reason != tt.reason || wait != tt.wait || !strings.Contains(got.Message, tt.says) ||
			got.Retryable != events.Retryable(got.Bin, got.Reason) {
			t.Errorf("%s: %s retryable %v wait %v %q; want %s wait %v saying %q", tt.name, got.Reason, got.Retryable, wait, got.Message, tt.reason, tt.wait, tt.says)
		}
	}
}
