package mockllm_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/mockllm"
)

// The parts of the request Codex 0.169.0 sends.
const (
	codexModel        = "gpt-5.5"
	codexInstructions = "You are Codex, a coding agent based on GPT-5. You and the user share the same workspace."
	codexDeveloper    = "<permissions instructions>Filesystem sandboxing: workspace-write.</permissions instructions>"
	codexEnvironment  = "<environment_context>\n  <cwd>/tmp/work</cwd>\n  <shell>bash</shell>\n</environment_context>"
	// codexExecCommand is Codex's shell tool; codexWebSearch is its
	// built-in web search, which has no name.
	codexExecCommand = `{"type":"function","name":"exec_command","description":"Runs a command in a PTY, returning output or a session ID.",` +
		`"strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string","description":"Shell command to execute."},` +
		`"workdir":{"type":"string"}},"required":["cmd"],"additionalProperties":false}}`
	codexWebSearch = `{"type":"web_search"}`
)

var codexTools = []string{codexExecCommand, codexWebSearch}

// inputMessage is a message input item whose content is one input_text part.
func inputMessage(role, text string) map[string]any {
	return map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": "input_text", "text": text}}}
}

// responsesBody builds a Responses request the way Codex 0.169.0 does: a
// developer message, the environment context as a first user message, then
// the prompt. tools are tool objects as JSON; toolOutput, if not nil, adds
// the reasoning item and the function call the model made, then a
// function_call_output item whose output it is (a string or an array of
// parts).
func responsesBody(t *testing.T, prompt string, stream bool, tools []string, toolOutput any) []byte {
	t.Helper()
	input := []any{inputMessage("developer", codexDeveloper), inputMessage("user", codexEnvironment), inputMessage("user", prompt)}
	if toolOutput != nil {
		input = append(input,
			map[string]any{"type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": mockllm.ReasoningSummary}},
				"content": nil, "encrypted_content": nil},
			map[string]any{"type": "function_call", "name": "exec_command", "arguments": `{"cmd":"` + mockllm.ToolCommand + `"}`,
				"call_id": mockllm.ToolCallID},
			map[string]any{"type": "function_call_output", "call_id": mockllm.ToolCallID, "output": toolOutput},
		)
	}
	ts := []json.RawMessage{}
	for _, tool := range tools {
		ts = append(ts, json.RawMessage(tool))
	}
	b, err := json.Marshal(map[string]any{
		"model": codexModel, "instructions": codexInstructions, "input": input, "tools": ts,
		"tool_choice": "auto", "parallel_tool_calls": false, "reasoning": map[string]any{"effort": "medium", "summary": "auto"},
		"store": false, "stream": stream, "include": []string{"reasoning.encrypted_content"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type respPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type respItem struct {
	ID        string      `json:"id"`
	Type      string      `json:"type"`
	Status    string      `json:"status"`
	Role      string      `json:"role"`
	Content   *[]respPart `json:"content"` // nil when absent
	Summary   *[]respPart `json:"summary"`
	CallID    string      `json:"call_id"`
	Name      string      `json:"name"`
	Arguments *string     `json:"arguments"`
	Input     *string     `json:"input"` // custom_tool_call
}

type respUsage struct {
	InputTokens        int `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// array is input (cached included), cached, output and total tokens, as
// normalUsage and bigUsage are.
func (u respUsage) array() [4]int {
	return [4]int{u.InputTokens, u.InputTokensDetails.CachedTokens, u.OutputTokens, u.TotalTokens}
}

type respResponse struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Status string `json:"status"`
	Model  string `json:"model"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Output []respItem `json:"output"`
	Usage  *respUsage `json:"usage"`
}

type respEvent struct {
	Type           string        `json:"type"`
	SequenceNumber *int          `json:"sequence_number"`
	Response       *respResponse `json:"response"`
	OutputIndex    *int          `json:"output_index"`
	ItemID         string        `json:"item_id"`
	ContentIndex   *int          `json:"content_index"`
	Item           *respItem     `json:"item"`
	Part           *respPart     `json:"part"`
	Delta          *string       `json:"delta"`
	Text           *string       `json:"text"`
	Arguments      *string       `json:"arguments"`
	Input          *string       `json:"input"` // custom_tool_call_input.done
}

// respStream is what a streamed Responses answer added up to.
type respStream struct {
	// shape is the event types in order without "response.", an output
	// item's type after a colon, a run of deltas as one "…delta*".
	shape              string
	model              string
	reasoning          string // the reasoning item's summary
	text               string // the output_text deltas joined
	callID, name, args string // of the function or custom tool call; args are its deltas joined
	status             string // of the response in the last event
	output             string // the types of response.completed's output items
	usage              [4]int // of response.completed
	errCode, errMsg    string // of response.failed
}

// respCounts counts what varies with how the server splits its answer.
type respCounts struct {
	events int
	pieces int // output_text, function_call_arguments and custom_tool_call_input deltas
}

const (
	respTextShape = "created in_progress output_item.added:reasoning output_item.done:reasoning output_item.added:message " +
		"content_part.added output_text.delta* output_text.done content_part.done output_item.done:message completed"
	respToolShape = "created in_progress output_item.added:reasoning output_item.done:reasoning output_item.added:function_call " +
		"function_call_arguments.delta* function_call_arguments.done output_item.done:function_call completed"
	respStallShape = "created in_progress output_item.added:reasoning output_item.done:reasoning output_item.added:message " +
		"content_part.added output_text.delta*"
	respOverflowShape = "created in_progress failed"
)

// stallText is what Stall streams before it stalls: its first StallDeltas
// words.
var stallText = strings.Join(strings.Fields(mockllm.TextAnswer)[:mockllm.StallDeltas], " ")

// respReader reads a Responses event stream one event at a time. It checks
// the framing of each (event: <type>\ndata: <json>\n\n, the data's type
// equal to the event name), that sequence_number counts up from 0 without
// gaps, and, in step, that the events agree with one another.
type respReader struct {
	t   *testing.T
	r   *bufio.Reader
	seq int

	st     respStream
	counts respCounts
	shape  []string

	id                 string    // the response's id
	open               *respItem // the output item added and not yet done
	itemText, itemArgs string    // the open item's deltas joined
	done               []respItem
	end                string // the event that ended the response
}

func newRespReader(t *testing.T, body io.Reader) *respReader {
	return &respReader{t: t, r: bufio.NewReader(body)}
}

// next reads, checks and returns one event; io.EOF at a clean end.
func (rr *respReader) next() (respEvent, error) {
	t := rr.t
	t.Helper()
	name, err := rr.r.ReadString('\n')
	if err == io.EOF && name == "" {
		return respEvent{}, io.EOF
	}
	if err != nil {
		return respEvent{}, err
	}
	data, err := rr.r.ReadString('\n')
	if err != nil {
		return respEvent{}, err
	}
	blank, err := rr.r.ReadString('\n')
	if err != nil {
		return respEvent{}, err
	}
	if !strings.HasPrefix(name, "event: ") || !strings.HasPrefix(data, "data: ") || blank != "\n" {
		t.Fatalf("SSE event = %q, %q, %q, want \"event: …\\n\", \"data: …\\n\", \"\\n\"", name, data, blank)
	}
	var e respEvent
	if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &e); err != nil {
		t.Fatalf("json.Unmarshal(%q) error = %v", data, err)
	}
	if want := strings.TrimSuffix(strings.TrimPrefix(name, "event: "), "\n"); e.Type != want {
		t.Fatalf("event %q has data type %q", want, e.Type)
	}
	if e.SequenceNumber == nil || *e.SequenceNumber != rr.seq {
		t.Fatalf("%s sequence_number = %s, want %d", e.Type, intString(e.SequenceNumber), rr.seq)
	}
	rr.seq++
	rr.step(e)
	return e, nil
}

// String shows an item as JSON, so that failures show its parts.
func (it respItem) String() string {
	b, _ := json.Marshal(it)
	return string(b)
}

func strString(p *string) string {
	if p == nil {
		return "missing"
	}
	return strconv.Quote(*p)
}

func intString(p *int) string {
	if p == nil {
		return "missing"
	}
	return strconv.Itoa(*p)
}

// step checks that e follows from the events before it and records it.
func (rr *respReader) step(e respEvent) {
	t := rr.t
	t.Helper()
	rr.counts.events++
	if rr.end != "" {
		t.Errorf("%s after %s", e.Type, rr.end)
	}
	token := strings.TrimPrefix(e.Type, "response.")
	switch e.Type {
	case "response.created", "response.in_progress":
		resp := rr.response(e, "in_progress")
		if len(resp.Output) != 0 || resp.Usage != nil || resp.Error != nil {
			t.Errorf("%s response = %+v, want no output, usage or error yet", e.Type, resp)
		}
	case "response.output_item.added":
		it := rr.item(e)
		token += ":" + it.Type
		if rr.open != nil {
			t.Errorf("%s of %s while %s is open", e.Type, it.ID, rr.open.ID)
		}
		switch it.Type {
		case "reasoning":
			if it.Summary == nil || len(*it.Summary) != 0 {
				t.Errorf("%s reasoning = %v, want summary []", e.Type, it)
			}
		case "message":
			if it.Status != "in_progress" || it.Role != "assistant" || it.Content == nil || len(*it.Content) != 0 {
				t.Errorf("%s message = %+v, want an empty in_progress assistant message", e.Type, it)
			}
		case "function_call":
			if it.Status != "in_progress" || it.Arguments == nil || *it.Arguments != "" || it.CallID == "" || it.Name == "" {
				t.Errorf("%s function_call = %+v, want in_progress with call_id, name and empty arguments", e.Type, it)
			}
		case "custom_tool_call":
			if it.Status != "in_progress" || it.Input == nil || *it.Input != "" || it.Arguments != nil || it.CallID == "" || it.Name == "" {
				t.Errorf("%s custom_tool_call = %+v, want in_progress with call_id, name, empty input and no arguments", e.Type, it)
			}
		default:
			t.Errorf("%s item type = %q", e.Type, it.Type)
		}
		rr.open, rr.itemText, rr.itemArgs = it, "", ""
	case "response.output_item.done":
		it := rr.item(e)
		token += ":" + it.Type
		if rr.open == nil || it.ID != rr.open.ID || it.Type != rr.open.Type {
			t.Fatalf("%s of %s %s, want the open item %+v", e.Type, it.Type, it.ID, rr.open)
		}
		switch it.Type {
		case "reasoning":
			rr.st.reasoning = partsText(t, e.Type+" reasoning summary", it.Summary, "summary_text")
		case "message":
			text := partsText(t, e.Type+" message content", it.Content, "output_text")
			if it.Status != "completed" || it.Role != "assistant" || len(*it.Content) != 1 || text != rr.itemText {
				t.Errorf("%s message = %+v (text %q), want completed with one part, text %q", e.Type, it, text, rr.itemText)
			}
		case "function_call":
			if it.Status != "completed" || it.Arguments == nil || *it.Arguments != rr.itemArgs ||
				it.CallID != rr.open.CallID || it.Name != rr.open.Name {
				t.Errorf("%s function_call = %+v, want completed %s %s with arguments %q", e.Type, it, rr.open.CallID, rr.open.Name, rr.itemArgs)
			}
			rr.st.callID, rr.st.name = it.CallID, it.Name
		case "custom_tool_call":
			if it.Status != "completed" || it.Input == nil || *it.Input != rr.itemArgs ||
				it.CallID != rr.open.CallID || it.Name != rr.open.Name {
				t.Errorf("%s custom_tool_call = %+v, want completed %s %s with input %q", e.Type, it, rr.open.CallID, rr.open.Name, rr.itemArgs)
			}
			rr.st.callID, rr.st.name = it.CallID, it.Name
		}
		rr.done, rr.open = append(rr.done, *it), nil
	case "response.content_part.added", "response.content_part.done":
		rr.inOpen(e, "message", true)
		want := ""
		if e.Type == "response.content_part.done" {
			want = rr.itemText
		}
		if e.Part == nil || e.Part.Type != "output_text" || e.Part.Text != want {
			t.Errorf("%s part = %+v, want output_text %q", e.Type, e.Part, want)
		}
	case "response.output_text.delta":
		rr.inOpen(e, "message", true)
		if e.Delta == nil {
			t.Fatalf("%s without a delta", e.Type)
		}
		rr.itemText += *e.Delta
		rr.st.text += *e.Delta
		rr.counts.pieces++
	case "response.output_text.done":
		rr.inOpen(e, "message", true)
		if e.Text == nil || *e.Text != rr.itemText {
			t.Errorf("%s text = %s, want %q", e.Type, strString(e.Text), rr.itemText)
		}
	case "response.function_call_arguments.delta":
		rr.inOpen(e, "function_call", false)
		if e.Delta == nil {
			t.Fatalf("%s without a delta", e.Type)
		}
		rr.itemArgs += *e.Delta
		rr.st.args += *e.Delta
		rr.counts.pieces++
	case "response.function_call_arguments.done":
		rr.inOpen(e, "function_call", false)
		if e.Arguments == nil || *e.Arguments != rr.itemArgs {
			t.Errorf("%s arguments = %s, want %q", e.Type, strString(e.Arguments), rr.itemArgs)
		}
	case "response.custom_tool_call_input.delta":
		rr.inOpen(e, "custom_tool_call", false)
		if e.Delta == nil {
			t.Fatalf("%s without a delta", e.Type)
		}
		rr.itemArgs += *e.Delta
		rr.st.args += *e.Delta
		rr.counts.pieces++
	case "response.custom_tool_call_input.done":
		rr.inOpen(e, "custom_tool_call", false)
		if e.Input == nil || *e.Input != rr.itemArgs {
			t.Errorf("%s input = %s, want %q", e.Type, strString(e.Input), rr.itemArgs)
		}
	case "response.completed":
		resp := rr.response(e, "completed")
		if rr.open != nil {
			t.Errorf("%s while %s is open", e.Type, rr.open.ID)
		}
		var types []string
		for _, it := range resp.Output {
			types = append(types, it.Type)
		}
		rr.st.output = strings.Join(types, ",")
		if got, want := itemsString(t, resp.Output), itemsString(t, rr.done); got != want {
			t.Errorf("%s output = %s, want the items done: %s", e.Type, got, want)
		}
		if resp.Usage == nil || resp.Error != nil {
			t.Errorf("%s response = %+v, want usage and no error", e.Type, resp)
		} else {
			rr.st.usage = resp.Usage.array()
		}
		rr.end = e.Type
	case "response.failed":
		resp := rr.response(e, "failed")
		if resp.Error == nil {
			t.Errorf("%s response = %+v, want an error", e.Type, resp)
		} else {
			rr.st.errCode, rr.st.errMsg = resp.Error.Code, resp.Error.Message
		}
		rr.end = e.Type
	default:
		t.Errorf("unexpected event %s", e.Type)
	}
	if !strings.HasSuffix(token, ".delta") {
		rr.shape = append(rr.shape, token)
	} else if token += "*"; len(rr.shape) == 0 || rr.shape[len(rr.shape)-1] != token {
		rr.shape = append(rr.shape, token)
	}
}

// response checks the response of a response.* event.
func (rr *respReader) response(e respEvent, status string) *respResponse {
	t := rr.t
	t.Helper()
	resp := e.Response
	if resp == nil {
		t.Fatalf("%s without a response", e.Type)
	}
	if rr.id == "" {
		rr.id = resp.ID
	}
	if resp.Object != "response" || resp.Status != status || !strings.HasPrefix(resp.ID, "resp_") || resp.ID != rr.id {
		t.Errorf("%s response = %+v, want object response, status %s, id %s", e.Type, resp, status, rr.id)
	}
	rr.st.model, rr.st.status = resp.Model, resp.Status
	return resp
}

// item checks the item and output index of an output_item event: items
// are numbered in order, and each is done before the next is added.
func (rr *respReader) item(e respEvent) *respItem {
	t := rr.t
	t.Helper()
	if e.Item == nil || e.Item.ID == "" {
		t.Fatalf("%s item = %+v, want one with an id", e.Type, e.Item)
	}
	if e.OutputIndex == nil || *e.OutputIndex != len(rr.done) {
		t.Errorf("%s output_index = %s, want %d", e.Type, intString(e.OutputIndex), len(rr.done))
	}
	return e.Item
}

// inOpen checks that e is about the open item, of type typ, and about its
// first content part if withContent.
func (rr *respReader) inOpen(e respEvent, typ string, withContent bool) {
	t := rr.t
	t.Helper()
	if rr.open == nil || rr.open.Type != typ {
		t.Fatalf("%s while the open item is %+v, want a %s", e.Type, rr.open, typ)
	}
	if e.ItemID != rr.open.ID || e.OutputIndex == nil || *e.OutputIndex != len(rr.done) {
		t.Errorf("%s item_id, output_index = %q, %s, want %q, %d", e.Type, e.ItemID, intString(e.OutputIndex), rr.open.ID, len(rr.done))
	}
	if withContent && (e.ContentIndex == nil || *e.ContentIndex != 0) {
		t.Errorf("%s content_index = %s, want 0", e.Type, intString(e.ContentIndex))
	}
}

// result is what the events read so far added up to.
func (rr *respReader) result() (respStream, respCounts) {
	st := rr.st
	st.shape = strings.Join(rr.shape, " ")
	return st, rr.counts
}

// readResponsesStream reads a whole Responses event stream.
func readResponsesStream(t *testing.T, body io.Reader) (respStream, respCounts) {
	t.Helper()
	rr := newRespReader(t, body)
	for {
		_, err := rr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("reading stream after %q: %v", rr.shape, err)
		}
	}
	return rr.result()
}

// partsText joins the text of parts, each of which must be of type typ.
func partsText(t *testing.T, what string, parts *[]respPart, typ string) string {
	t.Helper()
	if parts == nil {
		t.Errorf("%s is missing", what)
		return ""
	}
	var b strings.Builder
	for _, p := range *parts {
		if p.Type != typ {
			t.Errorf("%s part type = %q, want %s", what, p.Type, typ)
		}
		b.WriteString(p.Text)
	}
	return b.String()
}

// itemsString describes output items, to compare them.
func itemsString(t *testing.T, items []respItem) string {
	t.Helper()
	var out []string
	for _, it := range items {
		s := it.Type + " " + it.ID + " " + it.Status
		switch it.Type {
		case "reasoning":
			s += " " + partsText(t, "reasoning summary", it.Summary, "summary_text")
		case "message":
			s += " " + it.Role + " " + partsText(t, "message content", it.Content, "output_text")
		case "function_call":
			var args string
			if it.Arguments != nil {
				args = *it.Arguments
			}
			s += " " + it.CallID + " " + it.Name + " " + args
		}
		out = append(out, s)
	}
	return "[" + strings.Join(out, "; ") + "]"
}

// checkExecArgs checks that args are JSON whose cmd is ToolCommand.
func checkExecArgs(t *testing.T, args string) {
	t.Helper()
	var v struct {
		Cmd *string `json:"cmd"`
	}
	if err := json.Unmarshal([]byte(args), &v); err != nil || v.Cmd == nil || *v.Cmd != mockllm.ToolCommand {
		t.Errorf("function_call arguments %q: cmd = %s, %v; want %q", args, strString(v.Cmd), err, mockllm.ToolCommand)
	}
}

// respErrorBody is the OpenAI error body; code is kept as raw JSON so that
// null and a missing code differ.
type respErrorBody struct {
	Error *struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// readErrorBody decodes an OpenAI error body and returns its code as JSON.
func readErrorBody(t *testing.T, what string, resp *http.Response) string {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s Content-Type = %q, want application/json", what, ct)
	}
	var body respErrorBody
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error == nil || body.Error.Message == "" || body.Error.Type == "" {
		t.Fatalf("%s body = %+v, %v, want an OpenAI error with message and type", what, body.Error, err)
	}
	return string(body.Error.Code)
}

// bounded returns a context that ends after prompt, so that a server that
// never ends its answer fails the test instead of hanging it.
func bounded(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), prompt)
	t.Cleanup(cancel)
	return ctx
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// blockedFor is how long a hanging or stalled read must stay blocked.
const blockedFor = 100 * time.Millisecond

