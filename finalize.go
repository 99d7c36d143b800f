package hub

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
)

// FinalAnswerPrompt is the request hub sends when it resumes a session that
// crossed --max-tool-steps (SPEC §5): one more turn, no tools, the best
// answer so far.
const FinalAnswerPrompt = "You have used all the tool calls allowed for this task (hub --max-tool-steps). " +
	"Do not call any tool. Reply now, in text only, with your best answer from what you have found so far, " +
	"and say briefly what is left unfinished."

// finalize runs the final-answer resume of a run whose first agent process
// was stopped at --max-tool-steps (first is that attempt's record, with the
// crossing as its Guard): when the agent gave a session id, it resumes that
// session once with FinalAnswerPrompt, tools off (Request.NoTools) and its
// own time limit (Limits.Finalize, within what is left of Limits.Timeout).
// The resume is a second attempt on the same stream — its events follow in
// the same run, its usage adds to the meter's totals — and is judged by the
// same verdict (decide); a tool call during the resume crosses its tool-step
// cap and stops it.
//
// It returns the run's record: always stopped by the tool-step guard
// (budget_exceeded/tool_steps), with the resume's answer as the outcome's
// text and Partial set when the resume ended ok with text, else the first
// process's text and the reason there is no final answer in the error
// message; or the caller's cancel when that came first (SPEC §4).
func (r *runner) finalize(ctx context.Context, ad adapters.Adapter, inst adapters.Install, first record) record {
	lim := r.req.Limits
	d := lim.FinalizeOrDefault()
	if d < 0 || r.s.sinkErr != nil {
		return first
	}
	over, sid := first.Guard, first.Outcome.SessionID
	rec := first
	rec.Outcome.OK, rec.Outcome.Totals = false, nil
	note := func(format string, a ...any) record {
		e := *over
		e.Message += "; " + fmt.Sprintf(format, a...)
		rec.Guard = &e
		return rec
	}
	// The caller's cancel (SIGINT, a closed stdout) or deadline comes
	// first, as in any run: the run ends with it, saying what hub was doing.
	stopped := func() record {
		e := hubCause(context.Cause(ctx), lim)
		if e == nil {
			e = events.NewError(events.BinCancelled, events.ReasonCaller, "run again to retry", "run cancelled by the caller")
		}
		c := *e
		c.Message += fmt.Sprintf(" (after %s; hub was resuming session %s for a final answer)", over.Message, sid)
		rec.Guard = &c
		return rec
	}
	if lim.Timeout > 0 {
		d = min(d, lim.Timeout-time.Since(r.began))
	}
	switch {
	case ctx.Err() != nil:
		return stopped()
	case sid == "":
		return note("no final answer: the agent reported no session id to resume")
	case d <= 0:
		return note("no final answer: no time left under --timeout")
	}
	got, err := r.resume(ctx, ad, inst, r.resumeRequest(sid, d))
	if ctx.Err() != nil {
		return stopped()
	}
	if err != nil {
		return note("no final answer: cannot resume session %s: %s", sid, asError(err).Message)
	}
	v, notice := decide(got)
	if notice != nil {
		r.s.emit(*notice)
	}
	if why := noAnswer(v, sid, d); why != "" {
		return note("%s", why)
	}
	rec.Outcome.Text = v.Text
	if v.SessionID != nil && *v.SessionID != "" {
		rec.Outcome.SessionID = *v.SessionID
	}
	rec.Partial = true
	return note("hub resumed session %s once, without tools, for a final answer: text is that partial answer", sid)
}

// resumeRequest is the run's request turned into the final-answer resume of
// session sid within d: no tools, and any tool call crosses its cap.
func (r *runner) resumeRequest(sid string, d time.Duration) Request {
	lim := r.req.Limits
	req := r.req
	req.Prompt, req.Resume, req.NoTools = FinalAnswerPrompt, sid, true
	req.Files = nil // sent with the first prompt
	tools := r.s.meter.Steps()
	req.Limits = budget.Limits{
		Timeout:      d,
		IdleTimeout:  lim.IdleTimeout,
		MaxCostUSD:   lim.MaxCostUSD,
		MaxTokens:    lim.MaxTokens,
		MaxTurns:     lim.MaxTurns, // turns, like tokens and cost, count for the whole run
		MaxToolSteps: tools,        // any tool call crosses
		Grace:        lim.Grace,
		Linger:       lim.Linger,
		Finalize:     -1,
	}
	return req
}

// noAnswer says why the resume's verdict v (of session sid, limit d) gives
// no final answer, "" when it gives one.
func noAnswer(v events.RunFinished, sid string, d time.Duration) string {
	switch e := v.Error; {
	case e != nil && e.Bin == events.BinTimeout && e.Reason == events.ReasonWall:
		return fmt.Sprintf("no final answer: the final-answer resume of session %s ran out of its %s (--finalize-timeout, within what was left of --timeout)",
			sid, d.Round(time.Millisecond))
	case e != nil && e.Reason == events.ReasonToolSteps:
		return fmt.Sprintf("no final answer: the agent called a tool during the final-answer resume of session %s, and hub stopped it", sid)
	case e != nil:
		return fmt.Sprintf("no final answer: the final-answer resume of session %s failed: %s/%s: %s", sid, e.Bin, e.Reason, e.Message)
	case !v.OK || strings.TrimSpace(v.Text) == "":
		return fmt.Sprintf("no final answer: the final-answer resume of session %s gave no text", sid)
	}
	return ""
}
