package acp

import (
	"encoding/json"
	"path/filepath"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
	sdk "github.com/coder/acp-go-sdk"
	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/adapters"
	acpnorm "github.com/hubcli/hub/normalize/acp"
)

var _ adapters.Approving = (*live)(nil)

// Approvals implements adapters.Approving: in a session whose Request has
// Approve, each session/request_permission of the agent's is put to ask
// (request), and the answer written as the request's outcome:
//
//	← {"id":0,"method":"session/request_permission","params":{"sessionId":…,"toolCall":{"toolCallId":…,"title":…,"kind":"edit","locations":[…],"rawInput":{…},"content":[{"type":"diff",…}]},"options":[…]}}
//	→ {"id":0,"result":{"outcome":{"outcome":"selected","optionId":"once"}}}
//
// AllowOnce and AllowSession select the agent's allow_once option
// (allow_always when it offers no allow_once), Deny and Stop its
// reject_once (reject_always when it offers no reject_once; cancelled
// when it offers neither). AllowSession is not the agent's allow_always:
// hub's broker keeps "this tool for the session" itself and answers the
// agent's later requests at once; an agent told allow_always stops asking
// (OpenCode 1.18.33 for every later call of the same kind and pattern, in
// every session of its process: testdata/approvals/opencode), and a call
// outside the grant that runs without hub having been asked stops the run
// (grant.Watch). Interrupt answers every pending request cancelled, after
// its session/cancel, as ACP asks of a client, and the approver's late
// answer is then dropped: OpenCode 1.18.33 still runs a call allowed after
// the cancel (testdata/approvals/opencode, timing). A request that names
// no call (no toolCall.toolCallId) is refused without asking.
func (l *live) Approvals(ask func(adapters.ToolCall, func(adapters.Decision))) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ask = ask
}

// asking is a permission request put to the approver and not yet
// answered.
type asking struct {
	id     json.RawMessage // the request's JSON-RPC id, as the agent wrote it
	callID string
}

// answer is the decoder's Options.Answered: what hub answered the
// agent's permission requests for call id (the last one's answer).
func (l *live) answer(callID string) (answered, allowed bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	allowed, answered = l.answers[callID]
	return answered, allowed
}

// request takes an agent's session/request_permission in a session with
// an approver (Request.Approve), on the run's goroutine (Line): the call
// as the turn's decoder knows it goes to ask, and the answer is written
// by respond, without waiting; the turn's decoder learns it through
// answer. While the turn is being interrupted the request is answered
// cancelled at once.
func (l *live) request(line []byte) {
	m := gjson.ParseBytes(line)
	id := m.Get("id")
	if !id.Exists() {
		return // a notification: nothing to answer
	}
	rid := json.RawMessage(id.Raw)
	tc, options := m.Get("params.toolCall"), m.Get("params.options")
	st, locs, ok := l.cur.Asked(tc)
	p := &asking{id: rid, callID: st.CallID}
	l.mu.Lock()
	ask, stopping := l.ask, l.interrupted
	switch {
	case stopping:
		l.answers[p.callID] = false
	case ok && ask != nil:
		l.asks[id.Raw] = p
	}
	l.mu.Unlock()
	switch {
	case stopping:
		go l.respond(rid, sdk.NewRequestPermissionOutcomeCancelled())
		return
	case !ok || ask == nil:
		// Refused unasked: no call to put to anyone, or no one to put it
		// to. The agent's later report of the call (if any) is decoded
		// as its own.
		go l.respond(rid, outcome(options, false))
		return
	}
	cwd := l.cwd()
	call := adapters.ToolCall{Agent: l.o.Info.Name, CallID: st.CallID, Name: st.Name, Kind: st.Kind, Input: st.Input, Diff: diffOf(tc)}
	for _, path := range locs {
		if !filepath.IsAbs(path) {
			path = filepath.Join(cwd, path)
		}
		call.Paths = append(call.Paths, filepath.Clean(path))
	}
	ask(call, func(d adapters.Decision) {
		allow := d.Verdict == adapters.AllowOnce || d.Verdict == adapters.AllowSession
		l.mu.Lock()
		pending := l.asks[id.Raw] == p
		if pending {
			delete(l.asks, id.Raw)
			l.answers[p.callID] = allow
		}
		l.mu.Unlock()
		if !pending {
			return // cancelled meanwhile (Interrupt): a late allow would still run the call
		}
		go l.respond(rid, outcome(options, allow))
	})
}

// cancelAsks takes the requests waiting for the approver out of its
// hands, each noted refused, for Interrupt to answer cancelled; the
// caller holds l.mu.
func (l *live) cancelAsks() []json.RawMessage {
	var ids []json.RawMessage
	for k, p := range l.asks {
		ids = append(ids, p.id)
		l.answers[p.callID] = false
		delete(l.asks, k)
	}
	return ids
}

// outcome is the outcome of a permission request offering options (its
// params.options) that hub allows (allow) or refuses.
func outcome(options gjson.Result, allow bool) sdk.RequestPermissionOutcome {
	want := []sdk.PermissionOptionKind{sdk.PermissionOptionKindRejectOnce, sdk.PermissionOptionKindRejectAlways}
	if allow {
		want = []sdk.PermissionOptionKind{sdk.PermissionOptionKindAllowOnce, sdk.PermissionOptionKindAllowAlways}
	}
	for _, k := range want {
		for _, o := range options.Array() {
			if o.Get("kind").Str == string(k) && o.Get("optionId").Type == gjson.String {
				return sdk.NewRequestPermissionOutcomeSelected(sdk.PermissionOptionId(o.Get("optionId").Str))
			}
		}
	}
	return sdk.NewRequestPermissionOutcomeCancelled()
}

// respond writes the answer to the agent's permission request id, a
// line, taking turns with the SDK's messages and hub's session/cancel. It
// waits while the agent does not read its stdin (Close ends the wait).
func (l *live) respond(id json.RawMessage, o sdk.RequestPermissionOutcome) {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": sdk.RequestPermissionResponse{Outcome: o}})
	if err != nil {
		return
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	_, _ = l.stdin.Write(append(b, '\n'))
}

// diffOf is the change a permission request's toolCall shows: its diff
// content blocks (ACP's {"type":"diff","path","oldText","newText"}, oldText
// absent for a new file) as unified diffs, "" when it has none.
func diffOf(tc gjson.Result) string {
	var b strings.Builder
	for _, c := range tc.Get("content").Array() {
		if c.Get("type").Str != "diff" {
			continue
		}
		path := c.Get("path").String()
		from, to := path, path
		if !c.Get("oldText").Exists() || c.Get("oldText").Type == gjson.Null {
			from = "/dev/null"
		}
		b.WriteString(udiff.Unified(from, to, c.Get("oldText").String(), c.Get("newText").String()))
	}
	return b.String()
}

// decoderOptions are the decoder's options of a live session for req.
func (l *live) decoderOptions(req adapters.Request) acpnorm.Options {
	o := acpnorm.Options{Resume: req.Resume, Model: req.Model, Name: l.o.Info.Name,
		Level: string(req.Permission.OrDefault()), Allow: allowed(req, l.o.Info)}
	if req.Approve {
		o.Answered = l.answer
	}
	return o
}
