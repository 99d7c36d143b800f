package turns_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hubcli/hub"
	_ "github.com/hubcli/hub/adapters/all"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/hubtest/fakeagent"
	"github.com/hubcli/hub/turns"
)

// init plays the fake agent when this test binary was started as one (by
// the script fakeBin writes).
func init() {
	if os.Getenv(fakeagent.EnvDialect) != "" {
		os.Exit(fakeagent.Main(os.Args[1:]))
	}
}

// markerEnv is in the environment of every fake agent a test starts, with
// the test's own directory as its value: how leftovers finds them.
const markerEnv = "HUB_TURNS_TEST_DIR"

// fakeBin writes a script that runs this test binary as the fake agent of
// dialect playing fault, and returns its path and the marker of its
// processes' environment.
func fakeBin(t *testing.T, dialect, fault string) (bin, marker string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin = filepath.Join(dir, dialect)
	marker = markerEnv + "=" + dir
	script := fmt.Sprintf("#!/bin/sh\nGORACE=atexit_sleep_ms=0 %s %s=%s %s=%s exec %q \"$@\"\n",
		marker, fakeagent.EnvDialect, dialect, fakeagent.EnvFault, fault, exe)
	if err := hubtest.WriteScript(bin, []byte(script)); err != nil {
		t.Fatal(err)
	}
	return bin, marker
}

// recorder is a sink that keeps every event, and the JSONL stream of them.
type recorder struct {
	mu     sync.Mutex
	events []events.Event
	stream bytes.Buffer
	enc    *events.Encoder
}

func newRecorder() *recorder {
	r := &recorder{}
	r.enc = events.NewEncoder(&r.stream)
	return r
}

func (r *recorder) sink(ev events.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return r.enc.Encode(ev)
}

func (r *recorder) count(typ events.Type) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.events {
		if ev.Type() == typ {
			n++
		}
	}
	return n
}

func (r *recorder) turnsFinished() []events.TurnFinished {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []events.TurnFinished
	for _, ev := range r.events {
		if tf, ok := ev.Body.(events.TurnFinished); ok {
			out = append(out, tf)
		}
	}
	return out
}

// check fails t unless the recorded stream is one valid hub.event/v1
// stream (seq without gaps, run.finished last) and no process of the
// test's fake agents is left.
func (r *recorder) check(t *testing.T, marker string) {
	t.Helper()
	if err := hubtest.ValidateStream(r.stream.Bytes()); err != nil {
		t.Errorf("the conversation's events are not one valid stream: %v\n%s", err, r.stream.Bytes())
	}
	if left := hubtest.Leftovers(marker); len(left) > 0 {
		t.Errorf("processes of the session %v outlived it", left)
	}
}

func request(dialect, bin string) hub.Request {
	return hub.Request{Agent: dialect, Bin: bin, Permission: grant.Full,
		Limits: budget.Limits{Timeout: time.Minute, Grace: 500 * time.Millisecond}}
}

// TestThreeTurns: three prompts sent at once run as three turns, one after
// another, in one agent process (the fake agent holds a live session in
// the claude and pi dialects); End closes the session once they have run.
func TestThreeTurns(t *testing.T) {
	t.Parallel()
	for _, d := range []string{"claude", "pi"} {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			bin, marker := fakeBin(t, d, "ok")
			rec := newRecorder()
			c := turns.Start(t.Context(), request(d, bin), rec.sink, turns.Config{})
			var dones []<-chan struct{}
			for _, p := range []string{"one", "two", "three"} {
				dones = append(dones, c.Send(p))
			}
			c.End()
			fin := c.Wait()
			if !fin.OK {
				t.Errorf("run.finished %+v, want ok", fin.Error)
			}
			for i, done := range dones {
				if !isClosed(done) {
					t.Errorf("Send %d's channel is open after the end", i+1)
				}
			}
			tfs := rec.turnsFinished()
			if len(tfs) != 3 {
				t.Fatalf("%d turn.finished, want 3", len(tfs))
			}
			for i, tf := range tfs {
				if !tf.OK || tf.Turn != int64(i+1) {
					t.Errorf("turn.finished %d: %+v, want ok, turn %d", i, tf, i+1)
				}
			}
			if n := rec.count(events.TypeRunStarted); n != 1 {
				t.Errorf("%d run.started, want 1: the session's stream opens once", n)
			}
			rec.check(t, marker)
		})
	}
}

