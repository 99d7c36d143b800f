package fakeagent

import (
	"fmt"
	"strings"
)

// dialect is one agent CLI's JSON output, as lines. The shapes follow the
// recordings in testdata/<agent> (field order included: Claude Code's
// result puts "type" near its end).
type dialect interface {
	// version is what `--version` prints, and whether on stderr.
	version() (text string, onStderr bool)
	sessionID() string
	model() string
	toolName() string
	// answerKey marks the line hub takes the final answer from.
	answerKey() string

	begin(s *script) []string  // session start
	tool(s *script) []string   // one tool call (s.v.tool, callID, command, output) and its result
	answer(s *script) []string // reasoning and the answer (s.v.reasoning, answer, deltas)
	finish(s *script) []string // the terminal lines of a successful run
	// transient is an error the agent then recovers from by itself.
	transient(s *script) []string
	// progress is a harmless line between the answer and the terminal lines.
	progress(s *script) string
	// extra are lines only this dialect has that carry p in a string.
	extra(s *script, p string) []string
	// hugeTerminal is a run whose terminal event holds EnvSize bytes, the
	// way this CLI's terminal event grows, and its exit status.
	hugeTerminal(s *script) ([]string, int)
}

var dialects = map[string]dialect{
	"claude":   claude{},
	"codex":    codex{},
	"opencode": opencode{},
	"pi":       pi{},
}

// claude speaks `claude -p --output-format stream-json --verbose
// --include-partial-messages` (Claude Code 2.1.328).
type claude struct{}

func (claude) version() (string, bool) { return "2.1.328 (Claude Code)", false }
func (claude) sessionID() string       { return "5bd312bc-a300-4370-bc46-b6e244c776af" }
func (claude) model() string           { return "claude-opus-5-5" }
func (claude) toolName() string        { return "Bash" }
func (claude) answerKey() string       { return `"type":"result"` }

func (claude) begin(s *script) []string {
	return []string{
		fmt.Sprintf(`{"type":"system","subtype":"init","cwd":%s,"session_id":%s,"tools":["Read",%s],"mcp_servers":[],"model":%s,"permissionMode":"bypassPermissions","slash_commands":["compact"],"apiKeySource":"ANTHROPIC_API_KEY","claude_code_version":"2.1.328","output_style":"default","uuid":"5ddb0129-01c4-40ec-919f-5141f103cbc3"}`,
			q(s.v.cwd), q(s.v.session), q(s.v.tool), q(s.v.model)),
		claude{}.progress(s),
	}
}

func (claude) progress(s *script) string {
	return fmt.Sprintf(`{"type":"system","subtype":"status","status":"requesting","session_id":%s,"uuid":"46afb3ec-8a19-46eb-88bf-3b1405a7fa7e"}`, q(s.v.session))
}

