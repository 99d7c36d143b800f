package hub

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
)

// ToolCall is a tool call an agent asks to make, as an Approver sees it
// (adapters.ToolCall).
type ToolCall = adapters.ToolCall

// Decision is an Approver's answer (adapters.Decision).
type Decision = adapters.Decision

// Verdict is a Decision's answer (adapters.Verdict).
type Verdict = adapters.Verdict

// The verdicts of a Decision.
const (
	AllowOnce    = adapters.AllowOnce
	AllowSession = adapters.AllowSession
	Deny         = adapters.Deny
	Stop         = adapters.Stop
)

// Approver decides one tool call as the agent asks to make it. It may take
// its time (a person answering): the agent waits, and the run's limits go
// on. ctx ends when the run does; a Decision returned after that is not
// used. Calls come one at a time.
type Approver func(ctx context.Context, call ToolCall) Decision

// WithApprover asks approve about each tool call the agent asks to make
// that the run's grant (--permission) does not already allow: the CLI asks
// hub before the call (Claude Code's can_use_tool, Codex app-server's
// approval requests), and hub answers with the approver's Decision. A call
// the grant allows runs without asking; a call allowed for the session
// (AllowSession) runs without asking again. An approval that comes late is
// checked against the files as they are then: a target that appeared,
// vanished or changed since the CLI asked is refused, and the agent told.
// Each request is an approval.requested event and its answer an
// approval.decided (who decided, how long the call waited), counted in
// run.finished's approvals.
//
// Only a live session takes an approver for now (NewSession): an agent
// whose CLI cannot ask is refused before anything starts
// (invalid_input/bad_request), and nothing runs without asking.
func WithApprover(a Approver) Option {
	return func(o *options) { o.approver = a }
}

// CanApprove reports whether agent's CLI can ask hub before its tool calls
// (its adapter holds live sessions whose Live is adapters.Approving), so
// that a run or session of it takes an approver. It starts nothing.
func CanApprove(agent string) bool {
	ad, err := adapters.Lookup(agent)
	if err != nil {
		return false
	}
	sr, ok := ad.(adapters.Sessioner)
	if !ok {
		return false
	}
	_, ok = sr.NewLive(adapters.Request{Agent: agent, Approve: true}).(adapters.Approving)
	return ok
}

// maxPendingApprovals bounds the tool calls waiting for the approver at
// once: an agent that asks more is answered Deny at once.
const maxPendingApprovals = 64

// broker puts a run's approval requests to its Approver, one at a time,
// and answers the CLI.
type broker struct {
	approver Approver
	agent    string
	watch    *grant.Watch
	root     string // the working directory, links resolved
	cwd      string
	emit     func(b events.Body, inline bool) // emits an event into the run's stream; inline: from the run's goroutine
	now      func() time.Time
	stop     func(err *events.Error) // stops the run

	ctx    context.Context
	cancel context.CancelFunc
	jobs   chan approvalJob

	mu        sync.Mutex
	allowed   map[string]bool // tool names allowed for the session
	decisions map[string]bool // call id → allowed, for every call answered
	pending   int
	stopped   bool // an approver's Stop: every call from then on is denied unasked
}

// decided is grant.Watch.Decided: whether hub answered the call, and
// whether it allowed it.
func (b *broker) decided(callID string) (asked, allowed bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	allowed, asked = b.decisions[callID]
	return asked, allowed
}

type approvalJob struct {
	call  ToolCall
	reply func(Decision)
	snap  []fileState
	asked time.Time // when the CLI asked
}

func newBroker(a Approver, agent string, watch *grant.Watch, cwd string, emit func(events.Body, bool), stop func(*events.Error), now func() time.Time) *broker {
	if cwd == "" {
		cwd = "."
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		abs = cwd
	}
	root, _ := grant.RealPath(abs)
	ctx, cancel := context.WithCancel(context.Background())
	b := &broker{approver: a, agent: agent, watch: watch, root: root, cwd: abs, emit: emit, stop: stop, now: now,
		ctx: ctx, cancel: cancel, jobs: make(chan approvalJob, maxPendingApprovals), allowed: map[string]bool{}, decisions: map[string]bool{}}
	go b.work()
	return b
}