// blockedUntilClose checks that read blocks until s closes, then returns
// an error promptly, with no more data. read runs in its own goroutine and
// must be bounded by a client timeout of prompt, which it must not reach.
func blockedUntilClose(t *testing.T, s *mockllm.Server, what string, read func() ([]byte, error)) {
	t.Helper()
	type result struct {
		b   []byte
		err error
	}
	done := make(chan result, 1)
	go func() {
		b, err := read()
		done <- result{b, err}
	}()
	// Wait for the request to arrive, then give it time to answer.
	for deadline := time.Now().Add(prompt); len(s.Requests()) == 0; {
		select {
		case r := <-done:
			t.Fatalf("%s = %q, %v before the server received it, want it to block", what, r.b, r.err)
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no request received within %v", what, prompt)
		}
	}
	select {
	case r := <-done:
		t.Fatalf("%s = %q, %v before Close(), want it to block", what, r.b, r.err)
	case <-time.After(blockedFor):
	}
	begin := time.Now()
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(prompt):
		t.Fatalf("Close() with %s blocked did not return within %v", what, prompt)
	}
	select {
	case r := <-done:
		if r.err == nil || isTimeout(r.err) || len(r.b) != 0 {
			t.Errorf("%s after Close() = %q, %v after %v, want no data and an error that is not a timeout", what, r.b, r.err, time.Since(begin))
		}
	case <-time.After(prompt):
		t.Fatalf("%s was not released within %v of Close()", what, prompt)
	}
}

