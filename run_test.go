package hub_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hubcli/hub"
	_ "github.com/hubcli/hub/adapters/opencode"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/internal/proc"
	"github.com/hubcli/hub/normalize"
)

type result struct {
	events []events.Event
	at     []time.Duration // when the sink got each event, from Run's call
	stream []byte
	fin    events.RunFinished
	took   time.Duration
}

// types returns the types of the run's events.
func (r result) types() []events.Type {
	out := make([]events.Type, len(r.events))
	for i, ev := range r.events {
		out[i] = ev.Type()
	}
	return out
}

// saw reports whether the run sent at least n events of type typ.
func (r result) saw(typ events.Type, n int) bool {
	for _, ev := range r.events {
		if ev.Type() == typ {
			n--
		}
	}
	return n <= 0
}

// first returns when the run sent its first event of type typ, and whether
// it sent one.
func (r result) first(typ events.Type) (time.Duration, bool) {
	for i, ev := range r.events {
		if ev.Type() == typ {
			return r.at[i], true
		}
	}
	return 0, false
}

// lastOutput returns when the run sent its last event that came from the
// agent's output: not run.finished, nor the linger_kill notice hub sends
// once it has stopped the agent.
func (r result) lastOutput() time.Duration {
	for i := len(r.events) - 1; i >= 0; i-- {
		switch b := r.events[i].Body.(type) {
		case events.RunFinished:
			continue
		case events.Notice:
			if b.Kind == events.NoticeLingerKill {
				continue
			}
		}
		return r.at[i]
	}
	return 0
}

func (r result) notices(kind events.NoticeKind) []events.Notice {
	var out []events.Notice
	for _, ev := range r.events {
		if n, ok := ev.Body.(events.Notice); ok && n.Kind == kind {
			out = append(out, n)
		}
	}
	return out
}

func (r result) messages() []string {
	var out []string
	for _, ev := range r.events {
		if m, ok := ev.Body.(events.Message); ok {
			out = append(out, m.Text)
		}
	}
	return out
}

// runFake runs the fake agent playing scenario through hub.Run, checks
// the invariants every run must keep (schema, one run.finished, process
// group gone) and returns what happened.
func runFake(t *testing.T, ctx context.Context, scenario string, edit func(*hub.Request), opts ...hub.Option) result {
	t.Helper()
	return runFakeHook(t, ctx, scenario, edit, nil, opts...)
}

// runFakeHook is runFake with a hook called on every event before it is
// kept. The request grants grant.Full: the fake agent's scenarios call
// tools of every kind, and permission_test.go tests the other levels.
func runFakeHook(t *testing.T, ctx context.Context, scenario string, edit func(*hub.Request), hook func(events.Event), opts ...hub.Option) result {
	t.Helper()
	req := hub.Request{
		Agent:  "opencode",
		Prompt: "hello",
		Bin:    fakeBin(t, scenario),
		// The timeout is a net against a hang, not a limit under test: the
		// race detector on a busy 2-core machine has taken the stderr
		// flood (100 MiB) past 30s.
		Limits:     budget.Limits{Timeout: 5 * time.Minute, Grace: 500 * time.Millisecond},
		Permission: grant.Full,
	}
	if edit != nil {
		edit(&req)
	}
	var res result
	var buf bytes.Buffer
	enc := events.NewEncoder(&buf)
	start := time.Now()
	res.fin = hub.Run(ctx, req, func(ev events.Event) error {
		if hook != nil {
			hook(ev)
		}
		res.events = append(res.events, ev)
		res.at = append(res.at, time.Since(start))
		return enc.Encode(ev)
	}, opts...)
	res.took = time.Since(start)
	res.stream = buf.Bytes()
	if err := hubtest.ValidateStream(res.stream); err != nil {
		t.Errorf("event stream invalid: %v", err)
	}
	if len(res.events) > 0 {
		if rs, ok := res.events[0].Body.(events.RunStarted); ok && rs.PID != nil {
			if live := proc.LiveInGroup(*rs.PID); len(live) > 0 {
				t.Errorf("processes %v of group %d still running after Run", live, *rs.PID)
			}
		}
	}
	return res
}

func wantBin(t *testing.T, fin events.RunFinished, bin events.Bin, reason events.Reason) {
	t.Helper()
	if bin == "" {
		if !fin.OK || fin.Error != nil {
			t.Fatalf("run.finished ok=%v error=%v, want ok", fin.OK, fin.Error)
		}
		return
	}
	if fin.OK || fin.Error == nil {
		t.Fatalf("run.finished ok=%v error=%v, want %s/%s", fin.OK, fin.Error, bin, reason)
	}
	if fin.Error.Bin != bin || fin.Error.Reason != reason {
		t.Fatalf("run.finished error = %s/%s (%s), want %s/%s", fin.Error.Bin, fin.Error.Reason, fin.Error.Message, bin, reason)
	}
	if fin.Error.Hint == "" {
		t.Errorf("error %s/%s has no hint", bin, reason)
	}
}