// TestEndWithoutTurns: a session that takes no turn still gives its whole
// stream: run.started, and run.finished last.
func TestEndWithoutTurns(t *testing.T) {
	t.Parallel()
	bin, marker := fakeBin(t, "claude", "ok")
	rec := newRecorder()
	c := turns.Start(t.Context(), request("claude", bin), rec.sink, turns.Config{})
	c.End()
	if fin := c.Wait(); !fin.OK {
		t.Errorf("run.finished %+v, want ok", fin.Error)
	}
	if rec.count(events.TypeRunStarted) != 1 || rec.count(events.TypeTurnStarted) != 0 {
		t.Errorf("events %v, want run.started and no turn", rec.events)
	}
	if !isClosed(c.Send("too late")) {
		t.Errorf("Send after the end: its channel is open")
	}
	rec.check(t, marker)
}

// TestFail: a bad input ends the session at once, as
// invalid_input/bad_request with the input's error, the prompts not begun
// dropped and the agent gone.
func TestFail(t *testing.T) {
	t.Parallel()
	bin, marker := fakeBin(t, "pi", "ok")
	rec := newRecorder()
	c := turns.Start(t.Context(), request("pi", bin), rec.sink, turns.Config{})
	<-c.Send("one")
	c.Fail(&turns.LineError{Line: 2, Err: errors.New("not one JSON object")})
	dropped := c.Send("never")
	fin := c.Wait()
	if fin.OK || fin.Error == nil || fin.Error.Bin != events.BinInvalidInput || fin.Error.Reason != events.ReasonBadRequest {
		t.Fatalf("run.finished %+v, want invalid_input/bad_request", fin.Error)
	}
	if want := "the session's input: line 2: not one JSON object"; fin.Error.Message != want {
		t.Errorf("message %q, want %q", fin.Error.Message, want)
	}
	if !isClosed(dropped) || len(rec.turnsFinished()) != 1 {
		t.Errorf("%d turns, want the one before the bad input", len(rec.turnsFinished()))
	}
	rec.check(t, marker)
}

// TestRefusedStart: a session that cannot start is reported as a run
// that did not start, with its bin.
func TestRefusedStart(t *testing.T) {
	t.Parallel()
	rec := newRecorder()
	c := turns.Start(t.Context(), request("claude", filepath.Join(t.TempDir(), "no-such-claude")), rec.sink, turns.Config{})
	done := c.Send("hi")
	fin := c.Wait()
	if fin.OK || fin.Error == nil || fin.Error.Bin != events.BinNotInstalled {
		t.Fatalf("run.finished %+v, want not_installed", fin.Error)
	}
	if !isClosed(done) {
		t.Errorf("Send on a session that never started: its channel is open")
	}
	if len(rec.events) != 2 || rec.events[0].Type() != events.TypeRunStarted || rec.events[1].Type() != events.TypeRunFinished {
		t.Errorf("events %v, want run.started and run.finished", rec.events)
	}
	if rs, ok := rec.events[0].Body.(events.RunStarted); !ok || rs.PID != nil {
		t.Errorf("run.started %+v, want no pid (nothing ran)", rec.events[0].Body)
	}
	rec.check(t, "no process to look for")

	// A grant the caller does not approve: refused before anything starts.
	bin, marker := fakeBin(t, "claude", "ok")
	rec = newRecorder()
	no := hub.WithConfirm(func(context.Context, hub.Request, grant.Rule) error { return errors.New("not approved") })
	fin = turns.Start(t.Context(), request("claude", bin), rec.sink, turns.Config{}, no).Wait()
	if fin.Error == nil || fin.Error.Bin != events.BinPermissionDenied {
		t.Errorf("run.finished %+v, want permission_denied", fin.Error)
	}
	rec.check(t, marker)
}