// TestResponsesScenarios runs every scenario once, streaming, through the
// Responses API as Codex calls it.
func TestResponsesScenarios(t *testing.T) {
	t.Parallel()
	shared := start(t)
	normal := respStream{shape: respTextShape, model: codexModel, reasoning: mockllm.ReasoningSummary, text: mockllm.TextAnswer,
		status: "completed", output: "reasoning,message", usage: normalUsage}
	big := normal
	big.usage = bigUsage
	tool := respStream{shape: respToolShape, model: codexModel, reasoning: mockllm.ReasoningSummary, callID: mockllm.ToolCallID,
		name: "exec_command", status: "completed", output: "reasoning,function_call", usage: normalUsage}
	loop := tool
	loop.callID = mockllm.LoopCallID(1)
	tests := []struct {
		scenario mockllm.Scenario
		status   int        // 0: no response until Close; -1: the connection closed at once without one
		want     respStream // of a 200 stream
		code     string     // of an error body, as JSON
		raw      string     // the whole error body, when it is not an OpenAI error with a type
		after    string     // retry-after
		afterMS  string     // retry-after-ms
		args     string     // after the marker in the prompt
	}{
		{scenario: mockllm.Text, status: 200, want: normal},
		{scenario: mockllm.BigUsage, status: 200, want: big},
		{scenario: mockllm.Tool, status: 200, want: tool},
		{scenario: mockllm.ToolLoop, status: 200, want: loop},
		{scenario: mockllm.ToolForever, status: 200, want: loop},
		{scenario: mockllm.Unauthorized, status: 401, code: `"invalid_api_key"`},
		{scenario: mockllm.RateLimited, status: 429, code: `"rate_limit_exceeded"`, after: "1", afterMS: "1000"},
		{scenario: mockllm.ServerError, status: 500, code: `null`},
		{scenario: mockllm.Overloaded, status: 503, code: `"server_is_overloaded"`},
		{scenario: mockllm.Overflow, status: 200, want: respStream{shape: respOverflowShape, model: codexModel, status: "failed",
			errCode: "context_length_exceeded", errMsg: mockllm.ResponsesOverflowMessage}},
		{scenario: mockllm.Hang, status: 0},
		{scenario: mockllm.Stall, status: 200, want: respStream{shape: respStallShape, model: codexModel, reasoning: mockllm.ReasoningSummary,
			text: stallText, status: "in_progress"}},
		{scenario: mockllm.Call, status: 200, args: ` exec_command {"cmd":"ls -l"}`, want: respStream{shape: respToolShape, model: codexModel,
			reasoning: mockllm.ReasoningSummary, callID: mockllm.ToolCallID, name: "exec_command", args: `{"cmd":"ls -l"}`,
			status: "completed", output: "reasoning,function_call", usage: normalUsage}},
		{scenario: mockllm.ListTools, status: 200, want: respStream{shape: respTextShape, model: codexModel, reasoning: mockllm.ReasoningSummary,
			text: "TOOLS: [exec_command]", status: "completed", output: "reasoning,message", usage: normalUsage}},
		{scenario: mockllm.Answer, status: 200, args: ` {"score":3}`, want: respStream{shape: respTextShape, model: codexModel, reasoning: mockllm.ReasoningSummary,
			text: `{"score":3}`, status: "completed", output: "reasoning,message", usage: normalUsage}},
		{scenario: mockllm.Quota, status: 429, code: `"insufficient_quota"`},
		{scenario: mockllm.PaymentRequired, status: 402, raw: `{"error":{"code":402,"message":"` + mockllm.PaymentRequiredMessage + `"}}`},
		{scenario: mockllm.NoModel, status: 404, code: `"model_not_found"`},
		{scenario: mockllm.ResetTime, status: 429, code: `"rate_limit_exceeded"`, after: "20", afterMS: "20000"},
		{scenario: mockllm.UsageLimit, status: 429, raw: `usage_limit_reached`},
		{scenario: mockllm.Drop, status: -1},
		{scenario: mockllm.Reset, status: -1},
		{scenario: mockllm.Cut, status: 200, want: respStream{shape: respStallShape, model: codexModel, reasoning: mockllm.ReasoningSummary,
			text: stallText, status: "in_progress"}},
		{scenario: mockllm.StreamModel, status: 200, want: respStream{shape: respOverflowShape, model: codexModel, status: "failed",
			errCode: "invalid_request_error", errMsg: `{"type":"error","status":400,"error":{"type":"invalid_request_error","code":null,` +
				`"message":"The 'gpt-5.5' model requires a newer version of Codex. Please upgrade to the latest app or CLI and try again.","param":"model"}}`}},
		{scenario: mockllm.StreamError, status: 200, want: respStream{shape: respOverflowShape, model: codexModel, status: "failed",
			errCode: "server_error", errMsg: `{"message":"The server had an error while processing your request (mid-stream).","type":"server_error","code":"internal_error"}`}},
	}
	var covered []mockllm.Scenario
	for _, tt := range tests {
		covered = append(covered, tt.scenario)
		t.Run(string(tt.scenario), func(t *testing.T) {
			t.Parallel()
			s := shared
			if tt.scenario == mockllm.Hang || tt.scenario == mockllm.Stall {
				s = start(t) // closed by the test
			}
			body := responsesBody(t, "do it "+string(tt.scenario)+tt.args, true, codexTools, nil)
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"/v1/responses", bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			client := &http.Client{Timeout: prompt}

			if tt.status == 0 {
				blockedUntilClose(t, s, "POST("+string(tt.scenario)+")", func() ([]byte, error) {
					resp, err := client.Do(req)
					if err != nil {
						return nil, err
					}
					resp.Body.Close()
					return []byte(resp.Status), nil
				})
				if got := s.Requests(); len(got) != 1 || got[0].Scenario != tt.scenario {
					t.Errorf("Requests() = %+v, want one %s", got, tt.scenario)
				}
				return
			}

			begin := time.Now()
			resp, err := client.Do(req)
			if tt.status == -1 {
				if err == nil || isTimeout(err) || time.Since(begin) > prompt {
					t.Errorf("POST(%s) = %v after %v, want no response and an error that is not a timeout", tt.scenario, err, time.Since(begin))
				}
				if err == nil {
					resp.Body.Close()
				}
				return
			}
			if err != nil {
				t.Fatalf("POST(%s) error = %v", tt.scenario, err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("POST(%s) status = %d, want %d", tt.scenario, resp.StatusCode, tt.status)
			}
			if a, ms := resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"); a != tt.after || ms != tt.afterMS {
				t.Errorf("POST(%s) retry-after, retry-after-ms = %q, %q, want %q, %q", tt.scenario, a, ms, tt.after, tt.afterMS)
			}
			if tt.raw != "" {
				b, _ := io.ReadAll(resp.Body)
				if !strings.Contains(string(b), tt.raw) {
					t.Errorf("POST(%s) body = %s, want it to hold %s", tt.scenario, b, tt.raw)
				}
				return
			}
			if tt.code != "" {
				if code := readErrorBody(t, "POST("+string(tt.scenario)+")", resp); code != tt.code {
					t.Errorf("POST(%s) error code = %s, want %s", tt.scenario, code, tt.code)
				}
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Errorf("POST(%s) Content-Type = %q, want text/event-stream", tt.scenario, ct)
			}

			if tt.scenario == mockllm.Cut {
				// The events before the cut, then at once an error.
				rr := newRespReader(t, resp.Body)
				for range strings.Count(respStallShape, " ") + mockllm.StallDeltas {
					if _, err := rr.next(); err != nil {
						t.Fatalf("reading cut stream after %q: %v", rr.shape, err)
					}
				}
				if st, n := rr.result(); st != tt.want || n.pieces != mockllm.StallDeltas {
					t.Errorf("cut stream = %+v with %d deltas, want %+v with %d", st, n.pieces, tt.want, mockllm.StallDeltas)
				}
				if rest, err := io.ReadAll(rr.r); err == nil || isTimeout(err) || len(rest) != 0 {
					t.Errorf("cut stream after its deltas = %q, %v, want no data and an error that is not a timeout", rest, err)
				}
				return
			}
			if tt.scenario == mockllm.Stall {
				// Read the events before the stall; the rest must wait
				// for Close and then fail.
				rr := newRespReader(t, resp.Body)
				for range strings.Count(respStallShape, " ") + mockllm.StallDeltas {
					if _, err := rr.next(); err != nil {
						t.Fatalf("reading stalled stream after %q: %v", rr.shape, err)
					}
				}
				st, n := rr.result()
				if st != tt.want || n.pieces != mockllm.StallDeltas {
					t.Errorf("stalled stream = %+v with %d deltas, want %+v with %d", st, n.pieces, tt.want, mockllm.StallDeltas)
				}
				blockedUntilClose(t, s, "reading the stalled stream", func() ([]byte, error) { return io.ReadAll(rr.r) })
				return
			}

			st, n := readResponsesStream(t, resp.Body)
			want := tt.want
			if tt.scenario == mockllm.Tool || tt.scenario == mockllm.ToolLoop || tt.scenario == mockllm.ToolForever {
				checkExecArgs(t, st.args)
				want.args = st.args // checked above: its form is the server's
			}
			if st != want {
				t.Errorf("POST(%s) stream = %+v, want %+v", tt.scenario, st, want)
			}
			if tt.want.status == "completed" && n.pieces < 2 {
				t.Errorf("POST(%s) answer in %d deltas, want 2 or more", tt.scenario, n.pieces)
			}
		})
	}
	for _, sc := range mockllm.Scenarios() {
		if !slices.Contains(covered, sc) {
			t.Errorf("scenario %s is not covered", sc)
		}
	}
}