func TestRunOK(t *testing.T) {
	t.Parallel()
	res := runFake(t, t.Context(), "ok", nil)
	wantBin(t, res.fin, "", "")
	if res.fin.Text != "fake answer" || res.fin.SessionID == nil || *res.fin.SessionID != sid {
		t.Errorf("run.finished text=%q session=%v, want %q, %q", res.fin.Text, res.fin.SessionID, "fake answer", sid)
	}
	if res.fin.ExitCode == nil || *res.fin.ExitCode != 0 || res.fin.Signal != nil {
		t.Errorf("exit_code=%v signal=%v, want 0, nil", res.fin.ExitCode, res.fin.Signal)
	}
	u := res.fin.Usage
	if u.Input != 10 || u.Output != 5 || u.CacheRead != 2 || u.CacheWrite != 1 || res.fin.CostUSD == nil || *res.fin.CostUSD != 0.25 || res.fin.CostSource != events.CostReported {
		t.Errorf("usage = %+v cost %v %s, want 10/5/2/1 $0.25 reported", u, res.fin.CostUSD, res.fin.CostSource)
	}
	if res.fin.Turns != 1 {
		t.Errorf("turns = %d, want 1", res.fin.Turns)
	}
	types := []events.Type{}
	for _, ev := range res.events {
		types = append(types, ev.Type())
	}
	want := []events.Type{events.TypeRunStarted, events.TypeSessionStarted, events.TypeMessage, events.TypeUsage, events.TypeRunFinished}
	if !slicesEqual(types, want) {
		t.Errorf("event types = %v, want %v", types, want)
	}
}

func slicesEqual[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRunOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scenario string
		edit     func(*hub.Request)
		bin      events.Bin
		reason   events.Reason
		text     string
		check    func(t *testing.T, r result)
	}{
		{scenario: "version-old", bin: events.BinUnsupportedVersion, reason: events.ReasonTooOld},
		{scenario: "version-garbage", bin: events.BinUnsupportedVersion, reason: events.ReasonUnparseable, check: func(t *testing.T, r result) {
			if !strings.Contains(r.fin.Error.Message, "development build") {
				t.Errorf("message = %q, want what the binary printed", r.fin.Error.Message)
			}
		}},
		{scenario: "malformed", text: "fake answer", check: func(t *testing.T, r result) {
			// banner and the cut line are reported; ANSI, BOM and CRLF lines decode.
			if n := len(r.notices(events.NoticeNonJSONOutput)); n != 1 {
				t.Errorf("non_json_output notices = %d, want 1 (banner)", n)
			}
			if n := len(r.notices(events.NoticeParseError)); n != 2 {
				t.Errorf("parse_error notices = %d, want 2 (the cut line, a JSON array)", n)
			}
			if n := len(r.notices(events.NoticeUnknownEvent)); n != 1 {
				t.Errorf("unknown_event notices = %d, want 1", n)
			}
		}},
		{scenario: "giant", text: "fake answer", check: func(t *testing.T, r result) {
			// Under the default 64 MiB cap the 10 MB line decodes whole.
			if m := r.messages(); len(m) != 2 || len(m[0]) != 10<<20 {
				t.Errorf("messages = %d (first %d bytes), want 2 with a 10 MiB first", len(m), len(m[0]))
			}
		}},
		{scenario: "giant", edit: func(r *hub.Request) { r.MaxLine = 1 << 20 }, text: "fake answer", check: func(t *testing.T, r result) {
			n := r.notices(events.NoticeLineTooLong)
			if len(n) != 1 || !strings.Contains(n[0].Message, "10485") {
				t.Errorf("line_too_long notices = %+v, want one naming the size", n)
			}
			if m := r.messages(); len(m) != 1 {
				t.Errorf("messages = %d, want 1 (the giant one skipped)", len(m))
			}
		}},
		{scenario: "truncated-last", text: "fake answer"},
		{scenario: "cut-last", bin: events.BinProtocol, reason: events.ReasonNoResult, text: "fake answer", check: func(t *testing.T, r result) {
			if n := r.notices(events.NoticeParseError); len(n) != 1 || !strings.Contains(n[0].Message, "cut short") {
				t.Errorf("parse_error notices = %v, want 1 (the cut line)", n)
			}
		}},
		{scenario: "crash", bin: events.BinAgentFailed, reason: events.ReasonCrashed, check: func(t *testing.T, r result) {
			if r.fin.Signal == nil || *r.fin.Signal != "SIGKILL" || r.fin.ExitCode != nil {
				t.Errorf("signal=%v exit=%v, want SIGKILL, nil", r.fin.Signal, r.fin.ExitCode)
			}
		}},
		{scenario: "exit1-stderr", bin: events.BinInvalidInput, reason: events.ReasonBadModel, check: func(t *testing.T, r result) {
			if strings.Contains(r.fin.Error.Message, "\x1b") || !strings.Contains(r.fin.Error.Message, "ProviderModelNotFoundError") {
				t.Errorf("message = %q, want the stderr line without ANSI", r.fin.Error.Message)
			}
		}},
		{scenario: "exit3", bin: events.BinAgentFailed, reason: events.ReasonExitStatus, check: func(t *testing.T, r result) {
			if !strings.Contains(r.fin.Error.Message, "status 3") || !strings.Contains(r.fin.Error.Message, "something odd happened") {
				t.Errorf("message = %q, want exit status and stderr tail", r.fin.Error.Message)
			}
		}},
		{scenario: "exit0-nothing", bin: events.BinProtocol, reason: events.ReasonNoResult},
		{scenario: "error-event", bin: events.BinUnavailable, reason: events.ReasonRateLimit, check: func(t *testing.T, r result) {
			e := r.fin.Error
			if !e.Retryable || e.HTTPStatus == nil || *e.HTTPStatus != 429 || e.RetryAfterS == nil || *e.RetryAfterS != 7 {
				t.Errorf("error = %+v, want retryable, http 429, retry_after 7", e)
			}
		}},
		{scenario: "denied", bin: events.BinPermissionDenied, reason: events.ReasonToolDenied, check: func(t *testing.T, r result) {
			if r.fin.ToolCalls != 1 {
				t.Errorf("tool_calls = %d, want 1", r.fin.ToolCalls)
			}
		}},
		{scenario: "stderr-flood", text: "fake answer"},
		{scenario: "echo-argv", edit: func(r *hub.Request) { r.Prompt = "--help -x"; r.Model = "-m/odd" }, check: func(t *testing.T, r result) {
			want := `"run" "--format" "json" "--title=--help -x" "--print-logs" "--log-level=ERROR" "--model=-m/odd" "--agent=hub-full"`
			if r.fin.Text != want {
				t.Errorf("argv = %s, want %s", r.fin.Text, want)
			}
		}},
		{scenario: "echo-stdin", edit: func(r *hub.Request) { r.Prompt = strings.Repeat("p", 300<<10) }, check: func(t *testing.T, r result) {
			if want := "stdin bytes " + strconv.Itoa(300<<10); r.fin.Text != want {
				t.Errorf("text = %q, want %q (the whole prompt on stdin)", r.fin.Text, want)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			res := runFake(t, t.Context(), tt.scenario, tt.edit)
			wantBin(t, res.fin, tt.bin, tt.reason)
			if tt.text != "" && res.fin.Text != tt.text {
				t.Errorf("text = %q, want %q", res.fin.Text, tt.text)
			}
			if tt.check != nil {
				tt.check(t, res)
			}
		})
	}
}