// message is one model call: the stream events around its content blocks,
// one assistant line per block (each repeating the message-start usage).
func (c claude) message(s *script, stop string, blocks []string, deltas [][]string) []string {
	s.calls++
	id := s.id("msg")
	ev := func(e string) string {
		return fmt.Sprintf(`{"type":"stream_event","event":%s,"session_id":%s,"parent_tool_use_id":null,"uuid":%q,"api_message_id":%q}`, e, q(s.v.session), s.id("uuid"), id)
	}
	usage := `{"input_tokens":800,"cache_creation_input_tokens":0,"cache_read_input_tokens":200,"output_tokens":1}`
	lines := []string{ev(fmt.Sprintf(`{"type":"message_start","message":{"id":%q,"type":"message","role":"assistant","model":%s,"content":[],"stop_reason":null,"stop_sequence":null,"usage":%s}}`, id, q(s.v.model), usage))}
	for i, b := range blocks {
		start := b // tool_use and thinking blocks start whole; text starts empty
		if strings.HasPrefix(b, `{"type":"text"`) {
			start = `{"type":"text","text":""}`
		}
		lines = append(lines, ev(fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, i, start)))
		for _, d := range deltas[i] {
			lines = append(lines, ev(fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, q(d))))
		}
		lines = append(lines,
			fmt.Sprintf(`{"type":"assistant","message":{"id":%q,"type":"message","role":"assistant","model":%s,"content":[%s],"stop_reason":null,"stop_sequence":null,"usage":%s,"context_management":null},"parent_tool_use_id":null,"session_id":%s,"uuid":%q,"timestamp":"2026-11-30T04:59:58.979Z","request_id":"req_fake"}`,
				id, q(s.v.model), b, usage, q(s.v.session), s.id("uuid")),
			ev(fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i)))
	}
	return append(lines,
		ev(fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"input_tokens":800,"cache_creation_input_tokens":0,"cache_read_input_tokens":200,"output_tokens":50}}`, stop)),
		ev(`{"type":"message_stop"}`))
}

func (c claude) tool(s *script) []string {
	block := fmt.Sprintf(`{"type":"tool_use","id":%s,"name":%s,"input":{"command":%s,"description":"Run it"}}`, q(s.v.callID), q(s.v.tool), q(s.v.command))
	lines := c.message(s, "tool_use", []string{block}, [][]string{nil})
	return append(lines, fmt.Sprintf(`{"type":"user","message":{"role":"user","content":[{"tool_use_id":%s,"type":"tool_result","content":%s,"is_error":false}]},"parent_tool_use_id":null,"session_id":%s,"uuid":"9566272d-eac4-4a3f-8384-369fbd923b2c","timestamp":"2026-11-30T05:00:02.783Z","tool_use_result":{"stdout":%s,"stderr":"","interrupted":false,"isImage":false}}`,
		q(s.v.callID), q(s.v.output), q(s.v.session), q(s.v.output)))
}

func (c claude) answer(s *script) []string {
	var blocks []string
	var deltas [][]string
	if s.v.reasoning != "" {
		blocks = append(blocks, fmt.Sprintf(`{"type":"thinking","thinking":%s,"signature":"c2ln"}`, q(s.v.reasoning)))
		deltas = append(deltas, nil)
	}
	blocks = append(blocks, fmt.Sprintf(`{"type":"text","text":%s}`, q(s.v.answer)))
	var ds []string
	if !strings.Contains(s.v.answer, bigMark) { // a giant answer streams without partial messages
		ds = s.deltas()
	}
	return c.message(s, "end_turn", blocks, append(deltas, ds))
}

func (c claude) finish(s *script) []string {
	n := max(s.calls, 1)
	cost := 0.00424 * float64(n)
	return []string{fmt.Sprintf(`{"duration_api_ms":26,"stop_reason":"end_turn","session_id":%s,"total_cost_usd":%g,"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":%d,"output_tokens":%d},"modelUsage":{%s:{"inputTokens":%d,"outputTokens":%d,"cacheReadInputTokens":%d,"cacheCreationInputTokens":0,"costUSD":%g}},"permission_denials":[],"terminal_reason":"completed","is_error":false,"num_turns":%d,"subtype":"success","api_error_status":null,"result":%s,"type":"result","duration_ms":138,"uuid":"8f9cfc06-cbcf-4644-aacc-071c012a4b51"}`,
		q(s.v.session), cost, 800*n, 200*n, 50*n, q(s.v.model), 800*n, 50*n, 200*n, cost, n, q(s.v.answer))}
}

func (claude) transient(s *script) []string {
	return []string{fmt.Sprintf(`{"type":"system","subtype":"api_retry","attempt":1,"max_retries":10,"retry_delay_ms":500,"error_status":529,"error":"overloaded","session_id":%s,"uuid":"6d4ee1d3-b6a6-43a7-95b0-e068f609dc06"}`, q(s.v.session))}
}

func (claude) extra(*script, string) []string { return nil }

// hugeTerminal: a giant answer, in the assistant line and in the result.
func (c claude) hugeTerminal(s *script) ([]string, int) {
	s.v.answer = bigMark
	lines := append(c.begin(s), c.answer(s)...)
	return append(lines, c.finish(s)...), 0
}

// codex speaks `codex exec --json` (codex-cli 0.169.0).
type codex struct{}

func (codex) version() (string, bool) { return "codex-cli 0.169.0", false }
func (codex) sessionID() string       { return "01a22b02-558b-7953-8aa3-3f2f53202f51" }
func (codex) model() string           { return "" } // not in codex's stream
func (codex) toolName() string        { return "command_execution" }
func (codex) answerKey() string       { return `"type":"agent_message"` }

func (codex) begin(s *script) []string {
	return []string{fmt.Sprintf(`{"type":"thread.started","thread_id":%s}`, q(s.v.session)), `{"type":"turn.started"}`}
}

func (codex) tool(s *script) []string {
	id := s.id("item")
	return []string{
		fmt.Sprintf(`{"type":"item.started","item":{"id":%q,"type":"command_execution","command":%s,"aggregated_output":"","exit_code":null,"status":"in_progress"}}`, id, q(s.v.command)),
		fmt.Sprintf(`{"type":"item.completed","item":{"id":%q,"type":"command_execution","command":%s,"aggregated_output":%s,"exit_code":0,"status":"completed"}}`, id, q(s.v.command), q(s.v.output)),
	}
}

func (codex) answer(s *script) []string {
	var lines []string
	if s.v.reasoning != "" {
		lines = append(lines, fmt.Sprintf(`{"type":"item.completed","item":{"id":%q,"type":"reasoning","text":%s}}`, s.id("item"), q(s.v.reasoning)))
	}
	return append(lines, fmt.Sprintf(`{"type":"item.completed","item":{"id":%q,"type":"agent_message","text":%s}}`, s.id("item"), q(s.v.answer)))
}

func (codex) finish(*script) []string {
	return []string{`{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":200,"cache_write_input_tokens":0,"output_tokens":50,"reasoning_output_tokens":0}}`}
}