func TestResponsesNoStream(t *testing.T) {
	t.Parallel()
	s := start(t)
	toolAnswer := mockllm.ToolAnswerPrefix + mockllm.ToolOutput
	for _, tt := range []struct {
		name, prompt string
		toolOutput   any
		output       string // the types of the output items
		text         string
		tool         bool
		usage        [4]int
	}{
		{name: "text", prompt: "MOCK_TEXT", output: "reasoning,message", text: mockllm.TextAnswer, usage: normalUsage},
		{name: "big usage", prompt: "MOCK_BIGUSAGE", output: "reasoning,message", text: mockllm.TextAnswer, usage: bigUsage},
		{name: "tool call", prompt: "MOCK_TOOL", output: "reasoning,function_call", tool: true, usage: normalUsage},
		{name: "tool answer", prompt: "MOCK_TOOL", toolOutput: mockllm.ToolOutput + "\n", output: "reasoning,message", text: toolAnswer, usage: normalUsage},
		{name: "tool answer in parts", prompt: "MOCK_TOOL", toolOutput: []any{map[string]any{"type": "input_text", "text": mockllm.ToolOutput + "\n"}},
			output: "reasoning,message", text: toolAnswer, usage: normalUsage},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			resp := post(t, bounded(t), s.URL()+"/v1/responses", responsesBody(t, tt.prompt, false, codexTools, tt.toolOutput))
			var r respResponse
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("POST(%s) = %d, %v, want 200 and JSON", tt.name, resp.StatusCode, err)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("POST(%s) Content-Type = %q, want application/json", tt.name, ct)
			}
			if r.Object != "response" || r.Status != "completed" || !strings.HasPrefix(r.ID, "resp_") || r.Model != codexModel || r.Error != nil {
				t.Errorf("POST(%s) = %+v, want a completed response of %s without error", tt.name, r, codexModel)
			}
			var types []string
			for _, it := range r.Output {
				types = append(types, it.Type)
			}
			if got := strings.Join(types, ","); got != tt.output {
				t.Fatalf("POST(%s) output = %s, want %s", tt.name, itemsString(t, r.Output), tt.output)
			}
			if got := partsText(t, "reasoning summary", r.Output[0].Summary, "summary_text"); got != mockllm.ReasoningSummary {
				t.Errorf("POST(%s) reasoning summary = %q, want %q", tt.name, got, mockllm.ReasoningSummary)
			}
			it := r.Output[1]
			if tt.tool {
				if it.Status != "completed" || it.CallID != mockllm.ToolCallID || it.Name != "exec_command" || it.Arguments == nil {
					t.Fatalf("POST(%s) function_call = %+v, want a completed call %s of exec_command", tt.name, it, mockllm.ToolCallID)
				}
				checkExecArgs(t, *it.Arguments)
			} else {
				text := partsText(t, "message content", it.Content, "output_text")
				if it.Status != "completed" || it.Role != "assistant" || text != tt.text {
					t.Errorf("POST(%s) message = %+v (text %q), want a completed assistant message %q", tt.name, it, text, tt.text)
				}
			}
			if r.Usage == nil || r.Usage.array() != tt.usage {
				t.Errorf("POST(%s) usage = %+v, want %v", tt.name, r.Usage, tt.usage)
			}
		})
	}
}

