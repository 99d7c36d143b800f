package mockllm

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Scenario is what the server does with a model call. Its value is the marker
// word that selects it: put the word anywhere in the prompt.
type Scenario string

// The scenarios. A call with no marker is [Text].
const (
	// Text streams [TextAnswer] with [PromptTokens] … usage.
	Text Scenario = "MOCK_TEXT"
	// Tool calls one tool (a shell tool if the request offers one) and, once
	// the conversation carries the tool's result, answers
	// [ToolAnswerPrefix] + that result.
	Tool Scenario = "MOCK_TOOL"
	// Unauthorized fails with HTTP 401, invalid API key.
	//
	// The failures below are described for the OpenAI APIs; the Anthropic
	// Messages API answers each in its own error shape, and Overloaded
	// with [StatusOverloaded] (529).
	Unauthorized Scenario = "MOCK_401"
	// RateLimited fails with HTTP 429 and retry-after: 1 (retry-after-ms: 1000).
	RateLimited Scenario = "MOCK_429"
	// ServerError fails with HTTP 500.
	ServerError Scenario = "MOCK_500"
	// Overloaded fails with HTTP 503, "overloaded".
	Overloaded Scenario = "MOCK_503"
	// Overflow fails with HTTP 400, context length exceeded.
	Overflow Scenario = "MOCK_OVERFLOW"
	// Hang sends nothing, not even headers, until the client goes away or
	// the server closes; then it drops the connection.
	Hang Scenario = "MOCK_HANG"
	// Stall sends headers and the first [StallDeltas] text deltas (with
	// stream false: headers only), then nothing until the client goes away
	// or the server closes; then it drops the connection mid-body.
	Stall Scenario = "MOCK_STALL"
	// BigUsage is [Text] with [BigPromptTokens] … usage.
	BigUsage Scenario = "MOCK_BIGUSAGE"
	// ToolLoop never stops calling tools: while the request offers tools
	// and the conversation ends with a tool result or with the user message
	// that holds the marker, it calls the shell tool as [Tool] does, with a
	// new call id each time ([LoopCallID]). Given no tools, or a later user
	// message (an instruction after the loop, such as hub's request for a
	// final answer), it answers [LoopAnswer].
	ToolLoop Scenario = "MOCK_TOOLLOOP"
	// ToolForever calls the shell tool as [ToolLoop] does whenever the
	// request offers tools, whatever the conversation says; given no
	// tools it answers [LoopAnswer]. It plays a model that ignores an
	// instruction to stop using tools.
	ToolForever Scenario = "MOCK_TOOLFOREVER"
	// Call calls the tool the prompt names, with the arguments it gives:
	// "MOCK_CALL <tool> <arguments>", the arguments running to the end of
	// the marker's line. If the request offers a tool of that name (in any
	// case), the answer is one call of it, under the name offered, with id
	// [ToolCallID]:
	//   - a function tool gets the arguments as its JSON arguments; they
	//     must be a JSON object (none at all is {}). When they are not one
	//     but are the body of a JSON string that holds one, that object is
	//     sent: OpenCode 1.18.33 sends some prompts JSON-escaped, so that
	//     {"a":1} arrives as {\"a\":1} (maybe with a closing " after it).
	//     Anything else is answered [BadArgumentsPrefix] + the tool name and
	//     the arguments.
	//   - an OpenAI Responses custom (freeform) tool, such as Codex's
	//     apply_patch, gets the arguments as its raw input, each two-byte
	//     \n in them turned into a newline, so that a patch fits on one line.
	// Once the conversation carries a tool result, the answer is
	// [ToolAnswerPrefix] + that result, trimmed and cut to [CallResultMax]
	// bytes. A tool not offered is answered [NotOfferedAnswer]; a request
	// with no tools at all, [NoToolsAnswer].
	Call Scenario = "MOCK_CALL"
	// ListTools answers [ToolsAnswer] of the tools the request offers.
	ListTools Scenario = "MOCK_LISTTOOLS"
	// Answer answers the text the prompt gives: "MOCK_ANSWER <text>", the
	// text running to the end of the marker's line, each two-byte \n in it
	// a newline. [Then] separates the answers of later turns: the answer
	// is the one numbered by how many assistant messages the conversation
	// already holds (past the last, the last), so a resumed session (hub's
	// request to repair an answer) gets the next. When the request offers
	// a tool named [AnswerTool] (Claude Code's tool for --json-schema) and
	// the answer is a JSON object, the answer is a call of that tool with
	// it as its input (id [AnswerCallID] of the turn), as a model answers
	// there.
	Answer Scenario = "MOCK_ANSWER"
	// Quota fails as a provider whose account is out of credit: the
	// OpenAI APIs with HTTP 429, type and code insufficient_quota, "You
	// exceeded your current quota …"; the Anthropic Messages API with
	// HTTP 400 invalid_request_error, "Your credit balance is too low …".
	// Not retryable: no retry headers.
	Quota Scenario = "MOCK_QUOTA"
	// PaymentRequired fails with HTTP 402, as gateways such as OpenRouter
	// send it when the credits are spent: {"error":{"message":
	// "Insufficient credits. …","code":402}} on the OpenAI APIs, a
	// billing_error on the Anthropic one. No retry headers.
	PaymentRequired Scenario = "MOCK_402"
	// NoModel fails with HTTP 404, the requested model does not exist:
	// code model_not_found on the OpenAI APIs ("The model `<model>` does
	// not exist or you do not have access to it."), not_found_error
	// "model: <model>" on the Anthropic one.
	NoModel Scenario = "MOCK_NOMODEL"
	// Drop reads the request, then closes the TCP connection without
	// writing a byte of response (an orderly close, FIN).
	Drop Scenario = "MOCK_DROP"
	// Reset reads the request, then resets the TCP connection (SO_LINGER
	// 0, RST) without writing a byte of response.
	Reset Scenario = "MOCK_RESET"
	// Cut sends headers (200) and the first [StallDeltas] text deltas, as
	// [Stall] does, then closes the connection at once, mid-body: the
	// stream ends without its last events (with stream false: headers
	// only, then the close).
	Cut Scenario = "MOCK_CUT"
	// ResetTime fails with HTTP 429 and says when the limit resets, as
	// each provider carries it for an API key's rate limit: retry-after
	// and retry-after-ms ([ResetAfter]) everywhere; on the OpenAI APIs
	// x-ratelimit-limit|remaining|reset-requests (reset "20s") and a
	// message ending "Please try again in 20s. …"; on the Anthropic API
	// anthropic-ratelimit-requests-limit|remaining|reset (reset RFC 3339)
	// and the anthropic-ratelimit-unified-* headers of a rejected
	// subscription window ([UnifiedHeaders]). Options.RetryAfter does not
	// change it.
	ResetTime Scenario = "MOCK_RESETTIME"
	// UsageLimit fails with HTTP 429 as a subscription's usage limit (not
	// an API key's rate limit): on the Responses API the ChatGPT backend's
	// {"error":{"type":"usage_limit_reached","message":…,"plan_type":
	// "plus","resets_at":<unix seconds>,"resets_in_seconds":N}}, from which
	// Codex prints "You've hit your usage limit. …"; the same body on
	// Chat Completions; on the Anthropic API a rate_limit_error with the
	// rejected anthropic-ratelimit-unified-* headers ([UnifiedHeaders]).
	// Resets in [ResetAfter]; no retry-after.
	UsageLimit Scenario = "MOCK_USAGELIMIT"
	// StreamModel answers 200 and starts the stream, then fails inside it
	// as ChatGPT's Codex backend refuses a model to a Codex older than the
	// model: the OpenAI Responses stream's error event,
	// {"type":"error","status":400,"error":{"type":"invalid_request_error",
	// "code":null,"message":[StreamModelMessage],"param":"model"}}. On the
	// Responses API a response.failed whose error.message is that event as
	// text (as a server that relays the event passes it on), indented with
	// "MOCK_STREAMMODEL pretty"; on Chat Completions, after the first
	// [StallDeltas] text deltas, a chunk that is the event; on the
	// Anthropic Messages API, after them, an error event with that data.
	// With stream false: HTTP 400 with the event as the body. Not
	// retryable.
	StreamModel Scenario = "MOCK_STREAMMODEL"
	// StreamError answers 200 and starts the stream, then fails inside it
	// with a server error, OpenAI's error object {"message":
	// [StreamErrorMessage],"type":"server_error","code":"internal_error"}:
	// on the Responses API a response.failed whose error.message is that
	// object as text; on Chat Completions, after the first [StallDeltas]
	// text deltas, a chunk {"error":<the object>}; on the Anthropic
	// Messages API, after them, an error event with an api_error. With
	// stream false: HTTP 500 with {"error":<the object>}. Retryable, but no
	// retry header comes with a stream.
	StreamError Scenario = "MOCK_STREAMERROR"
)

