package mockllm_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/mockllm"
)

// callTool is one tool a request offers, for the Call and ListTools tests:
// a function tool with an object schema, or (Responses only) a custom tool.
type callTool struct {
	name   string
	custom bool
}

// callAnswer is what one model call answered, in any wire API: a call
// (kind "function" or "custom") of name with args (a custom tool's input),
// or text (kind "").
type callAnswer struct {
	kind, name, args, text string
}

// callConv is a conversation: user messages in order, and, if result is not
// empty, the call the model made and result as its output, after them.
type callConv struct {
	user   []string
	tools  []callTool
	result string
	// said are assistant answers after the user messages, each followed by
	// a user message "again" (a resumed session), for the Answer tests.
	said []string
}

// callAPI is how one wire API carries a callConv and its answer.
type callAPI struct {
	path   string
	custom bool // whether the API has custom tools
	body   func(c callConv, stream bool) map[string]any
	// read returns the answer of a stream, or of a JSON body.
	read func(t *testing.T, stream bool, body io.Reader) callAnswer
}

var callAPIs = map[string]callAPI{
	"chat":      {path: "/v1/chat/completions", body: chatCallBody, read: readChatAnswer},
	"messages":  {path: "/v1/messages", body: messagesCallBody, read: readMessagesAnswer},
	"responses": {path: "/v1/responses", custom: true, body: responsesCallBody, read: readResponsesAnswer},
}

var objectSchema = map[string]any{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}}

func chatCallBody(c callConv, stream bool) map[string]any {
	msgs := []any{map[string]any{"role": "system", "content": "You are a test."}}
	for _, u := range c.user {
		msgs = append(msgs, map[string]any{"role": "user", "content": u})
	}
	for _, a := range c.said {
		msgs = append(msgs, map[string]any{"role": "assistant", "content": a}, map[string]any{"role": "user", "content": "again"})
	}
	if c.result != "" {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": mockllm.ToolCallID, "type": "function",
				"function": map[string]any{"name": c.tools[0].name, "arguments": "{}"}}}},
			map[string]any{"role": "tool", "tool_call_id": mockllm.ToolCallID, "content": c.result})
	}
	var tools []any
	for _, t := range c.tools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": t.name, "parameters": objectSchema}})
	}
	return map[string]any{"model": "m", "stream": stream, "messages": msgs, "tools": tools}
}

func messagesCallBody(c callConv, stream bool) map[string]any {
	var msgs []any
	for _, u := range c.user {
		msgs = append(msgs, map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "<system-reminder>context</system-reminder>"},
			map[string]any{"type": "text", "text": u},
		}})
	}
	for _, a := range c.said {
		msgs = append(msgs, map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": a}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "again"}}})
	}
	if c.result != "" {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{
				map[string]any{"type": "tool_use", "id": mockllm.ToolCallID, "name": c.tools[0].name, "input": map[string]any{}}}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": mockllm.ToolCallID, "content": c.result}}})
	}
	var tools []any
	for _, t := range c.tools {
		tools = append(tools, map[string]any{"name": t.name, "input_schema": objectSchema})
	}
	return map[string]any{"model": "m", "max_tokens": 100, "stream": stream, "messages": msgs, "tools": tools}
}

