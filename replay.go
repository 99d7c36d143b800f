package hub

import (
	"context"
	"io"
	"os"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// Replay normalizes a saved raw transcript — an agent's stdout as --raw-log
// writes it — exactly as a live run would: the same stream (framing, line
// triage, decoder, guards) and the same verdict, given how the process ended
// (end). It uses req.Agent, req.Model, req.Cwd, req.MaxLine and the budget
// limits of req.Limits (a crossing ends the replay there, as it would stop
// a live run); end.Stderr's lines are stderr notices after the
// transcript's events; no process is started, so run.started has a null pid and
// agent_version. The credentials of hub's own environment and req.Env are
// redacted, as a live run redacts those of the agent's (a raw log holds them
// as they were). Cancelling ctx stops reading and ends the run as
// cancelled/caller.
//
// Like Run, it writes exactly one run.finished, last, and returns it.
func Replay(ctx context.Context, req Request, transcript io.Reader, end normalize.End, sink Sink, opts ...Option) events.RunFinished {
	r := newRunner(req, sink, newOptions(opts))
	ad, err := adapters.Lookup(req.Agent)
	if err != nil {
		return r.finish(r.notStarted(nil, "", events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"use one of the agents `hub agents` lists", "%v", err), nil))
	}
	r.s.meter = newMeter(req, ad)
	dec := ad.NewDecoder(req.adapterRequest())
	r.s.attempt(dec, req.MaxLine, append(os.Environ(), req.Env...), r.s.guardsFor(req, req.Limits, dec, &r.warned, r.opt.guards))
	r.started([]string{}, nil, "")
	r.s.readAll(transcript, func() bool { return ctx.Err() != nil })
	if ctx.Err() == nil && r.s.sinkErr == nil {
		// A transcript has no timing: the stderr notices come after stdout.
		errLines := &stderrLines{s: r.s}
		_, _ = errLines.Write([]byte(end.Stderr))
		errLines.flush()
	}
	rec := record{Guard: r.s.over, Outcome: dec.Outcome(end), ExitCode: end.ExitCode, Signal: end.Signal}
	if ctx.Err() != nil {
		rec.Guard = events.NewError(events.BinCancelled, events.ReasonCaller,
			"nothing to do if you meant to stop it", "replay cancelled: %v", context.Cause(ctx))
	}
	return r.finish(rec)
}
