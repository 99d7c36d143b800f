package hub

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/answer"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// structure checks the run's answer against Request.Schema (SPEC §6.2); rec
// is the record of the run so far. Only a run that ended ok has an answer:
// the CLI's own structured answer (Outcome.Answer) when it gave one, else
// its final text, which must be one JSON value (answer.Extract). An answer
// that matches becomes rec.Structured. One that does not, from a session
// the agent named, is sent back with its problems (answer.RepairPrompt) up
// to Request.SchemaRetries times: each repair is a resume of the session on
// the same stream, as the final-answer resume is (its events follow in the
// run, its usage adds to the totals, the run's limits hold across both),
// announced by a schema_retry notice. The record returned is the last
// attempt's, with rec.Invalid set (agent_failed/invalid_output, the
// problems in its message) when no answer matched; a repair that fails
// (a limit, the caller's cancel, the agent's error) ends the run with that
// failure.
func (r *runner) structure(ctx context.Context, ad adapters.Adapter, inst adapters.Install, rec record) record {
	sch := r.req.Schema
	if sch == nil || rec.Start != nil {
		return rec
	}
	retries := r.req.SchemaRetriesOrDefault()
	for n := 0; ; n++ {
		v, linger := decide(r.totals(rec))
		if !v.OK {
			return rec // a failed run (over a limit too) has no answer to check
		}
		value, problems, stop := r.checkAnswer(ctx, sch, rec.Outcome)
		if stop != nil {
			rec.Guard = stop
			return rec
		}
		if problems == nil {
			// A credential in the value is redacted in run.finished like
			// anywhere else: what is left must still match.
			if red := r.s.secrets.Raw(value); !bytes.Equal(red, value) {
				if _, ps, stop := r.checkAnswer(ctx, sch, normalize.Outcome{Answer: red}); stop != nil {
					rec.Guard = stop
					return rec
				} else if ps != nil {
					rec.Invalid = events.NewError(events.BinAgentFailed, events.ReasonInvalidOutput,
						"keep credentials out of the answer; the agent's environment holds the value",
						"the answer holds a credential, which hub redacts; redacted, it no longer matches --schema: %s", answer.Problems(ps))
					return rec
				}
			}
			rec.Structured = value
			return rec
		}
		rec.Invalid = invalidAnswer(problems)
		sid := rec.Outcome.SessionID
		lim := r.req.Limits
		left := time.Duration(0) // no limit
		if lim.Timeout > 0 {
			left = lim.Timeout - time.Since(r.began)
		}
		why := ""
		switch {
		case retries == 0:
			why = "no repair asked for (--schema-retries 0)"
		case n >= retries:
			why = fmt.Sprintf("still not matching after %d repair(s) (--schema-retries %d)", n, retries)
		case sid == "":
			why = "no repair: the agent reported no session id to resume"
		case ctx.Err() != nil:
			why = "no repair: the run was cancelled"
		case lim.Timeout > 0 && left <= 0:
			why = "no repair: no time left under --timeout"
		default:
			if used := spent(r.totals(rec)); used != "" {
				why = "no repair: " + used
			}
		}
		if why != "" {
			rec.Invalid.Message += "; " + why
			return rec
		}
		if linger != nil { // of this attempt, which the repair supersedes
			r.s.emit(*linger)
		}
		r.s.emit(repairNotice(sid, problems, n+1, retries))
		req := r.req
		req.Prompt, req.Resume = answer.RepairPrompt(problems), sid
		req.Files = nil // sent with the first prompt
		req.Limits.Timeout, req.Limits.Finalize = left, -1
		got, err := r.resume(ctx, ad, inst, req)
		if err != nil {
			rec.Invalid.Message += fmt.Sprintf("; no repair: cannot resume session %s: %s", sid, asError(err).Message)
			return rec
		}
		// The CLI's own final totals (Claude Code's result, the only place
		// it reports cost) are of this process alone: the run's are the
		// sum of every attempt's. Without them for each, the meter's.
		got.Outcome.Totals = sumTotals(rec.Outcome.Totals, got.Outcome.Totals)
		if got.Outcome.SessionID == "" {
			got.Outcome.SessionID = sid
		}
		if got.Outcome.Text == "" {
			got.Outcome.Text = rec.Outcome.Text // the raw answer, when the repair gave none
		}
		if rv, _ := decide(got); !rv.OK && rv.Error != nil && rv.Error.Bin == events.BinInvalidInput {
			// The session the agent named could not be resumed (no
			// such session, a request the CLI refuses): not the
			// caller's input, and the answer stays the one that did not
			// match.
			rec.Invalid.Message += fmt.Sprintf("; no repair: resuming session %s failed: %s", sid, rv.Error.Message)
			rec.Outcome.Totals = got.Outcome.Totals
			return rec
		}
		got.Note = fmt.Sprintf("while hub resumed session %s to repair an answer that did not match --schema (%s)", sid, answer.Problems(problems))
		rec = got
	}
}