func TestRunStops(t *testing.T) {
	t.Parallel()
	// ready: the events that show the agent got to what the case tests
	// before the limit under test (a Timeout or IdleTimeout) ran out. The
	// wall-clock limit covers the version probe and the idle limit the
	// agent's start-up, and both take as long as the machine's load makes
	// them: when a timer ran out before, the attempt tested nothing, and the
	// case runs again with its timers doubled (see stopAttempts).
	past := func(typ events.Type, n int) func(result) bool {
		return func(r result) bool { return r.saw(typ, n) }
	}
	started := past(events.TypeSessionStarted, 1) // the agent's first line
	tests := []struct {
		name     string
		scenario string
		limits   budget.Limits
		cancel   time.Duration // cancel the caller's context after this
		bin      events.Bin
		reason   events.Reason
		signal   string
		ready    func(result) bool
		cancelOn events.Type // cancel the caller's context when this event arrives
		killOn   events.Type // close the WithKill channel when this event arrives
		detached bool        // the scenario leaves a process hub cannot find; kill it after
	}{
		{name: "idle", scenario: "hang", limits: budget.Limits{IdleTimeout: 300 * time.Millisecond, Grace: time.Second},
			bin: events.BinTimeout, reason: events.ReasonIdle, signal: "SIGTERM", ready: started},
		{name: "wall", scenario: "hang", limits: budget.Limits{Timeout: 300 * time.Millisecond, Grace: time.Second},
			bin: events.BinTimeout, reason: events.ReasonWall, signal: "SIGTERM", ready: started},
		{name: "ignores SIGTERM", scenario: "ignore-term", cancelOn: events.TypeSessionStarted, limits: budget.Limits{Grace: 300 * time.Millisecond},
			bin: events.BinCancelled, reason: events.ReasonCaller, signal: "SIGKILL"},
		{name: "kill channel skips the grace", scenario: "ignore-term", killOn: events.TypeSessionStarted, limits: budget.Limits{Grace: time.Minute},
			bin: events.BinCancelled, reason: events.ReasonCaller, signal: "SIGKILL"},
		{name: "detached writer holds stdout", scenario: "detached-writer", limits: budget.Limits{Timeout: 20 * time.Second}},
		{name: "double-forked daemon of an agent that exits at once", scenario: "tool-daemon"},
		{name: "agent closes stdout and idles", scenario: "close-stdout", limits: budget.Limits{IdleTimeout: 500 * time.Millisecond, Grace: time.Second},
			bin: events.BinTimeout, reason: events.ReasonIdle, signal: "SIGTERM", ready: started},
		// The second message is the one after the terminal event.
		{name: "a step after the terminal event is unfinished", scenario: "stop-then-more", limits: budget.Limits{Timeout: 1500 * time.Millisecond, Grace: time.Second},
			bin: events.BinTimeout, reason: events.ReasonWall, signal: "SIGTERM", ready: past(events.TypeMessage, 2)},
		{name: "caller cancels", scenario: "hang", cancel: 2 * time.Second, limits: budget.Limits{Grace: time.Second},
			bin: events.BinCancelled, reason: events.ReasonCaller, signal: "SIGTERM"},
		{name: "linger", scenario: "linger", limits: budget.Limits{Linger: 300 * time.Millisecond, Grace: time.Second},
			signal: "SIGTERM"},
		{name: "grandchild holds stdout", scenario: "grandchild", limits: budget.Limits{Linger: 10 * time.Second}},
		{name: "tool in own group, agent ignores SIGTERM", scenario: "tool-own-group", limits: budget.Limits{Timeout: 2 * time.Second, Grace: 300 * time.Millisecond},
			bin: events.BinTimeout, reason: events.ReasonWall, signal: "SIGKILL", ready: started},
		{name: "tool left behind by a finished agent", scenario: "tool-left-behind"},
		// The usage event is the terminal one: the idle limit must run out
		// after it for the stop to be a linger kill.
		{name: "idle timeout after the terminal event is a linger kill", scenario: "linger", limits: budget.Limits{IdleTimeout: 300 * time.Millisecond, Grace: time.Second},
			signal: "SIGTERM", ready: past(events.TypeUsage, 1)},
		// The probe is what the limit must cut short: no retry.
		{name: "wall timeout covers the version probe", scenario: "version-hang", limits: budget.Limits{Timeout: 500 * time.Millisecond},
			bin: events.BinTimeout, reason: events.ReasonWall},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			lim := tt.limits
			var res result
			var pidfile string
			for attempt := 1; ; attempt++ {
				res, pidfile = runStop(t, tt.scenario, lim, tt.cancel, tt.cancelOn, tt.killOn, tt.detached)
				if tt.ready == nil || tt.ready(res) || res.fin.Error == nil || res.fin.Error.Bin != events.BinTimeout {
					break
				}
				// A timer ran out before the agent got there.
				if attempt == stopAttempts {
					t.Fatalf("after %d attempts, up to --timeout %s --idle-timeout %s, the limit still ran out before the agent got to what this case tests (%s); events: %v",
						attempt, lim.Timeout, lim.IdleTimeout, res.fin.Error.Message, res.types())
				}
				t.Logf("attempt %d: %s ran out before the agent got there (run took %s); doubling the timers", attempt, res.fin.Error.Reason, res.took)
				lim.Timeout *= 2
				lim.IdleTimeout *= 2
			}
			wantBin(t, res.fin, tt.bin, tt.reason)
			// The run ends within the grace period and hub's own bounded
			// waits of the moment it was due to stop (see stopDue).
			grace := lim.GraceOrDefault()
			if tt.killOn != "" {
				grace = 0
			}
			due := stopDue(res, lim, tt.reason, tt.cancel, tt.cancelOn, tt.killOn)
			if max := due + grace + hub.StopWait; res.took > max {
				t.Errorf("Run took %s, want at most %s (due to stop at %s, + grace %s + hub.StopWait %s)", res.took, max, due, grace, hub.StopWait)
			}
			gotSig := ""
			if res.fin.Signal != nil {
				gotSig = *res.fin.Signal
			}
			if gotSig != tt.signal {
				t.Errorf("signal = %q, want %q", gotSig, tt.signal)
			}
			if tt.scenario == "linger" && len(res.notices(events.NoticeLingerKill)) != 1 {
				t.Errorf("linger_kill notices = %d, want 1", len(res.notices(events.NoticeLingerKill)))
			}
			if strings.HasPrefix(tt.scenario, "tool-") {
				if _, err := os.Stat(pidfile); err != nil {
					t.Fatalf("the fake agent never started its tool: %v", err)
				}
			}
			if b, err := os.ReadFile(pidfile); err == nil && !tt.detached {
				pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
				if err != nil || pid <= 0 {
					t.Fatalf("pid file %q: %v", b, err)
				}
				if proc.Running(pid) {
					t.Errorf("process %d the agent started is still running after Run", pid)
				}
			}
		})
	}
}

