package mockllm

// OpenAI Responses: POST /v1/responses, used by codex (wire_api =
// "responses"). The event names, their order and the error shapes follow the
// public API reference as read on 2026-11-30 and what codex 0.169.0 parses
// (codex-rs/codex-api/src/sse/responses.rs): output items arrive whole in
// response.output_item.done, text also as response.output_text.delta, usage
// only in response.completed, and a failure inside a stream as
// response.failed with error.code.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

var responsesAPI = wireAPI{parse: parseResponses, clientError: chatClientError, write: writeResponses}

// responsesRequest is the part of a Responses request the server reads.
type responsesRequest struct {
	Model        string          `json:"model"`
	Stream       bool            `json:"stream"`
	Instructions string          `json:"instructions"`
	Input        json.RawMessage `json:"input"` // a string or an array of items
	Tools        []struct {
		Type       string          `json:"type"`
		Name       string          `json:"name"` // empty for built-in tools such as web_search
		Parameters json.RawMessage `json:"parameters"`
	} `json:"tools"`
}

// responsesItem is one input item, of the kinds the server reads: messages
// and function_call_output (custom_tool_call_output alike).
type responsesItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // a string or an array of parts
	Output  json.RawMessage `json:"output"`  // a string or an array of parts
}

func parseResponses(body []byte) (call, error) {
	var req responsesRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return call{}, err
	}
	c := call{model: req.Model, stream: req.Stream}
	var user, system []string
	if req.Instructions != "" {
		system = append(system, req.Instructions)
	}
	var input string
	if json.Unmarshal(req.Input, &input) == nil {
		user = append(user, input)
	} else {
		var items []responsesItem
		if err := json.Unmarshal(req.Input, &items); err != nil && len(req.Input) > 0 {
			return call{}, fmt.Errorf("input: %w", err)
		}
		for _, it := range items {
			if it.Type != "reasoning" { // codex replays reasoning items after tool output
				c.endsInResult = it.Type == "function_call_output" || it.Type == "custom_tool_call_output"
			}
			switch {
			case it.Type == "function_call_output" || it.Type == "custom_tool_call_output":
				text := chatText(it.Output)
				c.toolResult = &text
				c.toolResults++
			case it.Type == "message" || it.Type == "" && it.Role != "":
				switch it.Role {
				case "assistant":
					c.answered++
				case "user":
					user = append(user, chatText(it.Content))
				case "system", "developer":
					system = append(system, chatText(it.Content))
				}
			}
		}
	}
	c.scenario, c.afterMarker = chooseScenario(user, system)
	c.system = strings.Join(system, "\n\n")
	if len(user) > 0 {
		c.userText, c.lastUserText, c.userTexts = user[0], user[len(user)-1], user
	}
	for _, t := range req.Tools {
		if t.Name != "" {
			c.tools = append(c.tools, tool{name: t.Name, schema: t.Parameters, custom: t.Type == "custom"})
		}
	}
	return c, nil
}

// responsesErrors are the fixed failing scenarios as HTTP errors (the
// others are in openAIFailure, as in Chat Completions). [Overflow] is not
// here: the Responses API reports it inside the stream, as response.failed
// with code context_length_exceeded (see writeResponses).
var responsesErrors = map[Scenario]chatError{
	Unauthorized: chatErrors[Unauthorized],
	RateLimited:  chatErrors[RateLimited],
	ServerError:  chatErrors[ServerError],
	// Codex reads error.code: "server_is_overloaded" is OpenAI's code here.
	Overloaded: {http.StatusServiceUnavailable,
		`{"error":{"message":"The server is overloaded","type":"server_error","param":null,"code":"server_is_overloaded"}}`},
}

// ResponsesOverflowMessage is the error message of [Overflow] in the
// Responses API, as OpenAI words it.
const ResponsesOverflowMessage = "Your input exceeds the context window of this model. Please adjust your input and try again."

// ReasoningSummary is the reasoning summary every successful Responses
// answer starts with, so that clients' reasoning items can be tested.
const ReasoningSummary = "Considering the request."

