package adapters

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/framer"
	"github.com/hubcli/hub/normalize"
)

// Replay normalizes a saved raw transcript — an agent's stdout as --raw-log
// writes it — exactly as a live run would: the same framing, line cleaning,
// decoder and outcome rules, given how the process ended (end). It uses
// req.Agent, req.Model, req.Cwd, req.MaxLine and the
// budget limits of req.Limits (a crossing ends the replay there, as it would
// stop a live run); no
// process is started, so run.started has a null pid and agent_version.
// The credentials of hub's own environment and req.Env are redacted, as a
// live run redacts those of the agent's (a raw log holds them as they were).
// Cancelling ctx stops reading and ends the run as cancelled/caller.
//
// Like Run, it writes exactly one run.finished, last, and returns it.
func Replay(ctx context.Context, req Request, transcript io.Reader, end normalize.End, sink Sink, opts ...Option) events.RunFinished {
	r := newRun(req, sink, newOptions(opts))
	r.secrets = newSecrets(append(os.Environ(), req.Env...))
	ad, err := Lookup(req.Agent)
	if err != nil {
		return r.fail(nil, "", events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"use one of the agents `hub agents` lists", "%v", err))
	}
	r.meter = newMeter(req, ad)
	r.emit(events.RunStarted{Argv: []string{}, Cwd: r.cwd(), Limits: req.Limits.Event()})
	dec := ad.NewDecoder(req)
	maxLine := req.MaxLine
	if maxLine <= 0 {
		maxLine = framer.DefaultMaxLine
	}
	fr := framer.New(transcript, maxLine)
	var abort *events.Error
	for ctx.Err() == nil && r.sinkErr == nil && abort == nil {
		l, err := fr.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.emit(events.Notice{Kind: events.NoticeParseError, Message: "reading transcript: " + err.Error()})
			}
			break
		}
		if over := r.line(dec, l, maxLine); over != nil {
			abort = over // a live run would stop here
			break
		}
		abort = dec.Status().Abort // a live run would stop here
	}
	out := dec.Outcome(end)
	if abort != nil {
		out.OK, out.Error = false, abort
	}
	if ctx.Err() != nil {
		out.OK, out.Error = false, events.NewError(events.BinCancelled, events.ReasonCaller,
			"nothing to do if you meant to stop it", "replay cancelled: %v", context.Cause(ctx))
	}
	return r.finish(out, end.ExitCode, end.Signal)
}