func responsesCallBody(c callConv, stream bool) map[string]any {
	input := []any{inputMessage("developer", codexDeveloper)}
	for _, u := range c.user {
		input = append(input, inputMessage("user", u))
	}
	for _, a := range c.said {
		input = append(input, inputMessage("assistant", a), inputMessage("user", "again"))
	}
	if c.result != "" {
		call := map[string]any{"type": "function_call", "call_id": mockllm.ToolCallID, "name": c.tools[0].name, "arguments": "{}"}
		output := map[string]any{"type": "function_call_output", "call_id": mockllm.ToolCallID, "output": c.result}
		if c.tools[0].custom {
			call = map[string]any{"type": "custom_tool_call", "call_id": mockllm.ToolCallID, "name": c.tools[0].name, "input": "x"}
			output["type"] = "custom_tool_call_output"
		}
		input = append(input, call, output)
	}
	tools := []any{map[string]any{"type": "web_search"}} // built in, no name: never listed
	for _, t := range c.tools {
		if t.custom {
			tools = append(tools, map[string]any{"type": "custom", "name": t.name, "description": "a freeform tool",
				"format": map[string]any{"type": "grammar", "syntax": "lark", "definition": "start: /.+/"}})
		} else {
			tools = append(tools, map[string]any{"type": "function", "name": t.name, "parameters": objectSchema})
		}
	}
	return map[string]any{"model": codexModel, "instructions": codexInstructions, "stream": stream, "input": input, "tools": tools}
}

func readChatAnswer(t *testing.T, stream bool, body io.Reader) callAnswer {
	t.Helper()
	if stream {
		st := readStream(t, body)
		if st.toolName != "" {
			if st.toolID != mockllm.ToolCallID || st.finish != "tool_calls" || st.argPieces < 2 {
				t.Errorf("tool call stream = %+v, want id %s, finish tool_calls, arguments in 2 pieces or more", st, mockllm.ToolCallID)
			}
			return callAnswer{kind: "function", name: st.toolName, args: st.args, text: st.text}
		}
		return callAnswer{text: st.text}
	}
	b := readAll(t, body)
	if tc := gjson.GetBytes(b, "choices.0.message.tool_calls.0"); tc.Exists() {
		return callAnswer{kind: "function", name: tc.Get("function.name").String(), args: tc.Get("function.arguments").String()}
	}
	return callAnswer{text: gjson.GetBytes(b, "choices.0.message.content").String()}
}

func readMessagesAnswer(t *testing.T, stream bool, body io.Reader) callAnswer {
	t.Helper()
	if stream {
		st := readMessagesStream(t, body)
		if st.toolName != "" {
			if st.toolID != mockllm.ToolCallID || st.stop != "tool_use" || st.pieces < 2 {
				t.Errorf("tool_use stream = %+v, want id %s, stop tool_use, input in 2 pieces or more", st, mockllm.ToolCallID)
			}
			return callAnswer{kind: "function", name: st.toolName, args: st.args, text: st.text}
		}
		return callAnswer{text: st.text}
	}
	b := readAll(t, body)
	if tu := gjson.GetBytes(b, `content.#(type=="tool_use")`); tu.Exists() {
		return callAnswer{kind: "function", name: tu.Get("name").String(), args: tu.Get("input").Raw}
	}
	return callAnswer{text: gjson.GetBytes(b, `content.#(type=="text").text`).String()}
}

func readResponsesAnswer(t *testing.T, stream bool, body io.Reader) callAnswer {
	t.Helper()
	if stream {
		st, n := readResponsesStream(t, body)
		if st.output == "reasoning,message" {
			return callAnswer{text: st.text}
		}
		kind, ok := map[string]string{"reasoning,function_call": "function", "reasoning,custom_tool_call": "custom"}[st.output]
		if !ok || st.callID != mockllm.ToolCallID || n.pieces < 2 {
			t.Errorf("stream = %+v, want a message, or a call with call_id %s and input in 2 pieces or more", st, mockllm.ToolCallID)
		}
		return callAnswer{kind: kind, name: st.name, args: st.args}
	}
	b := readAll(t, body)
	item := gjson.GetBytes(b, "output.1")
	switch item.Get("type").String() {
	case "function_call":
		return callAnswer{kind: "function", name: item.Get("name").String(), args: item.Get("arguments").String()}
	case "custom_tool_call":
		if item.Get("arguments").Exists() || item.Get("call_id").String() != mockllm.ToolCallID {
			t.Errorf("custom_tool_call = %s, want call_id %s and no arguments", item.Raw, mockllm.ToolCallID)
		}
		return callAnswer{kind: "custom", name: item.Get("name").String(), args: item.Get("input").String()}
	}
	return callAnswer{text: item.Get("content.0.text").String()}
}