// close ends the broker: the approver's ctx is cancelled, and calls still
// waiting are answered Deny.
func (b *broker) close() { b.cancel() }

// ask is the adapters.Approving callback: it answers at once what the
// grant or an earlier AllowSession decides, and queues the rest for the
// approver.
func (b *broker) ask(call ToolCall, reply func(Decision)) {
	call.Agent = b.agent
	for i, p := range call.Paths {
		if !filepath.IsAbs(p) {
			call.Paths[i] = filepath.Join(b.cwd, p)
		}
	}
	input := call.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	b.emit(events.ApprovalRequested{CallID: call.CallID, Name: call.Name, Kind: call.Kind, Input: input,
		Paths: slices.Clip(call.Paths), Reason: call.Reason}, true)
	b.mu.Lock()
	stopped := b.stopped
	b.mu.Unlock()
	if b.ctx.Err() != nil || stopped {
		b.answer(call, reply, Decision{Verdict: Deny, Message: "the run is ending"}, policy, true)
		return
	}
	if b.granted(call) {
		b.answer(call, reply, Decision{Verdict: AllowOnce, Message: "the grant allows it"}, policy, true)
		return
	}
	b.mu.Lock()
	allowed := b.allowed[call.Name]
	full := !allowed && b.pending >= maxPendingApprovals
	if !allowed && !full {
		b.pending++
	}
	b.mu.Unlock()
	switch {
	case allowed:
		b.answer(call, reply, Decision{Verdict: AllowOnce, Message: "allowed for the session"}, policy, true)
	case full:
		b.answer(call, reply, Decision{Verdict: Deny,
			Message: fmt.Sprintf("hub denied the call: %d calls already wait for approval", maxPendingApprovals)}, policy, true)
	default:
		b.jobs <- approvalJob{call: call, reply: reply, snap: snapshot(call.Paths), asked: b.now()}
	}
}

// granted reports whether the run's grant already allows call: its kind is
// granted, it would not leave the CLI's sandbox, and below full every
// path it names is inside the working directory (the CLIs confine reads
// there too, Claude Code's read-only grant among them).
func (b *broker) granted(call ToolCall) bool {
	st := events.ToolStarted{CallID: call.CallID, Name: call.Name, Kind: call.Kind, Input: call.Input}
	if len(st.Input) == 0 {
		st.Input = json.RawMessage(`{}`)
	}
	if b.watch.Grants(st) != nil {
		return false
	}
	if call.Unconfined && b.watch.Level() != grant.Full {
		return false
	}
	if b.watch.Level() == grant.Full {
		return true
	}
	for _, p := range call.Paths {
		real, ok := grant.RealPath(p)
		if !ok || !grant.Within(b.root, real) {
			return false
		}
	}
	return true
}

// work asks the approver, one call at a time.
func (b *broker) work() {
	for {
		select {
		case <-b.ctx.Done():
			for {
				select {
				case j := <-b.jobs:
					b.answer(j.call, j.reply, Decision{Verdict: Deny, Message: "the run is ending"}, policy, false)
				default:
					return
				}
			}
		case j := <-b.jobs:
			// A call queued before the approver's Stop is not put to it:
			// the Stop answered every call after it.
			b.mu.Lock()
			stopped := b.stopped
			b.mu.Unlock()
			var d Decision
			if !stopped && b.ctx.Err() == nil {
				d = b.approver(b.ctx, j.call)
			}
			by := d.By
			if by == "" {
				by = "callback"
			}
			b.mu.Lock()
			b.pending--
			stopped = b.stopped
			b.mu.Unlock()
			if b.ctx.Err() != nil || stopped {
				d, by = Decision{Verdict: Deny, Message: "the run is ending"}, policy
			}
			switch d.Verdict {
			case AllowOnce, AllowSession:
				if changed := changedSince(j.snap); changed != "" {
					d, by = Decision{Verdict: Deny, Message: fmt.Sprintf("hub refused the approved call: %s changed while it waited for approval; look again and ask anew", changed)}, policy
				} else if d.Verdict == AllowSession {
					b.mu.Lock()
					b.allowed[j.call.Name] = true
					b.mu.Unlock()
				}
			case Deny, Stop:
			default:
				d, by = Decision{Verdict: Deny, Message: fmt.Sprintf("hub denied the call: the approver answered %q, which is not a verdict", d.Verdict)}, policy
			}
			b.answerAfter(j.call, j.reply, d, by, b.now().Sub(j.asked), false)
		}
	}
}

