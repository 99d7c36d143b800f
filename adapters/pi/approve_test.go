package pi_test

import (
	"bufio"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/adapters/pi"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
)

// openLive is pi's Live for req, with ask as its approver when not nil,
// opened on a pipe: it returns the lines the Live writes to pi's stdin,
// the session's get_session_stats left out.
func openLive(t *testing.T, req adapters.Request, ask func(adapters.ToolCall, func(adapters.Decision))) (adapters.Live, <-chan string) {
	t.Helper()
	lv := (&pi.Adapter{}).NewLive(req)
	if ask != nil {
		lv.(adapters.Approving).Approvals(ask)
	}
	r, w := io.Pipe()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			if gjson.Get(sc.Text(), "type").Str != "get_session_stats" {
				lines <- sc.Text()
			}
		}
	}()
	lv.Open(w)
	t.Cleanup(func() { lv.Close(); r.Close() })
	return lv, lines
}

// uiRequest is an extension_ui_request line.
func uiRequest(t *testing.T, fields map[string]any) []byte {
	t.Helper()
	fields["type"] = "extension_ui_request"
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gateRequest is hub's gate asking about call, as approve.ts does.
func gateRequest(t *testing.T, id string, call any) []byte {
	t.Helper()
	b, err := json.Marshal(call)
	if err != nil {
		t.Fatal(err)
	}
	return uiRequest(t, map[string]any{"id": id, "method": "input", "title": "hub-approval", "placeholder": string(b)})
}

// answerOf reads the Live's extension_ui_response to id.
func answerOf(t *testing.T, lines <-chan string, id string) gjson.Result {
	t.Helper()
	l := <-lines
	r := gjson.Parse(l)
	if r.Get("type").Str != "extension_ui_response" || r.Get("id").Str != id {
		t.Fatalf("pi's stdin got %s, want the extension_ui_response to %s", l, id)
	}
	return r
}

// TestLiveApprovals: hub's gate's question becomes the approver's
// ToolCall (pi's tool name, hub's kind, the input, the paths the gate
// resolved), and the Decision its answer: {"allow":true}, or
// {"allow":false,"message"} for a refusal, which the gate gives the model.
func TestLiveApprovals(t *testing.T) {
	t.Parallel()
	call := map[string]any{"tool": "write", "toolCallId": "call_1", "input": map[string]any{"path": "@a.txt", "content": "x"},
		"paths": []string{"/w/a.txt"}, "cwd": "/w"}
	for _, tt := range []struct {
		d    adapters.Decision
		want string
	}{
		{adapters.Decision{Verdict: adapters.AllowOnce}, `{"allow":true}`},
		{adapters.Decision{Verdict: adapters.AllowSession}, `{"allow":true}`},
		{adapters.Decision{Verdict: adapters.Deny, Message: "not this file"}, `{"allow":false,"message":"not this file"}`},
	} {
		var asked []adapters.ToolCall
		lv, lines := openLive(t, adapters.Request{Approve: true}, func(c adapters.ToolCall, reply func(adapters.Decision)) {
			asked = append(asked, c)
			reply(tt.d)
		})
		if _, own, end := lv.Line(nil, gateRequest(t, "q1", call)); !own || end {
			t.Errorf("Line(gate's request) = own %v end %v, want own, not the end", own, end)
		}
		if got := answerOf(t, lines, "q1").Get("value").Str; got != tt.want {
			t.Errorf("%s: answer value %s, want %s", tt.d.Verdict, got, tt.want)
		}
		want := adapters.ToolCall{CallID: "call_1", Name: "write", Kind: events.ToolWrite,
			Input: json.RawMessage(`{"content":"x","path":"@a.txt"}`), Paths: []string{"/w/a.txt"}}
		if len(asked) != 1 || asked[0].CallID != want.CallID || asked[0].Name != want.Name || asked[0].Kind != want.Kind ||
			string(asked[0].Input) != string(want.Input) || !slices.Equal(asked[0].Paths, want.Paths) {
			t.Errorf("asked %+v, want %+v", asked, want)
		}
	}
}

// TestLiveDialogs: every other dialog is cancelled at once, so that nothing
// in pi waits on hub: an extension's own (under full, or without an
// approver), a gate's question that cannot be read (denied), and one
// that comes when the run has no approver. Told-only requests (notify)
// are left to the decoder.
func TestLiveDialogs(t *testing.T) {
	t.Parallel()
	asker := func(t *testing.T) func(adapters.ToolCall, func(adapters.Decision)) {
		return func(c adapters.ToolCall, _ func(adapters.Decision)) { t.Errorf("asked about %+v", c) }
	}
	foreign := func(t *testing.T, method string) []byte {
		return uiRequest(t, map[string]any{"id": "d1", "method": method, "title": "Proceed?", "message": "really"})
	}
	for _, tt := range []struct {
		name string
		req  adapters.Request
		ask  bool
		line func(t *testing.T) []byte
		want string // the answer's fields; "" for none
	}{
		{"confirm, approver", adapters.Request{Approve: true}, true, func(t *testing.T) []byte { return foreign(t, "confirm") }, `"cancelled":true`},
		{"select, no approver", adapters.Request{}, false, func(t *testing.T) []byte { return foreign(t, "select") }, `"cancelled":true`},
		{"editor, full", adapters.Request{Approve: true, Permission: grant.Full}, true, func(t *testing.T) []byte { return foreign(t, "editor") }, `"cancelled":true`},
		{"gate's title at full (no gate loaded)", adapters.Request{Approve: true, Permission: grant.Full}, true, func(t *testing.T) []byte {
			return gateRequest(t, "d1", map[string]any{"tool": "write", "toolCallId": "c", "input": map[string]any{}, "paths": []string{}})
		}, `"cancelled":true`},
		{"gate's, unreadable", adapters.Request{Approve: true}, true, func(t *testing.T) []byte {
			return uiRequest(t, map[string]any{"id": "d1", "method": "input", "title": "hub-approval", "placeholder": "{not json"})
		}, `"value":"{\"allow\":false,\"message\":\"hub could not read the call its gate asked about\"}"`},
		{"gate's, relative path", adapters.Request{Approve: true}, true, func(t *testing.T) []byte {
			return gateRequest(t, "d1", map[string]any{"tool": "write", "toolCallId": "c", "input": map[string]any{}, "paths": []string{"a.txt"}})
		}, `"value":"{\"allow\":false,\"message\":\"hub could not read the call its gate asked about\"}"`},
		{"gate's, no approver", adapters.Request{Approve: true}, false, func(t *testing.T) []byte {
			return gateRequest(t, "d1", map[string]any{"tool": "write", "toolCallId": "c", "input": map[string]any{}, "paths": []string{}})
		}, `"value":"{\"allow\":false,\"message\":\"the run has no approver\"}"`},
		{"notify", adapters.Request{Approve: true}, true, func(t *testing.T) []byte {
			return uiRequest(t, map[string]any{"id": "d1", "method": "notify", "message": "hi"})
		}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var ask func(adapters.ToolCall, func(adapters.Decision))
			if tt.ask {
				ask = asker(t)
			}
			lv, lines := openLive(t, tt.req, ask)
			_, own, _ := lv.Line(nil, tt.line(t))
			if own != (tt.want != "") {
				t.Errorf("Line = own %v, want %v", own, tt.want != "")
			}
			if tt.want == "" {
				return
			}
			if got := answerOf(t, lines, "d1").Raw; !strings.Contains(got, tt.want) {
				t.Errorf("answer %s, want %s in it", got, tt.want)
			}
		})
	}
}