func readAll(t *testing.T, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return b
}

// TestCall: in each wire API, streamed or not, MOCK_CALL calls the tool it
// names with exactly the arguments it gives, answers the tool's result once
// the conversation holds one, and says what is wrong when it cannot call;
// MOCK_LISTTOOLS lists the tools offered.
func TestCall(t *testing.T) {
	t.Parallel()
	s := start(t)
	fns := []callTool{{name: "bash"}, {name: "Write"}, {name: "read"}}
	patch := `*** Begin Patch\n*** Add File: wi.txt\n+x\n*** End Patch`
	long := strings.Repeat("y", 500)
	tests := []struct {
		name    string
		apis    string // the APIs that run it, "" for all
		conv    callConv
		want    callAnswer
		jsonArg bool // compare args as JSON (the Messages API sends input as an object, re-encoded)
	}{
		{name: "function call", conv: callConv{user: []string{`Write it. MOCK_CALL write {"file_path":"/w/a.txt","content":"x y"}`}, tools: fns},
			want: callAnswer{kind: "function", name: "Write", args: `{"file_path":"/w/a.txt","content":"x y"}`}},
		{name: "arguments end at the line's end", conv: callConv{user: []string{"MOCK_CALL bash {\"command\":\"echo > f\"}  \r\nnext line {x}"}, tools: fns},
			want: callAnswer{kind: "function", name: "bash", args: `{"command":"echo > f"}`}, jsonArg: true},
		{name: "no arguments", conv: callConv{user: []string{"MOCK_CALL read"}, tools: fns},
			want: callAnswer{kind: "function", name: "read", args: `{}`}},
		{name: "quoted, no arguments", conv: callConv{user: []string{`"MOCK_CALL read"`}, tools: fns},
			want: callAnswer{kind: "function", name: "read", args: `{}`}},
		{name: "escaped JSON", conv: callConv{user: []string{`"Write it. MOCK_CALL write {\"file_path\":\"/w/a.txt\",\"content\":\"x\"}"`}, tools: fns},
			want: callAnswer{kind: "function", name: "Write", args: `{"file_path":"/w/a.txt","content":"x"}`}},
		{name: "escaped JSON, no closing quote", conv: callConv{user: []string{`MOCK_CALL write {\"content\":\"a\\nb\"}`}, tools: fns},
			want: callAnswer{kind: "function", name: "Write", args: `{"content":"a\nb"}`}},
		{name: "valid JSON and a closing quote", conv: callConv{user: []string{`"MOCK_CALL write {"content":"x"}"`}, tools: fns},
			want: callAnswer{kind: "function", name: "Write", args: `{"content":"x"}`}},
		{name: "marker in an earlier user message", conv: callConv{user: []string{"<env>context</env>", "MOCK_CALL bash {\"command\":\"ls\"}", "go on"}, tools: fns},
			want: callAnswer{kind: "function", name: "bash", args: `{"command":"ls"}`}},
		{name: "not a JSON object", conv: callConv{user: []string{"MOCK_CALL bash [1,2]"}, tools: fns},
			want: callAnswer{text: mockllm.BadArgumentsPrefix + "bash: [1,2]"}},
		{name: "broken JSON", conv: callConv{user: []string{`MOCK_CALL bash {"command":`}, tools: fns},
			want: callAnswer{text: mockllm.BadArgumentsPrefix + `bash: {"command":`}},
		{name: "result", conv: callConv{user: []string{`MOCK_CALL write {"content":"x"}`}, tools: fns, result: "  File written.\n"},
			want: callAnswer{text: mockllm.ToolAnswerPrefix + "File written."}},
		{name: "long result", conv: callConv{user: []string{`MOCK_CALL write {"content":"x"}`}, tools: fns, result: long},
			want: callAnswer{text: mockllm.ToolAnswerPrefix + long[:400]}},
		{name: "not offered", conv: callConv{user: []string{`MOCK_CALL apply_patch x`}, tools: fns},
			want: callAnswer{text: "NOT_OFFERED apply_patch offered: [bash,Write,read]"}},
		{name: "no tools", conv: callConv{user: []string{`MOCK_CALL write {}`}},
			want: callAnswer{text: "NO_TOOLS_OFFERED"}},
		{name: "list tools", conv: callConv{user: []string{"x MOCK_LISTTOOLS"}, tools: fns},
			want: callAnswer{text: "TOOLS: [bash,Write,read]"}},
		{name: "list no tools", conv: callConv{user: []string{"MOCK_LISTTOOLS"}},
			want: callAnswer{text: "TOOLS: []"}},
		{name: "custom tool", apis: "responses", conv: callConv{user: []string{"Patch it. MOCK_CALL APPLY_PATCH " + patch}, tools: append(fns, callTool{"apply_patch", true})},
			want: callAnswer{kind: "custom", name: "apply_patch", args: "*** Begin Patch\n*** Add File: wi.txt\n+x\n*** End Patch"}},
		{name: "custom tool, raw text", apis: "responses", conv: callConv{user: []string{"MOCK_CALL apply_patch not {json"}, tools: []callTool{{"apply_patch", true}}},
			want: callAnswer{kind: "custom", name: "apply_patch", args: "not {json"}},
		{name: "custom tool result", apis: "responses", conv: callConv{user: []string{"MOCK_CALL apply_patch " + patch}, tools: []callTool{{"apply_patch", true}},
			result: "Success. Updated the following files:\nA wi.txt\n"}, want: callAnswer{text: "Tool said: Success. Updated the following files:\nA wi.txt"}},
		{name: "list custom tools", apis: "responses", conv: callConv{user: []string{"MOCK_LISTTOOLS"}, tools: []callTool{{"exec_command", false}, {"apply_patch", true}}},
			want: callAnswer{text: "TOOLS: [exec_command,apply_patch]"}},
	}
	for _, tt := range tests {
		for name, api := range callAPIs {
			if tt.apis != "" && !strings.Contains(tt.apis, name) {
				continue
			}
			for _, stream := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", tt.name, name, stream), func(t *testing.T) {
					t.Parallel()
					body, err := json.Marshal(api.body(tt.conv, stream))
					if err != nil {
						t.Fatal(err)
					}
					resp := post(t, bounded(t), s.URL()+api.path, body)
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("POST %s = %d %s, want 200", api.path, resp.StatusCode, readAll(t, resp.Body))
					}
					got := api.read(t, stream, resp.Body)
					want := tt.want
					if tt.jsonArg || name == "messages" && !stream && got.args != "" {
						if sameJSON(got.args, want.args) {
							want.args = got.args
						}
					}
					if got != want {
						t.Errorf("POST %s %q = %+v, want %+v", api.path, tt.conv.user, got, want)
					}
				})
			}
		}
	}
}

