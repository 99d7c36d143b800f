package acpserver

import (
	"encoding/json"

	acp "github.com/coder/acp-go-sdk"

	"github.com/hubcli/hub/events"
)

// Updates maps one run's hub events onto ACP session updates, in order:
//
//   - text.delta → agent_message_chunk (text);
//   - message → agent_message_chunk, only when no text.delta streamed that
//     text block (the deltas already carried it);
//   - reasoning → agent_thought_chunk (text);
//   - tool.started → tool_call: toolCallId = call_id, title = the agent's
//     tool name, kind from hub's kind (ToolKind), status in_progress,
//     rawInput = the input object;
//   - tool.finished → tool_call_update: status completed, or failed when
//     hub's status is error or denied; content = the output as one text
//     block (none when empty). A tool.finished whose tool.started was not
//     seen is announced as a tool_call with its final status instead;
//   - usage → usage_update (UNSTABLE in ACP): used = the step's tokens
//     (input, cache read and write, output: what the context held at that
//     step), size = 0 (hub does not know the model's context window), cost
//     = the run's total cost in USD when known;
//   - run.started, session.started, notice, file.changed and run.finished
//     → nothing (notices are hub's diagnostics, not the conversation; the
//     outcome of run.finished is the prompt's answer, see Outcome).
//
// The zero value is ready to use; use one per run. Not safe for concurrent
// use.
type Updates struct {
	streamed  bool            // a text.delta since the last message
	announced map[string]bool // call ids of tool.started seen
}

// Next returns the session updates for ev (none, one or two), in the order
// to send them.
func (u *Updates) Next(ev events.Event) []acp.SessionUpdate {
	switch b := ev.Body.(type) {
	case events.TextDelta:
		if b.Text == "" {
			return nil
		}
		u.streamed = true
		return []acp.SessionUpdate{acp.UpdateAgentMessageText(b.Text)}
	case events.Message:
		streamed := u.streamed
		u.streamed = false
		if streamed || b.Text == "" {
			return nil
		}
		return []acp.SessionUpdate{acp.UpdateAgentMessageText(b.Text)}
	case events.Reasoning:
		if b.Text == "" {
			return nil
		}
		return []acp.SessionUpdate{acp.UpdateAgentThoughtText(b.Text)}
	case events.ToolStarted:
		if u.announced == nil {
			u.announced = map[string]bool{}
		}
		u.announced[b.CallID] = true
		return []acp.SessionUpdate{acp.StartToolCall(acp.ToolCallId(b.CallID), b.Name,
			acp.WithStartKind(ToolKind(b.Kind)),
			acp.WithStartStatus(acp.ToolCallStatusInProgress),
			acp.WithStartRawInput(rawInput(b.Input)))}
	case events.ToolFinished:
		status := acp.ToolCallStatusCompleted
		if b.Status != events.ToolOK {
			status = acp.ToolCallStatusFailed
		}
		var content []acp.ToolCallContent
		if b.Output != "" {
			content = []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(b.Output))}
		}
		if !u.announced[b.CallID] {
			return []acp.SessionUpdate{acp.StartToolCall(acp.ToolCallId(b.CallID), b.Name,
				acp.WithStartKind(ToolKind(b.Kind)),
				acp.WithStartStatus(status),
				acp.WithStartContent(content))}
		}
		delete(u.announced, b.CallID)
		return []acp.SessionUpdate{acp.UpdateToolCall(acp.ToolCallId(b.CallID),
			acp.WithUpdateStatus(status),
			acp.WithUpdateContent(content))}
	case events.Usage:
		st := b.Step
		up := &acp.SessionUsageUpdate{Used: clampInt(st.Input + st.CacheRead + st.CacheWrite + st.Output)}
		if c := b.Total.CostUSD; c != nil {
			up.Cost = &acp.Cost{Amount: *c, Currency: "USD"}
		}
		return []acp.SessionUpdate{{UsageUpdate: up}}
	}
	return nil
}

// ToolKind maps hub's tool kind onto ACP's: shell → execute, read → read,
// write and edit → edit, search → search, web → fetch, anything else
// (mcp, task, other) → other.
func ToolKind(k events.ToolKind) acp.ToolKind {
	switch k {
	case events.ToolShell:
		return acp.ToolKindExecute
	case events.ToolRead:
		return acp.ToolKindRead
	case events.ToolWrite, events.ToolEdit:
		return acp.ToolKindEdit
	case events.ToolSearch:
		return acp.ToolKindSearch
	case events.ToolWeb:
		return acp.ToolKindFetch
	}
	return acp.ToolKindOther
}

// rawInput is a tool's input for rawInput: the JSON object as hub has it,
// nil (absent) when there is none.
func rawInput(in json.RawMessage) any {
	if len(in) == 0 || !json.Valid(in) {
		return nil
	}
	return in
}

// clampInt converts a token count (≤ events.MaxCount) to int.
func clampInt(n int64) int {
	return int(min(max(n, 0), events.MaxCount))
}