// stopAttempts bounds TestRunStops' attempts of one case: its timers double
// each time, so the last has 2^(stopAttempts-1) times the first's.
const stopAttempts = 5

// runStop runs one attempt of a TestRunStops case, and returns it and the
// path of the fake agent's pid file.
func runStop(t *testing.T, scenario string, lim budget.Limits, cancelAfter time.Duration, cancelOn, killOn events.Type, detached bool) (result, string) {
	t.Helper()
	ctx := t.Context()
	if cancelAfter > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		time.AfterFunc(cancelAfter, cancel)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	kill := make(chan struct{})
	var once sync.Once
	pidfile := t.TempDir() + "/pid"
	if detached {
		t.Cleanup(func() {
			b, _ := os.ReadFile(pidfile)
			if pid, _ := strconv.Atoi(string(b)); pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		})
	}
	res := runFakeHook(t, ctx, scenario, func(r *hub.Request) {
		r.Limits = lim
		r.Env = []string{"HUB_FAKE_PIDFILE=" + pidfile}
	}, func(ev events.Event) {
		if ev.Type() == cancelOn {
			cancel()
		}
		if ev.Type() == killOn {
			once.Do(func() { close(kill) })
		}
	}, hub.WithKill(kill))
	return res, pidfile
}

// stopDue returns when, from Run's call, the run was due to stop: the
// moment of the caller's cancel or kill, or of the limit that ends it
// (timeout, idle or linger, counted as Timers count them), or else the
// agent's last output (an agent that exits by itself).
func stopDue(r result, lim budget.Limits, reason events.Reason, cancelAfter time.Duration, cancelOn, killOn events.Type) time.Duration {
	last := r.lastOutput()
	for _, typ := range []events.Type{cancelOn, killOn} {
		if at, ok := r.first(typ); typ != "" && ok {
			return at
		}
	}
	switch {
	case cancelAfter > 0:
		return cancelAfter
	case reason == events.ReasonWall:
		return lim.Timeout
	case lim.IdleTimeout > 0 && (reason == events.ReasonIdle || len(r.notices(events.NoticeLingerKill)) > 0):
		return last + lim.IdleTimeout
	case len(r.notices(events.NoticeLingerKill)) > 0:
		return last + lim.LingerOrDefault()
	}
	return last
}