// ResetAfter is how long after the request [ResetTime] and [UsageLimit]
// say their limit resets.
const ResetAfter = 20 * time.Second

// Then separates the answers of [Answer]'s turns.
const Then = " MOCK_THEN "

// AnswerTool is the tool [Answer] calls when it is offered: Claude Code's
// StructuredOutput.
const AnswerTool = "StructuredOutput"

// AnswerCallID is the id of [Answer]'s call of [AnswerTool] in the turn
// numbered n (from 1).
func AnswerCallID(n int) string { return fmt.Sprintf("call_answer_%d", n) }

// all lists every scenario; ParseScenario knows no others.
var all = [...]Scenario{Text, Tool, Unauthorized, RateLimited, ServerError, Overloaded, Overflow, Hang, Stall, BigUsage, ToolLoop, ToolForever,
	Call, ListTools, Answer, Quota, PaymentRequired, NoModel, Drop, Reset, Cut, ResetTime, UsageLimit, StreamModel, StreamError}

// Scenarios returns every scenario, for tests that cover them all.
func Scenarios() []Scenario { return slices.Clone(all[:]) }

// What the successful scenarios answer and report.
const (
	// TextAnswer is the whole answer of [Text], [BigUsage] and a [Tool] call
	// that offers no tools.
	TextAnswer = "Hello from the mock model."
	// ToolAnswerPrefix starts the answer of [Tool] after the tool ran; the
	// tool's output follows, trimmed and cut to [ToolResultMax] bytes.
	ToolAnswerPrefix = "Tool said: "
	ToolResultMax    = 200
	// ToolCallID is the id of the tool call [Tool] and [Call] make.
	ToolCallID = "call_mock_1"
	// ToolCommand is the command [Tool] asks a shell tool to run, and
	// ToolOutput what it prints.
	ToolCommand     = "echo mock-tool-ok"
	ToolOutput      = "mock-tool-ok"
	ToolDescription = "Print a marker"
	// ToolReadPath is the file [Tool] asks a read tool for when no shell tool
	// is offered.
	ToolReadPath = "/etc/hostname"
	// StallDeltas is how many text deltas [Stall] sends before it stalls.
	StallDeltas = 2
	// LoopAnswer is what [ToolLoop] answers once it stops calling tools.
	LoopAnswer = "Partial answer: the loop ran the marker command several times."
	// CallResultMax bounds the tool result [Call] answers with, in bytes.
	CallResultMax = 400
	// NoToolsAnswer is what [Call] answers a request that offers no tools.
	NoToolsAnswer = "NO_TOOLS_OFFERED"
	// BadArgumentsPrefix starts what [Call] answers when a function tool's
	// arguments are not a JSON object: "BAD_ARGUMENTS <tool>: <arguments>".
	BadArgumentsPrefix = "BAD_ARGUMENTS "
)