func (codex) transient(*script) []string {
	return []string{`{"type":"error","message":"Reconnecting... 1/5 (stream disconnected before completion: error sending request for url (http://127.0.0.1:9/v1/responses))"}`}
}

func (codex) progress(s *script) string {
	return fmt.Sprintf(`{"type":"item.completed","item":{"id":%q,"type":"reasoning","text":"Double-checking the answer."}}`, s.id("item"))
}

// extra: a model reroute warning names the model codex uses.
func (codex) extra(s *script, p string) []string {
	return []string{fmt.Sprintf(`{"type":"item.completed","item":{"id":%q,"type":"error","message":%s}}`, s.id("item"), q("model rerouted: gpt-5.5 -> gpt-5.5"+p+" (capacity)"))}
}

// hugeTerminal: turn.failed whose message quotes a giant response body.
func (c codex) hugeTerminal(s *script) ([]string, int) {
	return append(c.begin(s), `{"type":"turn.failed","error":{"message":"unexpected status 400 Bad Request: `+bigMark+`"}}`), 1
}

// opencode speaks `opencode run --format json` (OpenCode 1.18.33).
type opencode struct{}

func (opencode) version() (string, bool) { return "1.18.33", false }
func (opencode) sessionID() string       { return "ses_dd57bd82cffe3U81dLpY6RJF2o" }
func (opencode) model() string           { return "" } // not in opencode's stream
func (opencode) toolName() string        { return "bash" }
func (opencode) answerKey() string       { return `{"type":"text"` }

func (o opencode) head(s *script, typ string) string {
	return fmt.Sprintf(`{"type":%q,"timestamp":1796009636357,"sessionID":%s`, typ, q(s.v.session))
}

func (o opencode) stepStart(s *script) string {
	return o.head(s, "step_start") + fmt.Sprintf(`,"part":{"id":%q,"messageID":"msg_fake","sessionID":%s,"type":"step-start"}}`, s.id("prt"), q(s.v.session))
}

func (o opencode) stepFinish(s *script, reason string) string {
	return o.head(s, "step_finish") + fmt.Sprintf(`,"part":{"id":%q,"reason":%q,"messageID":"msg_fake","sessionID":%s,"type":"step-finish","tokens":{"total":1050,"input":800,"output":50,"reasoning":0,"cache":{"write":0,"read":200}},"cost":0.00321}}`, s.id("prt"), reason, q(s.v.session))
}

func (o opencode) begin(s *script) []string { return []string{o.stepStart(s)} }

func (o opencode) tool(s *script) []string {
	return []string{
		o.head(s, "tool_use") + fmt.Sprintf(`,"part":{"type":"tool","tool":%s,"callID":%s,"state":{"status":"completed","input":{"command":%s,"description":"Run it"},"output":%s,"metadata":{"output":%s,"exit":0,"truncated":false},"title":%s,"time":{"start":1796009643338,"end":1796009643496}},"id":%q,"sessionID":%s,"messageID":"msg_fake"}}`,
			q(s.v.tool), q(s.v.callID), q(s.v.command), q(s.v.output), q(s.v.output), q(s.v.command), s.id("prt"), q(s.v.session)),
		o.stepFinish(s, "tool-calls"),
		o.stepStart(s),
	}
}