// TestSinkError: a sink that fails stops the session (bin internal) and
// gets nothing but the run.finished after its failure.
func TestSinkError(t *testing.T) {
	t.Parallel()
	bin, marker := fakeBin(t, "claude", "ok")
	var got []events.Type
	failed := false
	sink := func(ev events.Event) error {
		got = append(got, ev.Type())
		if ev.Type() == events.TypeTurnStarted && !failed {
			failed = true
			return errors.New("consumer gone")
		}
		return nil
	}
	c := turns.Start(t.Context(), request("claude", bin), sink, turns.Config{})
	c.Send("one")
	c.Send("two")
	fin := c.Wait()
	if fin.Error == nil || fin.Error.Bin != events.BinInternal {
		t.Errorf("run.finished %+v, want internal", fin.Error)
	}
	if n := len(got); n < 2 || got[n-2] != events.TypeTurnStarted || got[n-1] != events.TypeRunFinished {
		t.Errorf("the sink got %v, want only run.finished after the failed turn.started", got)
	}
	if left := hubtest.Leftovers(marker); len(left) > 0 {
		t.Errorf("processes %v outlived the session", left)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestInterruptDropsQueued: an interrupt whose prompt's turn has not begun
// (the turn before it is still running) drops that prompt: it never
// reaches the agent, no turn runs for it, and the running turn is left
// alone. The sink holds the first turn open until the interrupt is in.
func TestInterruptDropsQueued(t *testing.T) {
	t.Parallel()
	bin, marker := fakeBin(t, "claude", "ok")
	rec := newRecorder()
	inTurn, release := make(chan struct{}), make(chan struct{})
	sink := func(ev events.Event) error {
		if tf, ok := ev.Body.(events.TurnStarted); ok && tf.Turn == 1 {
			close(inTurn)
			<-release
		}
		return rec.sink(ev)
	}
	c := turns.Start(t.Context(), request("claude", bin), sink, turns.Config{})
	first := c.Send("one")
	dropped := c.Send("two")
	<-inTurn
	c.Interrupt()
	if !isClosed(dropped) {
		t.Errorf("the interrupted prompt's channel is open: it is dropped at once")
	}
	close(release)
	<-first
	c.End()
	if fin := c.Wait(); !fin.OK {
		t.Errorf("run.finished %+v, want ok", fin.Error)
	}
	tfs := rec.turnsFinished()
	if len(tfs) != 1 || !tfs[0].OK || tfs[0].Interrupted {
		t.Errorf("turn.finished %+v, want one, ok: the running turn is not the interrupt's", tfs)
	}
	rec.check(t, marker)
}

// TestStoppedBeforeStart: a conversation whose context is already done
// (a signal, or a prompt read that failed) starts nothing and reports the
// context's cause as a run that did not start.
func TestStoppedBeforeStart(t *testing.T) {
	t.Parallel()
	bin, marker := fakeBin(t, "claude", "ok")
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(events.NewError(events.BinInvalidInput, events.ReasonPromptTooLarge, "shorten it", "the prompt is too large"))
	rec := newRecorder()
	fin := turns.Start(ctx, request("claude", bin), rec.sink, turns.Config{}).Wait()
	if fin.Error == nil || fin.Error.Bin != events.BinInvalidInput || fin.Error.Reason != events.ReasonPromptTooLarge {
		t.Errorf("run.finished %+v, want the cause, invalid_input/prompt_too_large", fin.Error)
	}
	if len(rec.events) != 2 {
		t.Errorf("events %v, want run.started and run.finished", rec.events)
	}
	rec.check(t, marker)

	ctx, cancel = context.WithCancelCause(t.Context())
	cancel(errors.New("hub received interrupt"))
	rec = newRecorder()
	fin = turns.Start(ctx, request("claude", bin), rec.sink, turns.Config{}).Wait()
	if fin.Error == nil || fin.Error.Bin != events.BinCancelled {
		t.Errorf("run.finished %+v, want cancelled", fin.Error)
	}
	rec.check(t, marker)
}