func TestResponsesToolRoundTrip(t *testing.T) {
	t.Parallel()
	answer := mockllm.ToolAnswerPrefix + mockllm.ToolOutput
	normal := respStream{shape: respTextShape, model: codexModel, reasoning: mockllm.ReasoningSummary,
		status: "completed", output: "reasoning,message", usage: normalUsage}
	for _, tt := range []struct {
		name       string
		tools      []string
		toolOutput any    // the second request's function_call_output
		first      string // the first answer's text; empty: a call of exec_command
	}{
		{name: "string output", tools: codexTools, toolOutput: mockllm.ToolOutput + "\n"},
		{name: "parts output", tools: codexTools, toolOutput: []any{map[string]any{"type": "input_text", "text": mockllm.ToolOutput + "\n"}}},
		{name: "only web search", tools: []string{codexWebSearch}, first: mockllm.TextAnswer},
		{name: "no tools", first: mockllm.TextAnswer},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := start(t) // its own, for Requests()
			url := s.URL() + "/v1/responses"
			st, n := readResponsesStream(t, post(t, bounded(t), url, responsesBody(t, "run it MOCK_TOOL", true, tt.tools, nil)).Body)
			if tt.first != "" {
				want := normal
				want.text = tt.first
				if st != want {
					t.Errorf("first call = %+v, want %+v", st, want)
				}
				return
			}
			checkExecArgs(t, st.args)
			want := respStream{shape: respToolShape, model: codexModel, reasoning: mockllm.ReasoningSummary, callID: mockllm.ToolCallID,
				name: "exec_command", args: st.args, status: "completed", output: "reasoning,function_call", usage: normalUsage}
			if st != want {
				t.Errorf("first call = %+v, want %+v", st, want)
			}
			if n.pieces < 2 {
				t.Errorf("first call arguments in %d deltas, want 2 or more", n.pieces)
			}

			st, _ = readResponsesStream(t, post(t, bounded(t), url, responsesBody(t, "run it MOCK_TOOL", true, tt.tools, tt.toolOutput)).Body)
			want = normal
			want.text = answer
			if st != want {
				t.Errorf("second call = %+v, want %+v", st, want)
			}
			got := s.Requests()
			if len(got) != 2 || got[0].ToolResult || !got[1].ToolResult || got[1].Scenario != mockllm.Tool {
				t.Errorf("Requests() = %+v, want a call without and a %s call with a tool result", got, mockllm.Tool)
			}
		})
	}
}