func (o opencode) answer(s *script) []string {
	var lines []string
	if s.v.reasoning != "" {
		lines = append(lines, o.head(s, "reasoning")+fmt.Sprintf(`,"part":{"id":%q,"messageID":"msg_fake","sessionID":%s,"type":"reasoning","text":%s,"time":{"start":1,"end":2}}}`, s.id("prt"), q(s.v.session), q(s.v.reasoning)))
	}
	return append(lines, o.head(s, "text")+fmt.Sprintf(`,"part":{"id":%q,"messageID":"msg_fake","sessionID":%s,"type":"text","text":%s,"time":{"start":1,"end":2}}}`, s.id("prt"), q(s.v.session), q(s.v.answer)))
}

func (o opencode) finish(s *script) []string { return []string{o.stepFinish(s, "stop")} }

func (o opencode) transient(s *script) []string {
	return []string{
		o.head(s, "error") + `,"error":{"name":"APIError","data":{"message":"Overloaded","statusCode":529,"isRetryable":true}}}`,
		o.stepStart(s),
	}
}

func (o opencode) progress(s *script) string {
	return o.head(s, "reasoning") + fmt.Sprintf(`,"part":{"id":%q,"messageID":"msg_fake","sessionID":%s,"type":"reasoning","text":"Double-checking the answer.","time":{"start":1,"end":2}}}`, s.id("prt"), q(s.v.session))
}

func (opencode) extra(*script, string) []string { return nil }

// hugeTerminal: an API error whose response body echoes a giant request;
// OpenCode ends its run after it.
func (o opencode) hugeTerminal(s *script) ([]string, int) {
	return append(o.begin(s), o.head(s, "error")+`,"error":{"name":"APIError","data":{"message":"Bad Request","statusCode":400,"isRetryable":false,"responseHeaders":{"content-type":"application/json"},"responseBody":"{\"error\":{\"message\":\"`+bigMark+`\"}}"}}}`), 1
}

// pi speaks `pi --print --mode json` (pi 0.73.1).
type pi struct{}

func (pi) version() (string, bool) { return "0.73.1", true }
func (pi) sessionID() string       { return "01a22b02-92f5-7225-b0ac-468bb1f8867b" }
func (pi) model() string           { return "mock-model" }
func (pi) toolName() string        { return "bash" }
func (pi) answerKey() string       { return `{"type":"message_end"` }

const piUsage = `"usage":{"input":800,"output":50,"cacheRead":200,"cacheWrite":0,"totalTokens":1050,"cost":{"input":0.0024000000000000002,"output":0.00075,"cacheRead":0.000059999999999999995,"cacheWrite":0,"total":0.00321}}`
const piNoUsage = `"usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}}`

// assistant is an assistant message as pi prints it.
func (pi) assistant(s *script, content, usage, stop, extra string) string {
	s.calls++
	return fmt.Sprintf(`{"role":"assistant","content":[%s],"api":"openai-completions","provider":"mock","model":%s,%s,"stopReason":%q%s,"timestamp":%d,"responseId":"chatcmpl-fake-%d"}`,
		content, q(s.v.model), usage, stop, extra, 1796017918806+s.calls, s.calls)
}

func (p pi) begin(s *script) []string {
	user := fmt.Sprintf(`{"role":"user","content":[{"type":"text","text":%s}],"timestamp":1796017918739}`, q(s.v.prompt))
	s.msgs = []string{user}
	return []string{
		fmt.Sprintf(`{"type":"session","version":3,"id":%s,"timestamp":"2026-11-30T05:51:58.711Z","cwd":%s}`, q(s.v.session), q(s.v.cwd)),
		`{"type":"agent_start"}`,
		`{"type":"turn_start"}`,
		`{"type":"message_start","message":` + user + `}`,
		`{"type":"message_end","message":` + user + `}`,
	}
}

func (p pi) emptyStart(s *script) string {
	return fmt.Sprintf(`{"type":"message_start","message":{"role":"assistant","content":[],"api":"openai-completions","provider":"mock","model":%s,%s,"stopReason":"stop","timestamp":%d}}`, q(s.v.model), piNoUsage, 1796017918806+s.calls+1)
}