// sameJSON reports whether a and b are JSON documents of equal value.
func sameJSON(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

// TestCallRequests: the server records a Call's tools in the request's
// order, custom ones included.
func TestCallRequests(t *testing.T) {
	t.Parallel()
	s := start(t)
	conv := callConv{user: []string{"MOCK_LISTTOOLS"}, tools: []callTool{{"exec_command", false}, {"apply_patch", true}}}
	body, err := json.Marshal(responsesCallBody(conv, false))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, post(t, bounded(t), s.URL()+"/v1/responses", body).Body)
	if got := s.Requests(); len(got) != 1 || got[0].Scenario != mockllm.ListTools || strings.Join(got[0].Tools, ",") != "exec_command,apply_patch" {
		t.Errorf("Requests() = %+v, want one ListTools call offering exec_command,apply_patch", got)
	}
}

func TestCallAnswers(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ got, want string }{
		{mockllm.ToolsAnswer(nil), "TOOLS: []"},
		{mockllm.ToolsAnswer([]string{"bash", "Read"}), "TOOLS: [bash,Read]"},
		{mockllm.NotOfferedAnswer("write", []string{"bash", "Read"}), "NOT_OFFERED write offered: [bash,Read]"},
	} {
		if tt.got != tt.want {
			t.Errorf("answer = %q, want %q", tt.got, tt.want)
		}
	}
}