func TestRunNotInstalled(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notExec := dir + "/opencode"
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		bin    string
		reason events.Reason
	}{
		{dir + "/missing", events.ReasonNotFound},
		{"no-such-agent-binary-hub", events.ReasonNotFound},
		{notExec, events.ReasonNotExecutable},
		{dir, events.ReasonNotExecutable},
	}
	for _, tt := range tests {
		var got []events.Event
		fin := hub.Run(t.Context(), hub.Request{Agent: "opencode", Prompt: "x", Bin: tt.bin},
			func(ev events.Event) error { got = append(got, ev); return nil })
		wantBin(t, fin, events.BinNotInstalled, tt.reason)
		if tt.reason == events.ReasonNotFound && !strings.Contains(fin.Error.Hint, "npm i -g opencode-ai") {
			t.Errorf("hint = %q, want the npm install command", fin.Error.Hint)
		}
		if len(got) != 2 || got[0].Type() != events.TypeRunStarted || got[1].Type() != events.TypeRunFinished {
			t.Errorf("events = %d, want run.started and run.finished", len(got))
		}
	}
}

func TestRunBadRequest(t *testing.T) {
	t.Parallel()
	fin := hub.Run(t.Context(), hub.Request{Agent: "nope", Prompt: "x"}, func(events.Event) error { return nil })
	wantBin(t, fin, events.BinInvalidInput, events.ReasonBadRequest)
	fin = hub.Run(t.Context(), hub.Request{Agent: "opencode", Prompt: strings.Repeat("x", 17<<20), Bin: fakeBin(t, "ok")},
		func(events.Event) error { return nil })
	wantBin(t, fin, events.BinInvalidInput, events.ReasonPromptTooLarge)
}

// TestRunSinkError: a failing consumer stops the run; run.finished is still
// returned.
func TestRunSinkError(t *testing.T) {
	t.Parallel()
	var got []events.Type
	fin := hub.Run(t.Context(), hub.Request{Agent: "opencode", Prompt: "x", Bin: fakeBin(t, "hang"),
		Limits: budget.Limits{Grace: time.Second, Timeout: 20 * time.Second}},
		func(ev events.Event) error {
			got = append(got, ev.Type())
			if ev.Type() == events.TypeSessionStarted {
				return errors.New("broken pipe")
			}
			return nil
		})
	wantBin(t, fin, events.BinInternal, "")
	if !strings.Contains(fin.Error.Message, "broken pipe") {
		t.Errorf("message = %q, want the sink's error", fin.Error.Message)
	}
	want := []events.Type{events.TypeRunStarted, events.TypeSessionStarted, events.TypeRunFinished}
	if !slicesEqual(got, want) {
		t.Errorf("sink got %v, want %v: nothing after the error but run.finished", got, want)
	}
}

// TestRunSlowConsumerLosesNothing: the agent writes everything and exits
// while the consumer is still busy; hub must still read all of it.
func TestRunSlowConsumerLosesNothing(t *testing.T) {
	t.Parallel()
	var got []events.Type
	fin := hub.Run(t.Context(), hub.Request{Agent: "opencode", Prompt: "x", Bin: fakeBin(t, "giant")},
		func(ev events.Event) error {
			if ev.Type() == events.TypeSessionStarted {
				time.Sleep(2500 * time.Millisecond) // longer than hub's pipe drain
			}
			got = append(got, ev.Type())
			return nil
		})
	wantBin(t, fin, "", "")
	want := []events.Type{events.TypeRunStarted, events.TypeSessionStarted, events.TypeMessage, events.TypeMessage, events.TypeUsage, events.TypeRunFinished}
	if !slicesEqual(got, want) || fin.Text != "fake answer" {
		t.Errorf("events = %v text %q, want %v and the answer", got, fin.Text, want)
	}
}

// TestRunSlowConsumerIsNotIdle: time hub spends blocked in a slow sink is
// not the agent's silence.
// The consumer is slow for three times the idle limit. The limit also counts
// the fake's start-up, until its first line: an attempt whose limit ran out
// before that line tested nothing, and runs again with the limit doubled.
func TestRunSlowConsumerIsNotIdle(t *testing.T) {
	t.Parallel()
	idle := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		first := false
		fin := hub.Run(t.Context(), hub.Request{Agent: "opencode", Prompt: "x", Bin: fakeBin(t, "burst"),
			Limits: budget.Limits{IdleTimeout: idle}},
			func(ev events.Event) error {
				if ev.Type() == events.TypeSessionStarted {
					first = true
					time.Sleep(3 * idle)
				}
				return nil
			})
		if !first && attempt < stopAttempts && fin.Error != nil && fin.Error.Reason == events.ReasonIdle {
			t.Logf("attempt %d: --idle-timeout %s ran out before the fake's first line; doubling it", attempt, idle)
			idle *= 2
			continue
		}
		wantBin(t, fin, "", "")
		return
	}
}

// TestRunSinkFailsAtStart: a consumer that is gone before the first event
// stops the agent at once, even one that never writes a line.
func TestRunSinkFailsAtStart(t *testing.T) {
	t.Parallel()
	start := time.Now()
	fin := hub.Run(t.Context(), hub.Request{Agent: "opencode", Prompt: "x", Bin: fakeBin(t, "hang"),
		Limits: budget.Limits{Grace: time.Second, Timeout: 30 * time.Second}},
		func(events.Event) error { return errors.New("stdout closed") })
	wantBin(t, fin, events.BinInternal, "")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Run took %s after the sink failed at run.started, want the agent stopped at once", took)
	}
}

// TestRunSlowConsumerAfterExit: the consumer is slow for longer than the
// drain deadline after the agent exited, with the agent's last lines still
// queued in the pipe: all of them are read.
func TestRunSlowConsumerAfterExit(t *testing.T) {
	t.Parallel()
	var got []events.Type
	fin := hub.Run(t.Context(), hub.Request{Agent: "opencode", Prompt: "x", Bin: fakeBin(t, "giant")},
		func(ev events.Event) error {
			if ev.Type() == events.TypeMessage && len(got) == 2 {
				time.Sleep(2500 * time.Millisecond) // after the giant line; the agent has exited by now
			}
			got = append(got, ev.Type())
			return nil
		})
	wantBin(t, fin, "", "")
	if n := len(got); n != 6 {
		t.Errorf("events = %v, want 6 (started, session, 2 messages, usage, finished)", got)
	}
}

// TestRunCancelWithErrorCause: a caller that cancels with an *events.Error
// cause chooses the run's error.
func TestRunCancelWithErrorCause(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(t.Context())
	want := events.NewError(events.BinInternal, "", "check the consumer", "output closed")
	res := runFakeHook(t, ctx, "hang", func(r *hub.Request) { r.Limits.Grace = time.Second }, func(ev events.Event) {
		if ev.Type() == events.TypeSessionStarted {
			cancel(want)
		}
	})
	wantBin(t, res.fin, events.BinInternal, "")
	if res.fin.Error.Message != "output closed" {
		t.Errorf("error = %v, want the caller's %v", res.fin.Error, want)
	}
}

// TestRunRedactsSecrets: a credential from the agent's environment never
// appears in an event, even when the agent prints it.
func TestRunRedactsSecrets(t *testing.T) {
	t.Parallel()
	const key = "sk-test-0123456789abcdef"
	res := runFake(t, t.Context(), "echo-env", func(r *hub.Request) {
		r.Env = []string{"MY_API_KEY=" + key}
	})
	wantBin(t, res.fin, "", "")
	if bytes.Contains(res.stream, []byte(key)) {
		t.Errorf("the secret appears in the event stream:\n%s", res.stream)
	}
	if !strings.Contains(res.fin.Text, "[REDACTED]") {
		t.Errorf("text = %q, want the key replaced by [REDACTED]", res.fin.Text)
	}
}

// TestRunBudget: each limit is enforced at the event that crosses it: that
// event is the last one forwarded, the run ends budget_exceeded/<limit> with
// the totals observed up to it, and the agent (which ignores SIGTERM) is
// killed after the grace period.
func TestRunBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		limits    budget.Limits
		reason    events.Reason
		last      events.Type // type of the crossing event
		tokens    int64       // total tokens at the crossing
		toolCalls int64
		noCost    bool
	}{
		// Steps report $0.50 and 100 tokens each: $1.20 is crossed at the
		// third usage event ($1.50), 250 tokens at the third (300).
		{name: "cost", limits: budget.Limits{MaxCostUSD: 1.2}, reason: events.ReasonCost, last: events.TypeUsage, tokens: 300, toolCalls: 3},
		{name: "exact cost is within", limits: budget.Limits{MaxCostUSD: 1.5}, reason: events.ReasonCost, last: events.TypeUsage, tokens: 400, toolCalls: 4},
		{name: "tokens", limits: budget.Limits{MaxTokens: 250}, reason: events.ReasonTokens, last: events.TypeUsage, tokens: 300, toolCalls: 3},
		{name: "turns", limits: budget.Limits{MaxTurns: 2}, reason: events.ReasonTurns, last: events.TypeUsage, tokens: 300, toolCalls: 3},
		// The fourth tool call crosses 3 tool steps, before its step's usage.
		{name: "tool steps", limits: budget.Limits{MaxToolSteps: 3}, reason: events.ReasonToolSteps, last: events.TypeToolStarted, tokens: 300, toolCalls: 4},
		// Unknown cost: a cost_unknown notice, and the token cap still holds.
		{name: "unknown cost, tokens cap", limits: budget.Limits{MaxCostUSD: 0.01, MaxTokens: 150}, reason: events.ReasonTokens, last: events.TypeUsage, tokens: 200, toolCalls: 2, noCost: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := runFake(t, t.Context(), "steps", func(r *hub.Request) {
				r.Limits = tt.limits
				r.Limits.Finalize = -1 // no final-answer resume: see TestRunFinalAnswer
				r.Limits.Grace = 300 * time.Millisecond
				r.Limits.Timeout = 30 * time.Second
				if tt.noCost {
					r.Env = append(r.Env, "HUB_FAKE_NOCOST=1")
				}
			})
			wantBin(t, res.fin, events.BinBudgetExceeded, tt.reason)
			n := len(res.events)
			if got := res.events[n-2].Type(); got != tt.last {
				t.Errorf("last forwarded event = %s, want the crossing %s", got, tt.last)
			}
			if got := res.fin.Usage.Sum(); got != tt.tokens || res.fin.ToolCalls != tt.toolCalls {
				t.Errorf("run.finished tokens %d, tool calls %d; want %d, %d (the totals at the crossing)", got, res.fin.ToolCalls, tt.tokens, tt.toolCalls)
			}
			if !tt.noCost && (res.fin.CostUSD == nil || *res.fin.CostUSD != 0.5*float64(tt.tokens/100)) {
				t.Errorf("cost = %v, want $0.50 per step", res.fin.CostUSD)
			}
			if res.fin.Signal == nil || *res.fin.Signal != "SIGKILL" {
				t.Errorf("signal = %v, want SIGKILL (the agent ignores SIGTERM)", res.fin.Signal)
			}
			if res.took > 5*time.Second {
				t.Errorf("run took %s: the crossing did not stop the agent", res.took)
			}
			unknown := 0
			for _, ev := range res.events {
				if n, ok := ev.Body.(events.Notice); ok && n.Kind == events.NoticeCostUnknown {
					unknown++
				}
			}
			if want := map[bool]int{true: 1, false: 0}[tt.noCost]; unknown != want {
				t.Errorf("%d cost_unknown notices, want %d", unknown, want)
			}
		})
	}
}