// NotOfferedAnswer is what [Call] answers when the request does not offer
// the tool named but offers others: "NOT_OFFERED write offered: [bash,read]".
func NotOfferedAnswer(name string, offered []string) string {
	return "NOT_OFFERED " + name + " offered: " + nameList(offered)
}

// ToolsAnswer is what [ListTools] answers: the names of the tools offered,
// in the request's order, as "TOOLS: [bash,read]" ("TOOLS: []" for none).
func ToolsAnswer(names []string) string { return "TOOLS: " + nameList(names) }

func nameList(names []string) string { return "[" + strings.Join(names, ",") + "]" }

// LoopCallID is the id of the n-th tool call (from 1) of [ToolLoop]: n is one
// more than the number of tool results in the conversation.
func LoopCallID(n int) string { return fmt.Sprintf("call_loop_%d", n) }

// Usage reported at the end of every answer: [BigUsage] reports the Big
// numbers, [Text] and both calls of [Tool] the others. Prompt tokens include
// the cached ones, as in the OpenAI APIs.
const (
	PromptTokens     = 1000
	CachedTokens     = 200
	CompletionTokens = 50
	TotalTokens      = PromptTokens + CompletionTokens

	BigPromptTokens     = 1_500_000
	BigCachedTokens     = 1_000_000
	BigCompletionTokens = 250_000
	BigTotalTokens      = BigPromptTokens + BigCompletionTokens
)

// usage is what one call reports, whatever the wire API.
type usage struct {
	prompt, cached, completion int
}

var (
	normalUsage = usage{PromptTokens, CachedTokens, CompletionTokens}
	bigUsage    = usage{BigPromptTokens, BigCachedTokens, BigCompletionTokens}
)

// ParseScenario returns the scenario whose marker word appears first in text,
// and false if none does.
func ParseScenario(text string) (Scenario, bool) {
	s, end := findScenario(text)
	return s, end >= 0
}

// findScenario returns the scenario whose marker word appears first in text
// and the offset just past that word, or "", -1 if none does.
func findScenario(text string) (Scenario, int) {
	for i := strings.Index(text, "MOCK_"); i >= 0; {
		end := i + len("MOCK_")
		for end < len(text) && isMarkerByte(text[end]) {
			end++
		}
		s := Scenario(text[i:end])
		if slices.Contains(all[:], s) {
			return s, end
		}
		next := strings.Index(text[end:], "MOCK_")
		if next < 0 {
			break
		}
		i = end + next
	}
	return "", -1
}

func isMarkerByte(b byte) bool {
	return b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_'
}

// call is one model request, parsed from any wire API into what the
// scenarios need.
type call struct {
	scenario     Scenario
	model        string
	stream       bool
	tools        []tool
	toolResult   *string  // the latest tool result in the conversation, if any
	toolResults  int      // how many tool results the conversation holds
	endsInResult bool     // the last message is a tool result with no text of its own
	answered     int      // how many assistant messages the conversation holds
	userText     string   // the first user message's text
	lastUserText string   // the last user message's text
	userTexts    []string // every user message's text, in order
	system       string   // the system text: Request.System
	// afterMarker is the rest of the marker's line, after the marker word
	// that chose the scenario: " write {...}" for [Call].
	afterMarker string
}

// tool is one tool the request offers the model.
type tool struct {
	name   string
	schema json.RawMessage // JSON Schema of its arguments; may be empty
	custom bool            // an OpenAI Responses custom tool, whose input is free text
}

// toolNames returns the names of the tools offered, in the request's order.
func (c call) toolNames() []string {
	var names []string
	for _, t := range c.tools {
		names = append(names, t.name)
	}
	return names
}

// chooseScenario picks the scenario from the user messages, latest first,
// then from the system messages. Each wire API collects those texts. It
// also returns the rest of the line after the marker word, for [Call].
func chooseScenario(user, system []string) (Scenario, string) {
	texts := slices.Clone(user)
	slices.Reverse(texts)
	for _, text := range append(texts, system...) {
		if s, end := findScenario(text); end >= 0 {
			rest, _, _ := strings.Cut(text[end:], "\n")
			return s, rest
		}
	}
	return Text, ""
}

// replyKind says which of the fields of a reply is meant.
type replyKind int

const (
	replyText       replyKind = iota // text, then usage
	replyTool                        // toolCall, then usage
	replyFail                        // an error response; the wire API maps the scenario to its status and body
	replyHang                        // no response until the client or the server goes away
	replyStall                       // the first StallDeltas pieces of text, then nothing
	replyCut                         // the first StallDeltas pieces of text, then the connection closed
	replyDrop                        // the connection closed (reset: with RST) before any response
	replyStreamFail                  // the stream begun, then the provider's error inside it (midstream.go)
)

// reply is what a scenario answers to one call, independent of the wire API.
type reply struct {
	kind     replyKind
	scenario Scenario
	text     []string // the answer, in the pieces to stream it in
	toolCall toolCall
	usage    usage
	// retryable says a client may retry the failure, and retryAfter when
	// (0 says nothing). The server sets retryAfter of every retryable
	// failure when asked to: see Options.RetryAfter.
	retryable  bool
	retryAfter time.Duration
	// fixedRetry says retryAfter is the scenario's own, which
	// Options.RetryAfter does not replace ([ResetTime]).
	fixedRetry bool
	// reset says a replyDrop resets the connection rather than closing it.
	reset bool
}

// toolCall is one call the model makes.
type toolCall struct {
	id, name string
	// arguments are a JSON object, or a custom tool's raw input, in the
	// pieces to stream them in.
	arguments []string
	custom    bool // a call of a custom tool (Responses only)
}

// plan decides the reply to c.
func (c call) plan() reply {
	r := reply{scenario: c.scenario, usage: normalUsage}
	switch c.scenario {
	case Unauthorized, Overflow, Quota, PaymentRequired, NoModel, UsageLimit:
		r.kind = replyFail
	case ResetTime:
		r.kind, r.retryable, r.retryAfter, r.fixedRetry = replyFail, true, ResetAfter, true
	case Drop, Reset:
		r.kind, r.reset = replyDrop, c.scenario == Reset
	case Cut:
		r.kind = replyCut
		r.text = words(TextAnswer)
	case StreamModel, StreamError:
		r.kind, r.retryable = replyStreamFail, c.scenario == StreamError
		r.text = words(TextAnswer)
	case RateLimited:
		r.kind, r.retryable, r.retryAfter = replyFail, true, time.Second
	case ServerError, Overloaded:
		r.kind, r.retryable = replyFail, true
	case Hang:
		r.kind = replyHang
	case Stall:
		r.kind = replyStall
		r.text = words(TextAnswer)
	case BigUsage:
		r.usage = bigUsage
		r.text = words(TextAnswer)
	case ToolLoop, ToolForever:
		if len(c.tools) > 0 && (c.scenario == ToolForever || c.endsInResult || strings.Contains(c.lastUserText, string(ToolLoop))) {
			r.kind = replyTool
			r.toolCall = chooseToolCall(c.tools)
			r.toolCall.id = LoopCallID(c.toolResults + 1)
		} else {
			r.text = words(LoopAnswer)
		}
	case Call:
		c.planCall(&r)
	case ListTools:
		r.text = words(ToolsAnswer(c.toolNames()))
	case Answer:
		c.planAnswer(&r)
	case Tool:
		switch {
		case c.toolResult != nil:
			r.text = words(ToolAnswerPrefix + cut(strings.TrimSpace(*c.toolResult), ToolResultMax))
		case len(c.tools) == 0:
			// Nothing to call (opencode's title call offers no tools):
			// answer as Text does rather than call a tool the client lacks.
			r.text = words(TextAnswer)
		default:
			r.kind = replyTool
			r.toolCall = chooseToolCall(c.tools)
		}
	default:
		r.text = words(TextAnswer)
	}
	return r
}

// planAnswer fills r with the answer of [Answer] to c.
func (c call) planAnswer(r *reply) {
	answers := strings.Split(strings.TrimSpace(c.afterMarker), strings.TrimSpace(Then))
	n := min(c.answered, len(answers)-1)
	text := strings.ReplaceAll(strings.TrimSpace(answers[n]), `\n`, "\n")
	offered := slices.ContainsFunc(c.tools, func(t tool) bool { return t.name == AnswerTool && !t.custom })
	if offered && isObject(text) {
		r.kind = replyTool
		r.toolCall = toolCall{id: AnswerCallID(n + 1), name: AnswerTool, arguments: pieces(text, 3)}
		return
	}
	r.text = pieces(text, 3)
}

// planCall fills r with the answer of [Call] to c: the tool result once
// the conversation holds one, else the call the marker asks for, else a
// text that says why there is none.
func (c call) planCall(r *reply) {
	name, args := callSpec(c.afterMarker)
	if c.toolResult != nil {
		r.text = words(ToolAnswerPrefix + cut(strings.TrimSpace(*c.toolResult), CallResultMax))
		return
	}
	if len(c.tools) == 0 {
		r.text = words(NoToolsAnswer)
		return
	}
	i := slices.IndexFunc(c.tools, func(t tool) bool { return strings.EqualFold(t.name, name) })
	if i < 0 {
		r.text = words(NotOfferedAnswer(name, c.toolNames()))
		return
	}
	t := c.tools[i]
	input := strings.ReplaceAll(args, `\n`, "\n")
	if !t.custom {
		var ok bool
		if input, ok = objectArgs(args); !ok {
			r.text = words(BadArgumentsPrefix + t.name + ": " + args)
			return
		}
	}
	r.kind = replyTool
	r.toolCall = toolCall{id: ToolCallID, name: t.name, arguments: pieces(input, 3), custom: t.custom}
}

// callSpec splits the rest of a [Call] marker's line, " write {...}", into
// the tool's name and its arguments, both trimmed. A closing quote after a
// name with no arguments is not part of it: OpenCode quotes some prompts
// ("MOCK_CALL read"), and no tool's name has a quote.
func callSpec(line string) (name, args string) {
	name, args, _ = strings.Cut(strings.TrimSpace(line), " ")
	return strings.TrimSuffix(name, `"`), strings.TrimSpace(args)
}

// objectArgs returns args if they are a JSON object ("" is {}), else the
// object they hold as the body of a JSON string, with or without a closing
// quote after it: {\"a\":1} and {\"a\":1}" hold {"a":1}. It reports false
// when they are neither.
func objectArgs(args string) (string, bool) {
	if args == "" {
		return "{}", true
	}
	for _, a := range []string{args, strings.TrimSuffix(args, `"`)} {
		if isObject(a) {
			return a, true
		}
		var body string
		if json.Unmarshal([]byte(`"`+a+`"`), &body) == nil && isObject(body) {
			return body, true
		}
	}
	return "", false
}

// isObject reports whether s is one JSON object.
func isObject(s string) bool {
	return json.Valid([]byte(s)) && strings.HasPrefix(strings.TrimSpace(s), "{")
}

// chooseToolCall prefers a tool named bash in any case (opencode's bash,
// Claude Code's Bash), then the first whose name contains "shell" or "exec",
// then one named read in any case (Claude Code's is Read), else calls "read".
func chooseToolCall(tools []tool) toolCall {
	for _, t := range tools {
		if strings.EqualFold(t.name, "bash") {
			args := `{"command":"` + ToolCommand + `","description":"` + ToolDescription + `"}`
			return toolCall{id: ToolCallID, name: t.name, arguments: pieces(args, 3)}
		}
	}
	for _, t := range tools {
		if n := strings.ToLower(t.name); strings.Contains(n, "shell") || strings.Contains(n, "exec") {
			return toolCall{id: ToolCallID, name: t.name, arguments: pieces(shellArgs(t.schema), 3)}
		}
	}
	name, schema := "read", json.RawMessage(nil)
	for _, t := range tools {
		if strings.EqualFold(t.name, "read") {
			name, schema = t.name, t.schema
			break
		}
	}
	return toolCall{id: ToolCallID, name: name, arguments: pieces(readArgs(schema), 3)}
}

// properties returns the property names of a JSON Schema object and whether
// each is an array. A schema that does not parse has none.
func properties(schema json.RawMessage) map[string]bool {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	props := map[string]bool{}
	if json.Unmarshal(schema, &s) != nil {
		return props
	}
	for name, p := range s.Properties {
		props[name] = p.Type == "array"
	}
	return props
}

// shellArgs fills the usual argument names of a shell tool with ToolCommand:
// command (a string, or an argv array as codex's shell takes), cmd
// (codex's exec_command), description.
func shellArgs(schema json.RawMessage) string {
	props := properties(schema)
	args := map[string]any{}
	if isArray, ok := props["command"]; ok {
		if isArray {
			args["command"] = []string{"bash", "-lc", ToolCommand}
		} else {
			args["command"] = ToolCommand
		}
	}
	if _, ok := props["cmd"]; ok {
		args["cmd"] = ToolCommand
	}
	if _, ok := props["description"]; ok {
		args["description"] = ToolDescription
	}
	if len(args) == 0 {
		args["command"] = ToolCommand
	}
	return mustJSON(args)
}

// readArgs names ToolReadPath under whichever path argument the read tool
// has (opencode: filePath, pi: path, claude: file_path).
func readArgs(schema json.RawMessage) string {
	props := properties(schema)
	for _, name := range []string{"filePath", "file_path", "path"} {
		if _, ok := props[name]; ok {
			return mustJSON(map[string]string{name: ToolReadPath})
		}
	}
	return mustJSON(map[string]string{"filePath": ToolReadPath})
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("mockllm: " + err.Error()) // only ever called on maps of strings
	}
	return string(b)
}

// words splits s before each space, so the pieces join back to s.
func words(s string) []string {
	var out []string
	for len(s) > 0 {
		i := strings.IndexByte(s[1:], ' ')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// pieces splits s into about n pieces on rune boundaries.
func pieces(s string, n int) []string {
	size := max(1, (len(s)+n-1)/n)
	var out []string
	for len(s) > size {
		i := size
		for i < len(s) && !utf8.RuneStart(s[i]) {
			i++
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	return append(out, s)
}

// cut returns at most n bytes of s, not splitting a rune.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
