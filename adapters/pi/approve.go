package pi

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	pinorm "github.com/hubcli/hub/normalize/pi"
)

// approvalTools are the tools a run with an approver offers: pi's built-in
// ones (its default four and the three search tools). Each call of them is
// put to hub, which answers what the grant allows and asks the approver
// about the rest.
const approvalTools = "read,bash,edit,write,grep,find,ls"

// approvalTitle is the title of the dialog by which hub's gate asks
// (approve.ts).
const approvalTitle = "hub-approval"

// approveTS is hub's pi extension for runs with an approver (approve.ts).
//
//go:embed approve.ts
var approveTS []byte

// approvalArgs are the tool flags of a run with an approver and a grant
// below full: pi's built-in tools (approvalTools), none of the user's or
// the project's extensions or packages (as below full without an
// approver), and hub's gate (approve.ts), which asks hub about every call
// over RPC: -e loads it under --no-extensions too. confine.ts is not
// loaded: the gate sends each call's paths resolved as pi resolves them,
// and hub's broker allows unasked only what the grant holds (a write
// inside --cwd under workspace-write, links followed) and asks about the
// rest. Errors are gateExtension's.
func approvalArgs() ([]string, error) {
	ext, err := gateExtension()
	if err != nil {
		return nil, err
	}
	return []string{"--tools", approvalTools, "--no-extensions", "--offline", "-e", ext}, nil
}

// gateExtension returns the path of approve.ts on disk (extensionFile).
func gateExtension() (string, error) {
	return extensionFile("pi-approve-", approveTS, "hub's pi extension for approving tool calls")
}

// extensionFile returns the path of one of hub's extensions on disk, where
// pi can load it: the user's cache directory (adapters.CacheFile: one file
// per content, written once, atomically, in a directory created 0700),
// checked, with its directory, to be no symbolic link, owned by hub's
// user and writable by it alone. An extension runs as code in pi,
// and hub's gate decides what runs: a copy another user could rewrite
// (a cache directory made by someone else, or group- or world-writable)
// is refused rather than loaded. The cache, not a temporary file per run:
// nothing to remove when a run ends (a one-shot command has no end hook,
// and a killed hub leaves nothing behind), and concurrent runs share one
// file that never changes under them. Errors are *events.Error
// (internal).
func extensionFile(prefix string, content []byte, what string) (string, error) {
	path, err := adapters.CacheFile(prefix, ".ts", content, what)
	if err != nil {
		return "", err
	}
	for _, p := range []string{path, filepath.Dir(path)} {
		if err := private(p); err != nil {
			return "", events.NewError(events.BinInternal, "",
				fmt.Sprintf("make %s owned by you and writable by you alone (chmod go-w), or set XDG_CACHE_HOME to a directory that is", filepath.Dir(path)),
				"hub does not load %s from %s: %v", what, path, err)
		}
	}
	return path, nil
}

// private says why p, a file or directory, could be changed by another user
// than hub's (nil when it cannot): a symbolic link, a group- or
// world-writable mode, another owner.
func private(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("%s is a symbolic link", p)
	case fi.Mode().Perm()&0o022 != 0:
		return fmt.Errorf("%s is writable by others (mode %v)", p, fi.Mode().Perm())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to hub's (%d)", p, st.Uid, os.Geteuid())
	}
	return nil
}

var _ adapters.Approving = (*live)(nil)

// Approvals implements adapters.Approving: with Request.Approve and a
// grant below full the command loads hub's gate (approvalArgs), which puts
// every tool call to hub as an extension_ui_request before it runs (after
// its tool_execution_start):
//
//	{"type":"extension_ui_request","id":"…","method":"input","title":"hub-approval","placeholder":"{\"tool\":\"write\",\"toolCallId\":…,\"input\":{…},\"paths\":[…],\"cwd\":…}"}
//	{"type":"extension_ui_response","id":"…","value":"{\"allow\":true}"}
//	{"type":"extension_ui_response","id":"…","value":"{\"allow\":false,\"message\":\"…\"}"}
//
// each asked of ask; a refusal blocks the call, and the model gets
// "hub: " and the message as the call's error (testdata/approvals/pi:
// write-confirm-false, there through a confirm). A full grant loads no
// gate (hub's broker allows every call at full): no call is asked.
func (l *live) Approvals(ask func(adapters.ToolCall, func(adapters.Decision))) { l.ask = ask }

// dialogs are the extension UI methods whose request waits for the
// client's extension_ui_response (pi 0.73.1's rpc-mode.js); the others
// (notify, setStatus, setWidget, setTitle, set_editor_text) are told and
// not answered.
var dialogs = map[string]bool{"select": true, "confirm": true, "input": true, "editor": true}

// uiRequest answers an extension_ui_request that waits for an answer: hub's
// gate's to the approver; any other (an extension of the user's, under a
// full grant) is cancelled at once, which pi reads as the dialog dismissed,
// so that nothing waits on hub. It reports whether the line was such a
// request.
func (l *live) uiRequest(r gjson.Result) bool {
	if !dialogs[r.Get("method").Str] {
		return false
	}
	id := r.Get("id").Str
	respond := func(body map[string]any) {
		body["type"], body["id"] = "extension_ui_response", id
		go func() { _ = l.w.Write(body) }()
	}
	if !l.gate || r.Get("method").Str != "input" || r.Get("title").Str != approvalTitle {
		respond(map[string]any{"cancelled": true})
		return true
	}
	answer := func(d adapters.Decision) {
		v := map[string]any{"allow": false, "message": d.Message}
		if d.Verdict == adapters.AllowOnce || d.Verdict == adapters.AllowSession {
			v = map[string]any{"allow": true}
		}
		b, _ := json.Marshal(v)
		respond(map[string]any{"value": string(b)})
	}
	call, ok := gateCall(r.Get("placeholder").Str)
	switch {
	case !ok:
		answer(adapters.Decision{Verdict: adapters.Deny, Message: "hub could not read the call its gate asked about"})
	case l.ask == nil:
		answer(adapters.Decision{Verdict: adapters.Deny, Message: "the run has no approver"})
	default:
		l.ask(call, answer)
	}
	return true
}

// gateCall reads the call hub's gate asks about (approve.ts).
func gateCall(s string) (adapters.ToolCall, bool) {
	if !gjson.Valid(s) {
		return adapters.ToolCall{}, false
	}
	r := gjson.Parse(s)
	name, id := r.Get("tool").Str, r.Get("toolCallId").Str
	if name == "" || id == "" {
		return adapters.ToolCall{}, false
	}
	call := adapters.ToolCall{CallID: id, Name: name, Kind: pinorm.ToolKind(name), Input: json.RawMessage(`{}`)}
	in := r.Get("input")
	if in.IsObject() {
		call.Input = json.RawMessage(in.Raw)
	}
	ps := r.Get("paths")
	if !ps.IsArray() {
		return adapters.ToolCall{}, false
	}
	for _, p := range ps.Array() {
		if p.Type != gjson.String || !filepath.IsAbs(p.Str) {
			return adapters.ToolCall{}, false
		}
		call.Paths = append(call.Paths, p.Str)
	}
	return call, true
}