// TestRunFinalAnswer: a run that crosses --max-tool-steps is stopped, and
// its session resumed once with FinalAnswerPrompt and tools off; the resume's
// answer is the run's text, marked partial, with the resume's usage added.
// A resume that calls a tool, hangs past its time limit or fails gives no
// partial answer and says why; Finalize < 0 runs no resume.
func TestRunFinalAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		resume   string        // HUB_FAKE_RESUME
		finalize time.Duration // Limits.Finalize
		partial  bool
		text     string
		tokens   int64  // run total: 3 steps of 100 before the crossing, then the resume's
		note     string // in the error message
		resumed  bool   // the fake was resumed
	}{
		{name: "answer", partial: true, text: "partial from the fake", tokens: 400, note: "resumed session ses_fake1 once, without tools", resumed: true},
		{name: "tool call in the resume", resume: "tool", tokens: 300, note: "called a tool during the final-answer resume", resumed: true},
		{name: "resume hangs", resume: "hang", finalize: 700 * time.Millisecond, tokens: 300, note: "ran out of its 700ms (--finalize-timeout", resumed: true},
		{name: "resume fails", resume: "fail", tokens: 300, note: "failed: unavailable/server", resumed: true},
		{name: "resume off", finalize: -1, tokens: 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(t.TempDir(), "resume")
			grace := 300 * time.Millisecond
			var res result
			for attempt := 1; ; attempt++ {
				os.Remove(out)
				res = runFake(t, t.Context(), "steps", func(r *hub.Request) {
					r.Limits = budget.Limits{MaxToolSteps: 3, Finalize: tt.finalize, Grace: grace, Timeout: 30 * time.Second}
					r.Env = append(r.Env, "HUB_FAKE_OUT="+out, "HUB_FAKE_RESUME="+tt.resume)
				})
				// A --finalize-timeout under test that ran out while the
				// resumed fake (this -race binary) was still starting, before
				// it read its prompt, tested nothing: again with it doubled.
				if _, err := os.Stat(out); err == nil || tt.resume != "hang" || attempt == 5 {
					break
				}
				t.Logf("attempt %d: --finalize-timeout %s ran out before the resume read its prompt; again with %s", attempt, tt.finalize, 2*tt.finalize)
				tt.finalize *= 2
				tt.note = fmt.Sprintf("ran out of its %s (--finalize-timeout", tt.finalize)
			}
			wantBin(t, res.fin, events.BinBudgetExceeded, events.ReasonToolSteps)
			if res.fin.Partial != tt.partial || res.fin.Text != tt.text {
				t.Errorf("run.finished partial=%v text=%q, want %v %q", res.fin.Partial, res.fin.Text, tt.partial, tt.text)
			}
			if !strings.Contains(res.fin.Error.Message, "tool call 4 is over --max-tool-steps 3") || !strings.Contains(res.fin.Error.Message, tt.note) {
				t.Errorf("error message = %q, want the crossing and %q", res.fin.Error.Message, tt.note)
			}
			if got := res.fin.Usage.Sum(); got != tt.tokens {
				t.Errorf("run.finished tokens = %d, want %d", got, tt.tokens)
			}
			if res.fin.Signal == nil || *res.fin.Signal != "SIGKILL" {
				t.Errorf("signal = %v, want the first process's SIGKILL (it ignores SIGTERM)", res.fin.Signal)
			}
			// From the crossing: the first process's stop (it ignores
			// SIGTERM), then the resume within its limit and its stop.
			var crossing time.Duration
			for i, ev := range res.events {
				if ts, ok := ev.Body.(events.ToolStarted); ok && ts.CallID == "call_4" {
					crossing = res.at[i]
				}
			}
			resume := max(budget.Limits{Finalize: tt.finalize}.FinalizeOrDefault(), 0)
			if bound := crossing + 2*(grace+hub.StopWait) + resume; crossing == 0 || res.took > bound {
				t.Errorf("run took %s (crossing at %s), want at most %s", res.took, crossing, bound)
			}
			got, err := os.ReadFile(out)
			if !tt.resumed {
				if err == nil {
					t.Errorf("the agent was resumed (%q), want no resume", got)
				}
				return
			}
			if want := hub.FinalAnswerPrompt + "\n--\n"; !strings.HasPrefix(string(got), want) || !strings.Contains(string(got), `"permission":{"*":"ask"}`) {
				t.Errorf("the resume read %q, want the final-answer prompt and an inline config that asks for every tool", got)
			}
			// The resume's events follow the crossing tool call, in the same run.
			var after []events.Type
			for i, ev := range res.events {
				if ts, ok := ev.Body.(events.ToolStarted); ok && ts.CallID == "call_4" {
					for _, e := range res.events[i+1:] {
						after = append(after, e.Type())
					}
				}
			}
			if len(after) < 2 || after[0] != events.TypeSessionStarted || after[len(after)-1] != events.TypeRunFinished {
				t.Errorf("events after the crossing = %v, want the resume's (session.started …) then run.finished", after)
			}
			if tt.partial {
				var u *events.Usage
				for _, ev := range res.events {
					if x, ok := ev.Body.(events.Usage); ok {
						u = &x
					}
				}
				if u == nil || u.Total.Sum() != 400 || u.Step.Sum() != 100 || u.Total.CostUSD == nil || *u.Total.CostUSD != 2 {
					t.Errorf("last usage event = %+v, want step 100 tokens and the run's running total, 400 tokens $2", u)
				}
			}
		})
	}
}