func (p pi) tool(s *script) []string {
	start := p.emptyStart(s)
	call := p.assistant(s, fmt.Sprintf(`{"type":"toolCall","id":%s,"name":%s,"arguments":{"command":%s,"description":"Run it"}}`, q(s.v.callID), q(s.v.tool), q(s.v.command)), piUsage, "toolUse", "")
	args := fmt.Sprintf(`{"command":%s,"description":"Run it"}`, q(s.v.command))
	result := fmt.Sprintf(`{"role":"toolResult","toolCallId":%s,"toolName":%s,"content":[{"type":"text","text":%s}],"isError":false,"timestamp":1796017920564}`, q(s.v.callID), q(s.v.tool), q(s.v.output))
	s.msgs = append(s.msgs, call, result)
	return []string{
		start,
		`{"type":"message_end","message":` + call + `}`,
		fmt.Sprintf(`{"type":"tool_execution_start","toolCallId":%s,"toolName":%s,"args":%s}`, q(s.v.callID), q(s.v.tool), args),
		fmt.Sprintf(`{"type":"tool_execution_end","toolCallId":%s,"toolName":%s,"result":{"content":[{"type":"text","text":%s}]},"isError":false}`, q(s.v.callID), q(s.v.tool), q(s.v.output)),
		`{"type":"message_start","message":` + result + `}`,
		`{"type":"message_end","message":` + result + `}`,
		`{"type":"turn_end","message":` + call + `,"toolResults":[` + result + `]}`,
		`{"type":"turn_start"}`,
	}
}

func (p pi) answer(s *script) []string {
	var content []string
	if s.v.reasoning != "" {
		content = append(content, fmt.Sprintf(`{"type":"thinking","thinking":%s}`, q(s.v.reasoning)))
	}
	lines := []string{p.emptyStart(s)}
	so := ""
	for _, d := range s.deltas() {
		so += d
		partial := fmt.Sprintf(`{"role":"assistant","content":[%s],"api":"openai-completions","provider":"mock","model":%s,%s,"stopReason":"stop","timestamp":%d}`,
			strings.Join(append(slicesClone(content), fmt.Sprintf(`{"type":"text","text":%s}`, q(so))), ","), q(s.v.model), piNoUsage, 1796017918806+s.calls+1)
		lines = append(lines, fmt.Sprintf(`{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":%d,"delta":%s,"partial":%s},"message":%s}`, len(content), q(d), partial, partial))
	}
	content = append(content, fmt.Sprintf(`{"type":"text","text":%s}`, q(s.v.answer)))
	msg := p.assistant(s, strings.Join(content, ","), piUsage, "stop", "")
	s.msgs = append(s.msgs, msg)
	s.last = msg
	lines = append(lines, `{"type":"message_end","message":`+msg+`}`)
	if s.retried {
		s.retried = false
		lines = append(lines, `{"type":"auto_retry_end","success":true,"attempt":1}`)
	}
	return lines
}

func (p pi) finish(s *script) []string {
	return []string{
		`{"type":"turn_end","message":` + s.last + `,"toolResults":[]}`,
		`{"type":"agent_end","messages":[` + strings.Join(s.msgs, ",") + `]}`,
	}
}

// transient: a 429 that pi's auto-retry takes: the failed call, its
// agent_end, auto_retry_start, and the next attempt's start.
func (p pi) transient(s *script) []string {
	msg := p.assistant(s, "", piNoUsage, "error", `,"errorMessage":"429 Rate limit reached for requests"`)
	s.msgs = append(s.msgs, msg)
	lines := []string{
		p.emptyStart(s),
		`{"type":"message_end","message":` + msg + `}`,
		`{"type":"turn_end","message":` + msg + `,"toolResults":[]}`,
		`{"type":"agent_end","messages":[` + strings.Join(s.msgs, ",") + `]}`,
		`{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":10,"errorMessage":"429 Rate limit reached for requests"}`,
		`{"type":"agent_start"}`,
		`{"type":"turn_start"}`,
	}
	s.msgs = nil
	s.retried = true
	return lines
}

func (pi) progress(*script) string { return `{"type":"queue_update","steering":[],"followUp":[]}` }

func (pi) extra(*script, string) []string { return nil }

// hugeTerminal: a giant tool output, which pi repeats in agent_end, its
// terminal event; the answer itself is short.
func (p pi) hugeTerminal(s *script) ([]string, int) {
	s.v.output = bigMark
	s.v.answer = "Done."
	lines := append(p.begin(s), p.tool(s)...)
	lines = append(lines, p.answer(s)...)
	return append(lines, p.finish(s)...), 0
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }
