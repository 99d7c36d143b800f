package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/turns"
)

// executeSession runs p as a session of many turns (hub run --session-in):
// the first prompt (if any) and then each prompt of the input as a turn of
// one session (package turns), its whole stream printed as --output says,
// run.finished last; the exit error is the session's run.finished's.
func executeSession(ctx context.Context, p runPlan, kill <-chan struct{}, stdin io.Reader, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	o := openOutput(ctx, cancel, p, false, stdout, stderr)
	defer o.close()
	fo := p.fileOptions()
	defer fo.close()
	opts := sessionOptions(ctx, p, kill, o.text, fo)
	if err := hub.BecomeSubreaper(); err == nil {
		opts = append(opts, hub.WithOrphans())
		defer hub.ReapOrphans()
	}
	first := p.req.Prompt
	req := p.req
	req.Prompt = ""
	conv := turns.Start(ctx, req, o.sink, turns.Config{}, opts...)
	if first != "" {
		conv.Send(first)
	}
	// The input is read on a goroutine of its own: an interrupt line must
	// reach the turn while it runs. A read that blocks (a pipe nobody
	// writes) is left behind once the session has ended.
	go feedSession(conv, p.sessionIn, stdin)
	return o.finish(conv.Wait(), fo)
}

// feedSession reads the session's input (--session-in: a file, or - for
// stdin) into conv until its end (conv.End), a bad line or a failed read
// (conv.Fail), or the session's end.
func feedSession(conv *turns.Conversation, name string, stdin io.Reader) {
	from := name
	in := stdin
	if name == "-" {
		from = "stdin"
	} else {
		f, err := os.Open(name)
		if err != nil {
			conv.Fail(err)
			return
		}
		defer f.Close()
		in = f
	}
	r := turns.NewReader(in)
	for {
		input, err := r.Next()
		select {
		case <-conv.Done():
			return
		default:
		}
		var le *turns.LineError
		switch {
		case errors.Is(err, io.EOF):
			conv.End()
			return
		case errors.As(err, &le):
			conv.Fail(fmt.Errorf("%s %w", from, err))
			return
		case err != nil:
			conv.Fail(fmt.Errorf("reading %s: %w", from, err))
			return
		case input.Interrupt:
			conv.Interrupt()
		default:
			conv.Send(input.Prompt)
		}
	}
}

// sessionOptions are the options of p's session: the force-kill channel,
// the session's limits (--turn-timeout, --session-idle), the files'
// (--raw-log), and its grant's approval (sessionApproval).
func sessionOptions(ctx context.Context, p runPlan, kill <-chan struct{}, text *textPrinter, fo runFiles) []hub.Option {
	opts := []hub.Option{hub.WithKill(kill), hub.WithTurnTimeout(p.turnTimeout), hub.WithSessionIdle(p.sessionIdle),
		sessionApproval(ctx, p, text)}
	if p.approve != "" {
		opts = append(opts, hub.WithApprover(p.approver(text)))
	}
	return append(opts, fo.opts...)
}

// sessionApproval is the session's hub.Confirm. With --confirm the
// question is asked once, here, before anything starts (with the status
// line off): a session held by resuming starts a process a turn, and each
// would ask again, in the middle of the conversation; every run of the
// session then takes that answer. A level the agent cannot be held to is
// not asked about: the session refuses it as a run does.
func sessionApproval(ctx context.Context, p runPlan, text *textPrinter) hub.Option {
	if !p.approval.confirm {
		return hub.WithConfirm(p.approval.check) // --yes, or no question: nothing to ask
	}
	ad, err := adapters.Lookup(p.req.Agent)
	if err != nil {
		return hub.WithConfirm(p.approval.check)
	}
	g, gerr := grant.For(ad.Info().Name, ad.Info().Grants, p.req.Permission.OrDefault())
	if gerr != nil {
		return hub.WithConfirm(p.approval.check)
	}
	answer := text.quiet(func() error { return p.approval.check(ctx, p.req, g) })
	return hub.WithConfirm(func(context.Context, hub.Request, grant.Rule) error { return answer })
}
