package adapters

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// FinalAnswerPrompt is the request hub sends when it resumes a session that
// crossed --max-tool-steps (SPEC §5): one more turn, no tools, the best
// answer so far.
const FinalAnswerPrompt = "You have used all the tool calls allowed for this task (hub --max-tool-steps). " +
	"Do not call any tool. Reply now, in text only, with your best answer from what you have found so far, " +
	"and say briefly what is left unfinished."

// finalize runs the final-answer resume of a run that crossed MaxToolSteps
// (over is that crossing) and whose first agent process was stopped: when the
// agent gave a session id, it resumes that session once with
// FinalAnswerPrompt, tools off (Request.NoTools) and its own time limit
// (Limits.Finalize, within what is left of Limits.Timeout). The resume's
// events go to the same sink, in the same run; its usage adds to the run's
// totals. A tool call during the resume stops it.
//
// It returns the run's outcome: always budget_exceeded/tool_steps, with the
// resume's answer as Text and r.partial set when the resume ended ok with
// text, else the first process's text and the reason there is no final
// answer in the error message.
func (r *run) finalize(ctx context.Context, ad Adapter, inst Install, first normalize.Outcome, over *events.Error) normalize.Outcome {
	lim := r.req.Limits
	d := lim.FinalizeOrDefault()
	if d < 0 || r.sinkErr != nil {
		return first
	}
	out := first
	out.OK, out.Totals = false, nil
	note := func(format string, a ...any) normalize.Outcome {
		e := *over
		e.Message += "; " + fmt.Sprintf(format, a...)
		out.Error = &e
		return out
	}
	// The caller's cancel (SIGINT, a closed stdout) or deadline comes
	// first, as in any run (SPEC §4): the run ends with it, saying what
	// hub was doing.
	stopped := func() normalize.Outcome {
		e := r.hubCause(ctx, context.Cause(ctx), lim)
		if e == nil {
			e = events.NewError(events.BinCancelled, events.ReasonCaller, "run again to retry", "run cancelled by the caller")
		}
		c := *e
		c.Message += fmt.Sprintf(" (after %s; hub was resuming session %s for a final answer)", over.Message, first.SessionID)
		out.Error = &c
		return out
	}
	if lim.Timeout > 0 {
		d = min(d, lim.Timeout-time.Since(r.began))
	}
	switch {
	case ctx.Err() != nil:
		return stopped()
	case first.SessionID == "":
		return note("no final answer: the agent reported no session id to resume")
	case d <= 0:
		return note("no final answer: no time left under --timeout")
	}
	req := r.req
	req.Prompt, req.Resume, req.NoTools = FinalAnswerPrompt, first.SessionID, true
	_, _, _, tools := r.meter.Totals()
	req.Limits = budget.Limits{
		Timeout:      d,
		IdleTimeout:  lim.IdleTimeout,
		MaxCostUSD:   lim.MaxCostUSD,
		MaxTokens:    lim.MaxTokens,
		MaxToolSteps: tools, // any tool call crosses
		Grace:        lim.Grace,
		Linger:       lim.Linger,
		Finalize:     -1,
	}
	spec, err := ad.Command(req, inst)
	if err != nil {
		return note("no final answer: cannot resume session %s: %s", first.SessionID, asError(err).Message)
	}
	c := &run{req: req, opt: r.opt, sink: r.sink, clock: r.clock, runID: r.runID, start: r.start, began: time.Now(),
		seq: r.seq, sinkErr: r.sinkErr, meter: r.meter, costWarned: r.costWarned, notices: r.notices}
	c.meter.Continue()
	res, err := c.agent(ctx, ad, spec, nil)
	if held := c.secrets.flush(); held != "" { // the end of its last text delta
		c.send(events.TextDelta{Text: held})
	}
	r.seq, r.sinkErr, r.meter, r.notices = c.seq, c.sinkErr, c.meter, c.notices
	if ctx.Err() != nil {
		return stopped()
	}
	if err != nil {
		return note("no final answer: cannot resume session %s: %s", first.SessionID, asError(err).Message)
	}
	got := res.outcome
	switch {
	case got.Error != nil && got.Error.Bin == events.BinTimeout && got.Error.Reason == events.ReasonWall:
		return note("no final answer: the final-answer resume of session %s ran out of its %s (--finalize-timeout, within what was left of --timeout)",
			first.SessionID, d.Round(time.Millisecond))
	case got.Error != nil && got.Error.Reason == events.ReasonToolSteps:
		return note("no final answer: the agent called a tool during the final-answer resume of session %s, and hub stopped it", first.SessionID)
	case got.Error != nil:
		return note("no final answer: the final-answer resume of session %s failed: %s/%s: %s",
			first.SessionID, got.Error.Bin, got.Error.Reason, got.Error.Message)
	case !got.OK || strings.TrimSpace(got.Text) == "":
		return note("no final answer: the final-answer resume of session %s gave no text", first.SessionID)
	}
	out.Text = got.Text
	if got.SessionID != "" {
		out.SessionID = got.SessionID
	}
	r.partial = true
	return note("hub resumed session %s once, without tools, for a final answer: text is that partial answer", first.SessionID)
}