// TestRunFinalAnswerCancelled: the caller's cancel during the final-answer
// resume ends the run as cancelled/caller (hub's own cause first), saying it
// had crossed --max-tool-steps; a cancel with an error as its cause (the
// CLI's closed stdout) ends it with that error.
func TestRunFinalAnswerCancelled(t *testing.T) {
	t.Parallel()
	closed := events.NewError(events.BinInternal, "", "check the consumer of hub's output", "hub's stdout was closed")
	for _, cause := range []error{context.Canceled, closed} {
		ctx, cancel := context.WithCancelCause(t.Context())
		var once sync.Once
		res := runFakeHook(t, ctx, "steps", func(r *hub.Request) {
			r.Limits = budget.Limits{MaxToolSteps: 3, Grace: 300 * time.Millisecond, Timeout: 30 * time.Second}
			r.Env = append(r.Env, "HUB_FAKE_RESUME=hang")
		}, func(ev events.Event) {
			// The resume's session.started: cancel once it runs.
			if _, ok := ev.Body.(events.SessionStarted); ok && ev.Seq > 5 {
				once.Do(func() { time.AfterFunc(200*time.Millisecond, func() { cancel(cause) }) })
			}
		})
		want := events.BinCancelled
		if cause == closed {
			want = events.BinInternal
		}
		if res.fin.OK || res.fin.Error == nil || res.fin.Error.Bin != want || res.fin.Partial ||
			!strings.Contains(res.fin.Error.Message, "after tool call 4 is over --max-tool-steps 3; hub was resuming session ses_fake1") {
			t.Errorf("cause %v: run.finished error %+v partial %v, want %s saying hub was resuming after --max-tool-steps", cause, res.fin.Error, res.fin.Partial, want)
		}
		if res.took > 5*time.Second {
			t.Errorf("cause %v: run took %s", cause, res.took)
		}
	}
}

// TestReplayBudget: a replayed transcript stops at the crossing as a live run
// would.
func TestReplayBudget(t *testing.T) {
	t.Parallel()
	var raw bytes.Buffer
	for i := 0; i < 3; i++ {
		raw.WriteString(stepLine + "\n")
		raw.WriteString(`{"type":"step_finish","sessionID":"ses_fake1","part":{"reason":"tool-calls","tokens":{"input":60,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.5}}` + "\n")
	}
	zero := 0
	var evs []events.Event
	fin := hub.Replay(t.Context(), hub.Request{Agent: "opencode", Limits: budget.Limits{MaxTokens: 150}},
		&raw, normalize.End{ExitCode: &zero}, func(ev events.Event) error { evs = append(evs, ev); return nil })
	wantBin(t, fin, events.BinBudgetExceeded, events.ReasonTokens)
	usages := 0
	for _, ev := range evs {
		if ev.Type() == events.TypeUsage {
			usages++
		}
	}
	if usages != 2 || fin.Usage.Sum() != 200 {
		t.Errorf("%d usage events, %d tokens; want replay to stop at the second (200 tokens)", usages, fin.Usage.Sum())
	}
}

// TestRunVersionLinger: a version command that prints its version and does
// not exit is stopped after versionLinger and its version taken, instead of
// failing the run at the probe's 45 s timeout.
func TestRunVersionLinger(t *testing.T) {
	t.Parallel()
	res := runFake(t, t.Context(), "version-linger", nil)
	wantBin(t, res.fin, "", "")
	if res.took > 10*time.Second {
		t.Errorf("run took %s, want the version taken about 2 s after it was printed", res.took)
	}
}

// TestRunDeadlineDuringProbe: a caller's deadline that passes while hub
// probes the agent's version is timeout/wall, as it is once the agent runs;
// a cancel is cancelled/caller.
func TestRunDeadlineDuringProbe(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	res := runFake(t, ctx, "version-hang", nil)
	wantBin(t, res.fin, events.BinTimeout, events.ReasonWall)
	ctx2, cancel2 := context.WithCancel(t.Context())
	time.AfterFunc(300*time.Millisecond, cancel2)
	res = runFake(t, ctx2, "version-hang", nil)
	wantBin(t, res.fin, events.BinCancelled, events.ReasonCaller)
}
