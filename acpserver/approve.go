package acpserver

import (
	"context"
	"encoding/json"

	acp "github.com/coder/acp-go-sdk"

	hub "github.com/hubcli/hub"
	"github.com/hubcli/hub/events"
)

// The options hub offers the client for a tool call (session/request_permission).
const (
	optionAllowOnce   acp.PermissionOptionId = "allow_once"
	optionAllowAlways acp.PermissionOptionId = "allow_always"
	optionReject      acp.PermissionOptionId = "reject_once"
)

// forward is the approver of the ACP session id's agent
// (Config.ForwardApprovals): it asks the client with
// session/request_permission, the call's title, kind, input and paths as
// the tool call's update, and options allow once, allow always (the
// tool, for the rest of the session), reject. An answer the client could
// not give (the request failed, the connection ended) or a cancelled
// outcome (the client cancelled the turn) is a denial.
func (s *server) forward(id acp.SessionId) hub.Approver {
	return func(ctx context.Context, call hub.ToolCall) hub.Decision {
		title := call.Name
		if len(call.Paths) > 0 {
			title += " " + call.Paths[0]
		}
		kind := ToolKind(call.Kind)
		var input any
		if len(call.Input) > 0 {
			input = json.RawMessage(call.Input)
		}
		upd := acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(call.CallID), Title: &title, Kind: &kind, RawInput: input}
		for _, p := range call.Paths {
			upd.Locations = append(upd.Locations, acp.ToolCallLocation{Path: p})
		}
		switch {
		case call.Diff == "":
		case call.Kind == events.ToolWrite && len(call.Paths) == 1:
			// A new file: its diff is its content.
			upd.Content = append(upd.Content, acp.ToolDiffContent(call.Paths[0], call.Diff))
		default:
			upd.Content = append(upd.Content, acp.ToolContent(acp.TextBlock(call.Diff)))
		}
		resp, err := s.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: id, ToolCall: upd, Options: []acp.PermissionOption{
			{OptionId: optionAllowOnce, Name: "Allow once", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: optionAllowAlways, Name: "Allow " + call.Name + " for this session", Kind: acp.PermissionOptionKindAllowAlways},
			{OptionId: optionReject, Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
		}})
		if err != nil {
			return hub.Decision{Verdict: hub.Deny, Message: "the editor could not be asked: " + err.Error(), By: "editor"}
		}
		if sel := resp.Outcome.Selected; sel != nil {
			switch sel.OptionId {
			case optionAllowOnce:
				return hub.Decision{Verdict: hub.AllowOnce, By: "editor"}
			case optionAllowAlways:
				return hub.Decision{Verdict: hub.AllowSession, By: "editor"}
			}
			return hub.Decision{Verdict: hub.Deny, Message: "the user rejected this tool call", By: "editor"}
		}
		return hub.Decision{Verdict: hub.Deny, Message: "the user cancelled the turn", By: "editor"}
	}
}