// The JSON shapes, as structs so fields keep OpenAI's order.
type (
	responsesEvent struct {
		Type           string             `json:"type"`
		SequenceNumber int                `json:"sequence_number"`
		Response       *responsesResponse `json:"response,omitempty"`
		OutputIndex    *int               `json:"output_index,omitempty"`
		ItemID         string             `json:"item_id,omitempty"`
		ContentIndex   *int               `json:"content_index,omitempty"`
		Item           *responsesOutItem  `json:"item,omitempty"`
		Part           *responsesPart     `json:"part,omitempty"`
		Delta          *string            `json:"delta,omitempty"`
		Text           *string            `json:"text,omitempty"`
		Arguments      *string            `json:"arguments,omitempty"`
		Input          *string            `json:"input,omitempty"` // custom_tool_call_input.done
	}
	responsesResponse struct {
		ID        string                `json:"id"`
		Object    string                `json:"object"`
		CreatedAt int                   `json:"created_at"`
		Status    string                `json:"status"`
		Error     *responsesErrorObj    `json:"error"`
		Model     string                `json:"model"`
		Output    []responsesOutItem    `json:"output"`
		Usage     *responsesUsageObject `json:"usage"`
	}
	responsesErrorObj struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	responsesOutItem struct {
		ID        string          `json:"id"`
		Type      string          `json:"type"`
		Status    string          `json:"status,omitempty"`
		Role      string          `json:"role,omitempty"`
		Content   []responsesPart `json:"content,omitzero"`
		Summary   []responsesPart `json:"summary,omitzero"`
		CallID    string          `json:"call_id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Arguments *string         `json:"arguments,omitempty"`
		Input     *string         `json:"input,omitempty"` // custom_tool_call
	}
	responsesPart struct {
		Type        string   `json:"type"`
		Text        string   `json:"text"`
		Annotations []string `json:"annotations,omitempty"`
	}
	responsesUsageObject struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int `json:"total_tokens"`
	}
)

// responsesUsage: input_tokens includes the cached ones, as in Chat
// Completions.
func responsesUsage(u usage) *responsesUsageObject {
	o := &responsesUsageObject{InputTokens: u.prompt, OutputTokens: u.completion, TotalTokens: u.prompt + u.completion}
	o.InputTokensDetails.CachedTokens = u.cached
	return o
}

// responsesOutput is the whole output of a successful reply: a reasoning
// item, then the message, the function call or the custom tool's call
// ({"type":"custom_tool_call","call_id":…,"name":…,"input":"<raw text>"}).
func responsesOutput(id string, r reply) []responsesOutItem {
	reasoning := responsesOutItem{ID: "rs_" + id, Type: "reasoning",
		Summary: []responsesPart{{Type: "summary_text", Text: ReasoningSummary}}}
	if r.kind == replyTool {
		tc := r.toolCall
		args := strings.Join(tc.arguments, "")
		if tc.custom {
			return []responsesOutItem{reasoning, {ID: "ctc_" + id, Type: "custom_tool_call", Status: "completed",
				CallID: tc.id, Name: tc.name, Input: &args}}
		}
		return []responsesOutItem{reasoning, {ID: "fc_" + id, Type: "function_call", Status: "completed",
			CallID: tc.id, Name: tc.name, Arguments: &args}}
	}
	return []responsesOutItem{reasoning, {ID: "msg_" + id, Type: "message", Status: "completed", Role: "assistant",
		Content: []responsesPart{{Type: "output_text", Text: strings.Join(r.text, ""), Annotations: []string{}}}}}
}

func writeResponses(ctx context.Context, w http.ResponseWriter, p *pacer, id int, c call, r reply) {
	w.Header().Set("x-request-id", "req_mock_"+strconv.Itoa(id))
	switch r.kind {
	case replyFail:
		if r.scenario != Overflow {
			e, header := openAIFailure(responsesErrors, c, r)
			writeJSON(w, e.status, header, json.RawMessage(e.body))
			return
		}
	case replyHang:
		wait(ctx)
		return
	case replyStreamFail:
		if !c.stream {
			writeStreamFailure(w, c, r, false)
			return
		}
	}
	rid := "mock_" + strconv.Itoa(id)
	resp := responsesResponse{ID: "resp_" + rid, Object: "response", CreatedAt: created, Status: "in_progress",
		Model: c.model, Output: []responsesOutItem{}}
	overflow := r.kind == replyFail // the only failure not answered above: Overflow
	if !c.stream {
		writeResponse(ctx, w, resp, rid, r, overflow)
		return
	}

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	seq := 0
	send := func(e responsesEvent) bool {
		e.SequenceNumber = seq
		seq++
		b, _ := json.Marshal(e) // cannot fail: structs of strings and ints
		return p.event(fmt.Appendf(nil, "event: %s\ndata: %s\n\n", e.Type, b))
	}
	start := resp
	if !send(responsesEvent{Type: "response.created", Response: &start}) ||
		!send(responsesEvent{Type: "response.in_progress", Response: &start}) {
		return
	}
	if overflow || r.kind == replyStreamFail {
		failed := resp
		failed.Status = "failed"
		failed.Error = &responsesErrorObj{Code: "context_length_exceeded", Message: ResponsesOverflowMessage}
		if r.kind == replyStreamFail {
			_, typ, _ := c.streamFailure()
			failed.Error = &responsesErrorObj{Code: typ, Message: c.streamFailureText()}
		}
		send(responsesEvent{Type: "response.failed", Response: &failed})
		return
	}
	out := responsesOutput(rid, r)
	for i, item := range out {
		index := ptr(i)
		added := item
		switch item.Type {
		case "reasoning":
			added.Summary = []responsesPart{} // "summary":[], as OpenAI sends it; codex's ResponseItem requires the field
			if !send(responsesEvent{Type: "response.output_item.added", OutputIndex: index, Item: &added}) ||
				!send(responsesEvent{Type: "response.output_item.done", OutputIndex: index, Item: &item}) {
				return
			}
			continue
		case "function_call", "custom_tool_call":
			if !sendCall(send, index, item, r.toolCall.arguments) {
				return
			}
		case "message":
			added.Status, added.Content = "in_progress", []responsesPart{}
			part := responsesPart{Type: "output_text", Annotations: []string{}}
			zero := ptr(0)
			if !send(responsesEvent{Type: "response.output_item.added", OutputIndex: index, Item: &added}) ||
				!send(responsesEvent{Type: "response.content_part.added", OutputIndex: index, ItemID: item.ID, ContentIndex: zero, Part: &part}) {
				return
			}
			for j, piece := range r.text {
				if r.kind == replyStall && j == StallDeltas {
					break
				}
				if r.kind == replyCut && j == StallDeltas {
					cutOff(w)
					return
				}
				if !send(responsesEvent{Type: "response.output_text.delta", OutputIndex: index, ItemID: item.ID, ContentIndex: zero, Delta: ptr(piece)}) {
					return
				}
			}
			switch r.kind {
			case replyStall:
				wait(ctx)
				return
			case replyCut:
				cutOff(w)
				return
			}
			text := item.Content[0].Text
			done := item.Content[0]
			if !send(responsesEvent{Type: "response.output_text.done", OutputIndex: index, ItemID: item.ID, ContentIndex: zero, Text: &text}) ||
				!send(responsesEvent{Type: "response.content_part.done", OutputIndex: index, ItemID: item.ID, ContentIndex: zero, Part: &done}) {
				return
			}
		}
		if !send(responsesEvent{Type: "response.output_item.done", OutputIndex: index, Item: &item}) {
			return
		}
	}
	done := resp
	done.Status, done.Output, done.Usage = "completed", out, responsesUsage(r.usage)
	send(responsesEvent{Type: "response.completed", Response: &done})
}

// sendCall streams a call item up to its output_item.done: the item added
// with status in_progress and empty arguments (input), its arguments in
// pieces, and whole. A function_call's are function_call_arguments.delta
// {delta} and .done {arguments}; a custom_tool_call's,
// custom_tool_call_input.delta {delta} and .done {input}, which Codex reads
// (codex-rs/codex-api/src/sse/responses.rs). It reports false once send
// has.
func sendCall(send func(responsesEvent) bool, index *int, item responsesOutItem, pieces []string) bool {
	added := item
	added.Status = "in_progress"
	delta := "response.function_call_arguments.delta"
	done := responsesEvent{Type: "response.function_call_arguments.done", Arguments: item.Arguments}
	if item.Type == "custom_tool_call" {
		added.Input = ptr("")
		delta = "response.custom_tool_call_input.delta"
		done = responsesEvent{Type: "response.custom_tool_call_input.done", Input: item.Input}
	} else {
		added.Arguments = ptr("")
	}
	if !send(responsesEvent{Type: "response.output_item.added", OutputIndex: index, Item: &added}) {
		return false
	}
	for _, piece := range pieces {
		if !send(responsesEvent{Type: delta, OutputIndex: index, ItemID: item.ID, Delta: ptr(piece)}) {
			return false
		}
	}
	done.OutputIndex, done.ItemID = index, item.ID
	return send(done)
}

// writeResponse answers a call with stream false: one response object.
func writeResponse(ctx context.Context, w http.ResponseWriter, resp responsesResponse, rid string, r reply, overflow bool) {
	switch {
	case headersOnly(ctx, w, r):
		return
	case overflow:
		writeJSON(w, http.StatusBadRequest, nil, openAIError(ResponsesOverflowMessage, "invalid_request_error", "context_length_exceeded"))
		return
	}
	resp.Status, resp.Output, resp.Usage = "completed", responsesOutput(rid, r), responsesUsage(r.usage)
	writeJSON(w, http.StatusOK, nil, resp)
}