func TestResponsesErrors(t *testing.T) {
	t.Parallel()
	plain := start(t)
	fast, err := mockllm.StartWith(mockllm.Options{RetryAfter: 1500 * time.Millisecond})
	if err != nil {
		t.Fatalf("StartWith() error = %v", err)
	}
	t.Cleanup(fast.Close)
	for _, tt := range []struct {
		scenario          mockllm.Scenario
		status            int
		code              string // as JSON
		after, ms         string // retry-after, retry-after-ms without Options.RetryAfter
		fastAfter, fastMS string // with Options.RetryAfter 1.5 s
	}{
		{mockllm.Unauthorized, 401, `"invalid_api_key"`, "", "", "", ""},
		{mockllm.RateLimited, 429, `"rate_limit_exceeded"`, "1", "1000", "2", "1500"},
		{mockllm.ServerError, 500, `null`, "", "", "2", "1500"},
		{mockllm.Overloaded, 503, `"server_is_overloaded"`, "", "", "2", "1500"},
	} {
		for _, streaming := range []bool{true, false} {
			for _, s := range []*mockllm.Server{plain, fast} {
				after, ms := tt.after, tt.ms
				if s == fast {
					after, ms = tt.fastAfter, tt.fastMS
				}
				t.Run(fmt.Sprintf("%s/stream=%v/retry-after=%q", tt.scenario, streaming, ms), func(t *testing.T) {
					t.Parallel()
					resp := post(t, bounded(t), s.URL()+"/v1/responses", responsesBody(t, "hi "+string(tt.scenario), streaming, codexTools, nil))
					what := fmt.Sprintf("POST(%s, stream %v)", tt.scenario, streaming)
					if resp.StatusCode != tt.status {
						t.Fatalf("%s status = %d, want %d", what, resp.StatusCode, tt.status)
					}
					if code := readErrorBody(t, what, resp); code != tt.code {
						t.Errorf("%s error code = %s, want %s", what, code, tt.code)
					}
					if a, m := resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"); a != after || m != ms {
						t.Errorf("%s retry-after, retry-after-ms = %q, %q, want %q, %q", what, a, m, after, ms)
					}
				})
			}
		}
	}
}