// policy is approval.decided's By when hub decided without the approver.
const policy = "policy"

// answer is answerAfter for a call decided at once.
func (b *broker) answer(call ToolCall, reply func(Decision), d Decision, by string, inline bool) {
	b.answerAfter(call, reply, d, by, 0, inline)
}

// answerAfter replies to the CLI, says so in an approval.decided event of
// the call (inline: ask's, on the run's goroutine) that says who decided
// and how long the call waited, and stops the run for Stop.
func (b *broker) answerAfter(call ToolCall, reply func(Decision), d Decision, by string, waited time.Duration, inline bool) {
	if d.Verdict == Deny && d.Message == "" {
		d.Message = "the user denied this tool call"
	}
	cliDecision := d
	if d.Verdict == Stop {
		cliDecision = Decision{Verdict: Deny, Message: "the user stopped the run at this tool call"}
	}
	b.mu.Lock()
	b.decisions[call.CallID] = d.Verdict == AllowOnce || d.Verdict == AllowSession
	b.mu.Unlock()
	reply(cliDecision)
	b.emit(events.ApprovalDecided{CallID: call.CallID, Name: call.Name, Kind: call.Kind, Verdict: string(d.Verdict),
		By: by, WaitedMS: max(waited.Milliseconds(), 0), Message: d.Message}, inline)
	if d.Verdict == Stop {
		b.mu.Lock()
		b.stopped = true
		b.mu.Unlock()
		why := d.Message
		if why == "" {
			why = "the approver stopped the run"
		}
		b.stop(events.NewError(events.BinPermissionDenied, events.ReasonToolDenied,
			"run again, and allow the call or leave it out of the task",
			"%s asked to call %s, and the approver stopped the run: %s", b.agent, call.Name, why))
	}
}

// fileState is what an approval is checked against: a path's state when
// the CLI asked.
type fileState struct {
	path   string
	exists bool
	mode   os.FileMode
	size   int64
	sum    [32]byte // SHA-256 of a regular file's content, up to maxSnapshot bytes
}

// maxSnapshot is the most of a file hub hashes for a late approval's check:
// 16 MiB (a larger file is compared by size and mode and its first 16 MiB).
const maxSnapshot = 16 << 20

func snapshot(paths []string) []fileState {
	var out []fileState
	for _, p := range paths {
		out = append(out, stateOf(p))
	}
	return out
}

func stateOf(p string) fileState {
	st := fileState{path: p}
	fi, err := os.Lstat(p)
	if err != nil {
		return st
	}
	st.exists, st.mode, st.size = true, fi.Mode(), fi.Size()
	if fi.Mode().IsRegular() {
		if f, err := os.Open(p); err == nil {
			h := sha256.New()
			_, _ = io.Copy(h, io.LimitReader(f, maxSnapshot))
			_ = f.Close()
			copy(st.sum[:], h.Sum(nil))
		}
	}
	return st
}

// changedSince names the first path whose state is not what snap holds, ""
// when none changed.
func changedSince(snap []fileState) string {
	for _, s := range snap {
		if stateOf(s.path) != s {
			return s.path
		}
	}
	return ""
}