// TestAnswer: in each wire API, streamed or not, MOCK_ANSWER answers the
// text of its turn: the first answer to a new conversation, the next for
// each assistant message the conversation holds already, the last past the
// end; \n in it is a newline.
func TestAnswer(t *testing.T) {
	t.Parallel()
	s := start(t)
	fns := []callTool{{name: "bash"}}
	prompt := `Rate it. MOCK_ANSWER {"score":11}` + mockllm.Then + "```json\\n{\"score\":7}\\n```"
	tests := []struct {
		name string
		said []string
		want string
	}{
		{"first turn", nil, `{"score":11}`},
		{"second turn", []string{`{"score":11}`}, "```json\n{\"score\":7}\n```"},
		{"past the last", []string{"a", "b", "c"}, "```json\n{\"score\":7}\n```"},
	}
	for _, tt := range tests {
		for name, api := range callAPIs {
			for _, stream := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/stream=%v", tt.name, name, stream), func(t *testing.T) {
					t.Parallel()
					body, err := json.Marshal(api.body(callConv{user: []string{prompt}, tools: fns, said: tt.said}, stream))
					if err != nil {
						t.Fatal(err)
					}
					got := api.read(t, stream, post(t, bounded(t), s.URL()+api.path, body).Body)
					if got != (callAnswer{text: tt.want}) {
						t.Errorf("answer = %+v, want the text %q", got, tt.want)
					}
				})
			}
		}
	}
}

// TestAnswerTool: offered StructuredOutput (Claude Code's --json-schema
// tool), MOCK_ANSWER calls it with a JSON object answer, a new call id per
// turn; an answer that is not an object is text.
func TestAnswerTool(t *testing.T) {
	t.Parallel()
	s := start(t)
	tools := []callTool{{name: "Read"}, {name: mockllm.AnswerTool}}
	for _, tt := range []struct {
		name, prompt string
		said         []string
		id, input    string // the call's, or "" for text
		text         string
	}{
		{"object", `MOCK_ANSWER {"score":3}`, nil, mockllm.AnswerCallID(1), `{"score":3}`, ""},
		{"next turn", `MOCK_ANSWER {"score":11}` + mockllm.Then + `{"score":3}`, []string{"x"}, mockllm.AnswerCallID(2), `{"score":3}`, ""},
		{"not an object", `MOCK_ANSWER [1]`, nil, "", "", "[1]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			body, err := json.Marshal(messagesCallBody(callConv{user: []string{tt.prompt}, tools: tools, said: tt.said}, false))
			if err != nil {
				t.Fatal(err)
			}
			b := readAll(t, post(t, bounded(t), s.URL()+"/v1/messages", body).Body)
			tu := gjson.GetBytes(b, `content.#(type=="tool_use")`)
			text := gjson.GetBytes(b, `content.#(type=="text").text`).String()
			if tt.id == "" {
				if tu.Exists() || text != tt.text {
					t.Errorf("answer %s, want the text %q", b, tt.text)
				}
				return
			}
			if tu.Get("id").String() != tt.id || tu.Get("name").String() != mockllm.AnswerTool || !sameJSON(tu.Get("input").Raw, tt.input) {
				t.Errorf("answer %s, want a %s call %s of %s", b, mockllm.AnswerTool, tt.id, tt.input)
			}
		})
	}
}