// TestResponsesOverflow: streaming, an overflow is a response.failed event
// in a 200 stream, as the Responses API reports it; otherwise HTTP 400.
// Neither is retryable, so neither carries retry-after.
func TestResponsesOverflow(t *testing.T) {
	t.Parallel()
	plain := start(t)
	fast, err := mockllm.StartWith(mockllm.Options{RetryAfter: 1500 * time.Millisecond})
	if err != nil {
		t.Fatalf("StartWith() error = %v", err)
	}
	t.Cleanup(fast.Close)
	for _, streaming := range []bool{true, false} {
		for name, s := range map[string]*mockllm.Server{"plain": plain, "retry-after": fast} {
			t.Run(fmt.Sprintf("stream=%v/%s", streaming, name), func(t *testing.T) {
				t.Parallel()
				resp := post(t, bounded(t), s.URL()+"/v1/responses", responsesBody(t, "MOCK_OVERFLOW", streaming, codexTools, nil))
				if a, m := resp.Header.Get("Retry-After"), resp.Header.Get("Retry-After-Ms"); a != "" || m != "" {
					t.Errorf("POST(stream %v) retry-after, retry-after-ms = %q, %q, want none", streaming, a, m)
				}
				if !streaming {
					if resp.StatusCode != http.StatusBadRequest {
						t.Fatalf("POST(stream false) status = %d, want 400", resp.StatusCode)
					}
					if code := readErrorBody(t, "POST(stream false)", resp); code != `"context_length_exceeded"` {
						t.Errorf("POST(stream false) error code = %s, want \"context_length_exceeded\"", code)
					}
					return
				}
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("POST(stream true) status = %d, want 200", resp.StatusCode)
				}
				st, _ := readResponsesStream(t, resp.Body)
				want := respStream{shape: respOverflowShape, model: codexModel, status: "failed",
					errCode: "context_length_exceeded", errMsg: mockllm.ResponsesOverflowMessage}
				if st != want {
					t.Errorf("POST(stream true) stream = %+v, want %+v", st, want)
				}
			})
		}
	}
}