// totals is rec with the run's limits and the meter's totals so far, as
// finish gives them to decide: a verdict of the run up to now.
func (r *runner) totals(rec record) record {
	rec.Usage, rec.CostSource, rec.Turns, rec.ToolCalls = r.s.meter.Totals()
	rec.AnswerCalls = rec.ToolCalls - r.s.meter.Steps()
	rec.Limits = r.req.Limits
	return rec
}

// spent says which limit of rec's (with totals) is used up, so that a
// repair, a further model turn, would cross it at once; "" when none is.
func spent(rec record) string {
	lim, usage, turns := rec.Limits, rec.Usage, rec.Turns
	if t := rec.Outcome.Totals; t != nil {
		usage = t.Usage
		if t.Turns > 0 {
			turns = t.Turns
		}
	}
	switch {
	case lim.MaxCostUSD > 0 && usage.CostUSD != nil && *usage.CostUSD >= lim.MaxCostUSD:
		return fmt.Sprintf("--max-cost $%.4f is used up ($%.4f)", lim.MaxCostUSD, *usage.CostUSD)
	case lim.MaxTokens > 0 && usage.Sum() >= lim.MaxTokens:
		return fmt.Sprintf("--max-tokens %d is used up (%d)", lim.MaxTokens, usage.Sum())
	case lim.MaxTurns > 0 && turns >= lim.MaxTurns:
		return fmt.Sprintf("--max-turns %d is used up (%d)", lim.MaxTurns, turns)
	}
	return ""
}

// sumTotals is the run's final totals after a resume of its own session:
// a's (the attempts before), then b's (the resume), nil unless both have
// them. Tokens and turns are each process's own and add up; the cost is
// the session's running total (Claude Code 2.1.328's result.total_cost_usd
// on a resumed session includes the earlier processes'; result.usage does
// not), so the resume's cost is the run's.
func sumTotals(a, b *normalize.Totals) *normalize.Totals {
	if a == nil || b == nil {
		return nil
	}
	t := normalize.Totals{Usage: a.Usage.Add(b.Usage), CostSource: b.CostSource, Turns: a.Turns + b.Turns}
	t.Usage.CostUSD = b.Usage.CostUSD
	if a.CostSource != b.CostSource || t.Usage.CostUSD == nil {
		t.CostSource = events.CostUnknown
	}
	return &t
}

// checkGrace is how long checkAnswer waits for a check when the run was
// cancelled before it began (after the agent's terminal event).
const checkGrace = time.Second