// TestResponsesStallNoStream: with stream false a stall is headers, then
// nothing until the server closes.
func TestResponsesStallNoStream(t *testing.T) {
	t.Parallel()
	s := start(t)
	client := &http.Client{Timeout: prompt}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.URL()+"/v1/responses",
		bytes.NewReader(responsesBody(t, "MOCK_STALL", false, codexTools, nil)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("POST(MOCK_STALL, stream false) error = %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST(MOCK_STALL, stream false) status = %d, want 200", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("POST(MOCK_STALL, stream false) Content-Type = %q, want application/json", ct)
	}
	blockedUntilClose(t, s, "reading the stalled body", func() ([]byte, error) { return io.ReadAll(resp.Body) })
}

func TestResponsesRequests(t *testing.T) {
	t.Parallel()
	s := start(t)
	url := s.URL() + "/v1/responses"
	readResponsesStream(t, post(t, bounded(t), url, responsesBody(t, "MOCK_TOOL", true, codexTools, nil)).Body)
	io.Copy(io.Discard, post(t, bounded(t), s.URL()+"/responses", responsesBody(t, "MOCK_TOOL", false, codexTools, mockllm.ToolOutput)).Body)
	io.Copy(io.Discard, post(t, bounded(t), url, []byte(`{"model":"gpt-5.5","input":"hi MOCK_401","stream":true}`)).Body)
	io.Copy(io.Discard, post(t, bounded(t), url, []byte(`not json`)).Body)
	req, err := http.NewRequestWithContext(bounded(t), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s error = %v", url, err)
	}
	resp.Body.Close()

	got := s.Requests()
	exec := []string{"exec_command"} // web_search has no name
	want := []mockllm.Request{
		{Method: "POST", Path: "/v1/responses", Scenario: mockllm.Tool, Model: codexModel, Stream: true, Tools: exec, UserText: codexEnvironment},
		{Method: "POST", Path: "/responses", Scenario: mockllm.Tool, Model: codexModel, Stream: false, Tools: exec, ToolResult: true, UserText: codexEnvironment},
		{Method: "POST", Path: "/v1/responses", Scenario: mockllm.Unauthorized, Model: codexModel, Stream: true, UserText: "hi MOCK_401"},
		{Method: "POST", Path: "/v1/responses"},
		{Method: "GET", Path: "/v1/responses"},
	}
	if len(got) != len(want) {
		t.Fatalf("Requests() = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Method != w.Method || g.Path != w.Path || g.Scenario != w.Scenario || g.Model != w.Model || g.UserText != w.UserText ||
			g.Stream != w.Stream || g.ToolResult != w.ToolResult || !slices.Equal(g.Tools, w.Tools) {
			t.Errorf("Requests()[%d] = %+v, want %+v", i, g, w)
		}
	}
}

func TestResponsesScenarioChoice(t *testing.T) {
	t.Parallel()
	// msg is a message item whose content is input_text parts.
	msg := func(role string, texts ...string) string {
		var parts []string
		for _, text := range texts {
			parts = append(parts, `{"type":"input_text","text":`+strconv.Quote(text)+`}`)
		}
		return `{"type":"message","role":"` + role + `","content":[` + strings.Join(parts, ",") + `]}`
	}
	input := func(items ...string) string { return `"input":[` + strings.Join(items, ",") + `]` }
	for _, tt := range []struct {
		name       string
		body       string
		want       mockllm.Scenario
		toolResult bool
	}{
		{"plain string input", `{"input":"x MOCK_500"}`, mockllm.ServerError, false},
		{"parts", `{` + input(`{"type":"message","role":"user","content":[{"type":"input_text","text":"look "},`+
			`{"type":"input_image","image_url":"data:image/png;base64,AA=="},{"type":"input_text","text":"MOCK_503"}]}`) + `}`, mockllm.Overloaded, false},
		{"string content", `{` + input(`{"type":"message","role":"user","content":"MOCK_429"}`) + `}`, mockllm.RateLimited, false},
		{"item without type", `{` + input(`{"role":"user","content":"MOCK_429"}`) + `}`, mockllm.RateLimited, false},
		{"latest user wins", `{` + input(msg("user", "MOCK_401"), msg("user", "MOCK_TEXT")) + `}`, mockllm.Text, false},
		{"latest user wins over 401", `{` + input(msg("user", "MOCK_401"), msg("assistant", "MOCK_500"), msg("user", "MOCK_BIGUSAGE")) + `}`, mockllm.BigUsage, false},
		{"earlier user when latest has none", `{` + input(msg("user", "MOCK_429"), msg("user", "go on")) + `}`, mockllm.RateLimited, false},
		{"assistant skipped", `{` + input(msg("user", "hi"), msg("assistant", "MOCK_500")) + `}`, mockllm.Text, false},
		{"instructions", `{"instructions":"MOCK_OVERFLOW",` + input(msg("developer", "d"), msg("user", "hi")) + `}`, mockllm.Overflow, false},
		{"developer message", `{"instructions":"i",` + input(msg("developer", "MOCK_503"), msg("user", "hi")) + `}`, mockllm.Overloaded, false},
		{"user over instructions", `{"instructions":"MOCK_OVERFLOW",` + input(msg("user", "MOCK_BIGUSAGE")) + `}`, mockllm.BigUsage, false},
		{"instructions with string input", `{"instructions":"MOCK_401","input":"hi"}`, mockllm.Unauthorized, false},
		{"tool output skipped", `{` + input(msg("user", "MOCK_TOOL"),
			`{"type":"function_call","name":"exec_command","arguments":"{}","call_id":"c"}`,
			`{"type":"function_call_output","call_id":"c","output":"MOCK_401"}`) + `}`, mockllm.Tool, true},
		{"custom tool output", `{` + input(msg("user", "MOCK_TOOL"), `{"type":"custom_tool_call_output","call_id":"c","output":"ok"}`) + `}`, mockllm.Tool, true},
		{"default", `{` + input(msg("user", "hello")) + `}`, mockllm.Text, false},
		{"no input", `{}`, mockllm.Text, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := start(t) // its own, for Requests()
			ctx, cancel := context.WithTimeout(t.Context(), prompt)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/responses", strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("POST(%s) error = %v", tt.body, err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if got := s.Requests(); len(got) != 1 || got[0].Scenario != tt.want || got[0].ToolResult != tt.toolResult {
				t.Errorf("POST(%s) Requests() = %+v, want one with scenario %s, tool result %v", tt.body, got, tt.want, tt.toolResult)
			}
		})
	}
}

func TestResponsesRoutes(t *testing.T) {
	t.Parallel()
	s := start(t)
	for _, tt := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/v1/responses", `{}`, 200},
		{"POST", "/responses", `{}`, 200},
		{"POST", "/v1/responses", `{"input":[{"type":"message","role":"user","content":42}]}`, 200},
		{"POST", "/v1/responses", `{"input":[{"type":"reasoning","summary":[]},{"type":"function_call_output","output":{"x":1}}]}`, 200},
		{"GET", "/v1/responses", ``, 405},
		{"GET", "/responses", ``, 405},
		{"POST", "/v1/responses", `not json`, 400},
		{"POST", "/v1/responses", ``, 400},
		{"POST", "/v1/responses", `[]`, 400},
		{"POST", "/v1/responses", `{"input":42}`, 400},
		{"POST", "/v1/responses", `{"input":{"role":"user","content":"hi"}}`, 400},
		{"POST", "/v1/responses", `{"input":["hi"]}`, 400},
		{"POST", "/v1/responses", `{"tools":{}}`, 400},
		{"POST", "/v1/responses", `{"model":7}`, 400},
	} {
		t.Run(tt.method+tt.path+tt.body, func(t *testing.T) {
			t.Parallel()
			req, err := http.NewRequestWithContext(bounded(t), tt.method, s.URL()+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s error = %v", tt.method, tt.path, err)
			}
			defer resp.Body.Close()
			what := fmt.Sprintf("%s %s %q", tt.method, tt.path, tt.body)
			if resp.StatusCode != tt.status {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("%s = %d %s, want %d", what, resp.StatusCode, b, tt.status)
			}
			if tt.status != http.StatusOK {
				readErrorBody(t, what, resp)
				return
			}
			var r respResponse
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Object != "response" || r.Status != "completed" {
				t.Errorf("%s = %+v, %v, want a completed response", what, r, err)
			}
		})
	}
}

func TestResponsesChunkDelay(t *testing.T) {
	t.Parallel()
	const delay = 20 * time.Millisecond
	s, err := mockllm.StartWith(mockllm.Options{ChunkDelay: delay})
	if err != nil {
		t.Fatalf("StartWith() error = %v", err)
	}
	t.Cleanup(s.Close)
	begin := time.Now()
	st, n := readResponsesStream(t, post(t, bounded(t), s.URL()+"/v1/responses", responsesBody(t, "MOCK_TEXT", true, codexTools, nil)).Body)
	// Every event after the first waits delay.
	if d, least := time.Since(begin), time.Duration(n.events-1)*delay; st.text != mockllm.TextAnswer || d < least {
		t.Errorf("stream with ChunkDelay %v = %q in %d events after %v, want %q after at least %v", delay, st.text, n.events, d, mockllm.TextAnswer, least)
	}
}