// checkAnswer checks out's answer (check) in a goroutine of its own,
// waiting for it, the caller's cancel or the run's --timeout: a schema can
// make validation exponential in the answer's nesting (anyOf over
// contains), and the validator cannot be interrupted. On a stop it returns
// the run's error; the check then finishes on its own, its result dropped.
func (r *runner) checkAnswer(ctx context.Context, sch *answer.Schema, out normalize.Outcome) (json.RawMessage, []answer.Problem, *events.Error) {
	type result struct {
		value    json.RawMessage
		problems []answer.Problem
	}
	done := make(chan result, 1)
	go func() {
		v, ps := check(sch, out, r.info.AnswerTool)
		done <- result{v, ps}
	}()
	var timeout <-chan time.Time
	if lim := r.req.Limits.Timeout; lim > 0 {
		t := time.NewTimer(lim - time.Since(r.began))
		defer t.Stop()
		timeout = t.C
	}
	const while = " (while hub checked the answer against --schema)"
	if ctx.Err() != nil {
		// The cancel came after the agent's terminal event, while it
		// lingered: the run's outcome stands, so a check that ends soon
		// is waited for.
		t := time.NewTimer(checkGrace)
		select {
		case res := <-done:
			t.Stop()
			return res.value, res.problems, nil
		case <-t.C:
		}
	}
	select {
	case res := <-done:
		return res.value, res.problems, nil
	case <-timeout:
		e := *hubCause(ErrWallTimeout, r.req.Limits)
		e.Message += while
		return nil, nil, &e
	case <-ctx.Done():
		e := hubCause(context.Cause(ctx), r.req.Limits)
		if e == nil {
			e = events.NewError(events.BinCancelled, events.ReasonCaller, "run again to retry", "run cancelled by the caller")
		}
		c := *e
		c.Message += while
		return nil, nil, &c
	}
}

// check checks out's answer against sch: the CLI's structured answer when
// it gave one; else, for a CLI that delivers it through answerTool, the
// problem that there is none; else its text.
func check(sch *answer.Schema, out normalize.Outcome, answerTool string) (json.RawMessage, []answer.Problem) {
	switch {
	case out.Answer != nil:
		return sch.Validate(out.Answer)
	case answerTool != "":
		return nil, []answer.Problem{{Message: fmt.Sprintf("no structured answer: the model never called the %s tool (its text is not the answer)", answerTool)}}
	}
	return sch.Check(out.Text)
}

// invalidAnswer is the run error of an answer that does not match the
// schema.
func invalidAnswer(ps []answer.Problem) *events.Error {
	return events.NewError(events.BinAgentFailed, events.ReasonInvalidOutput,
		"text holds the raw answer; say more about the shape in the prompt, loosen the schema, or raise --schema-retries",
		"the answer does not match --schema: %s", answer.Problems(ps))
}

// maxNoticeProblems bounds the problems a schema_retry notice lists (its
// data.problems_total counts them all), as the message and the repair
// prompt list 20: an answer can have millions.
const maxNoticeProblems = 20

// repairNotice announces the repair attempt of maxAttempts that resumes
// session sid.
func repairNotice(sid string, ps []answer.Problem, attempt, maxAttempts int) events.Notice {
	listed := ps[:min(len(ps), maxNoticeProblems)]
	data, _ := json.Marshal(struct {
		Attempt       int              `json:"attempt"`
		MaxAttempts   int              `json:"max_attempts"`
		SessionID     string           `json:"session_id"`
		Problems      []answer.Problem `json:"problems"`
		ProblemsTotal int              `json:"problems_total"`
	}{attempt, maxAttempts, sid, listed, len(ps)})
	return events.Notice{Kind: events.NoticeSchemaRetry, Data: data, Message: fmt.Sprintf(
		"the answer did not match --schema (%s); hub resumes session %s to repair it (attempt %d of %d)",
		answer.Problems(ps), sid, attempt, maxAttempts)}
}

// resume runs one more agent process of the run for req (a resume of a
// session: the final answer after --max-tool-steps, a repair), on the
// run's stream: its events follow the run's, its usage adds to the meter's
// totals, and its wall-clock limit (req.Limits.Timeout) counts from its own
// start. It returns the attempt's record, or an error when the command
// could not be built or the process could not start.
func (r *runner) resume(ctx context.Context, ad adapters.Adapter, inst adapters.Install, req Request) (record, error) {
	spec, err := ad.Command(req.adapterRequest(), inst)
	if err != nil {
		return record{}, err
	}
	if spec.Cleanup != nil {
		defer spec.Cleanup()
	}
	r.s.meter.Continue()
	began := r.began
	r.began = time.Now()
	got, err := r.attempt(ctx, ad, spec, req, nil)
	r.began = began
	r.s.flush() // the end of its last text delta
	if err != nil {
		return record{}, err
	}
	got.Limits = req.Limits
	return got, nil
}
