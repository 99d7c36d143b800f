package claude

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
	clnorm "github.com/hubcli/hub/normalize/claude"
)

var _ adapters.Sessioner = (*Adapter)(nil)

// SessionCommand implements adapters.Sessioner. The argv is Command's with
// --input-format stream-json and no prompt: each turn is a user message
// on stdin, and Claude Code answers each with one result line, in one
// process, until its stdin closes (2.1.328, recorded against mockllm in
// testdata/live/claude). It prints nothing before the first message.
func (*Adapter) SessionCommand(req adapters.Request, inst adapters.Install) (adapters.Command, error) {
	return runCommand(req, inst, "-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose", "--include-partial-messages")
}

// NewLive implements adapters.Sessioner.
func (*Adapter) NewLive(req adapters.Request) adapters.Live {
	return &live{model: req.Model, failFast: !req.NoFailFast}
}

// live is hub's side of Claude Code's stream-json input:
//
//	{"type":"user","message":{"role":"user","content":"…"},"parent_tool_use_id":null,"session_id":""}
//	{"type":"control_request","request_id":"…","request":{"subtype":"interrupt"}}
//
// A turn ends at its result line. Claude Code sends system/init again at
// every turn, and its result holds both the turn's own usage
// (model_usage_since_last_result, per model, with costUSD) and the
// session's running cost (total_cost_usd). An interrupt is answered with a
// control_response, then the turn's result (subtype
// error_during_execution, terminal_reason aborted_streaming). A line that
// is not JSON ends Claude Code at once (exit 1), so every line is
// marshalled here; a user message sent while a turn runs would be folded
// into that turn, so hub sends one only after the last result.
type live struct {
	model    string
	failFast bool

	w     adapters.LineWriter     // the agent's stdin
	early adapters.EarlyInterrupt // sent again at the turn's system/init
	mu    sync.Mutex              // ints
	ints  int

	lastCost *float64          // total_cost_usd of the last result
	turn     *normalize.Totals // the running turn's own totals, from its result

	ask func(adapters.ToolCall, func(adapters.Decision)) // the approver's (Approvals), nil without one
}

func (l *live) Open(stdin io.WriteCloser) { l.w.Open(stdin) }

func (l *live) Check(prompt string) error { return adapters.CheckPrompt(Name, prompt, MaxPromptBytes) }

func (l *live) Send(prompt string) error {
	l.early.Sent()
	return l.w.Write(map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": prompt},
		"parent_tool_use_id": nil,
		"session_id":         "",
	})
}

func (l *live) Interrupt() error {
	l.early.Asked()
	l.interrupt()
	return nil
}

// interrupt sends the interrupt control request, without waiting for the
// write.
func (l *live) interrupt() {
	l.mu.Lock()
	l.ints++
	id := fmt.Sprintf("hub-interrupt-%d", l.ints)
	l.mu.Unlock()
	go func() {
		_ = l.w.Write(map[string]any{"type": "control_request", "request_id": id, "request": map[string]any{"subtype": "interrupt"}})
	}()
}

func (l *live) Close() { l.w.Close() }

func (l *live) Line(dst []events.Body, line []byte) ([]events.Body, bool, bool) {
	switch gjson.GetBytes(line, "type").Str {
	case "control_response":
		return dst, true, false
	case "control_request":
		l.request(gjson.ParseBytes(line))
		return dst, true, false
	case "control_cancel_request":
		// A question withdrawn (an interrupt while it waited:
		// testdata/approvals/claude/interrupt-pending): its late answer is
		// ignored.
		return dst, true, false
	case "system":
		if gjson.GetBytes(line, "subtype").Str == "init" && l.early.Began() {
			l.interrupt()
		}
	case "result":
		l.turn = turnTotals(gjson.ParseBytes(line), l.lastCost)
		if c := gjson.GetBytes(line, "total_cost_usd"); c.Type == gjson.Number {
			v := c.Float()
			l.lastCost = &v
		}
		return dst, false, true
	}
	return dst, false, false
}

// turnTotals are the turn's own usage and cost from its result line: the
// sum over model_usage_since_last_result's models where the result has
// it (an interrupted turn's usage is all zero there, its model usage is
// not), else its usage and the growth of total_cost_usd since prevCost.
func turnTotals(r gjson.Result, prevCost *float64) *normalize.Totals {
	t := &normalize.Totals{CostSource: events.CostReported, Turns: r.Get("num_turns").Int()}
	if mu := r.Get("model_usage_since_last_result"); mu.IsObject() {
		cost := 0.0
		known := true
		mu.ForEach(func(_, m gjson.Result) bool {
			t.Usage.Input += max(m.Get("inputTokens").Int(), 0)
			t.Usage.Output += max(m.Get("outputTokens").Int(), 0)
			t.Usage.CacheRead += max(m.Get("cacheReadInputTokens").Int(), 0)
			t.Usage.CacheWrite += max(m.Get("cacheCreationInputTokens").Int(), 0)
			if c := m.Get("costUSD"); c.Type == gjson.Number {
				cost += c.Float()
			} else {
				known = false
			}
			return true
		})
		if known {
			t.Usage.CostUSD = &cost
		} else {
			t.CostSource = events.CostUnknown
		}
		return t
	}
	u := r.Get("usage")
	t.Usage = events.Tokens{Input: max(u.Get("input_tokens").Int(), 0), Output: max(u.Get("output_tokens").Int(), 0),
		CacheRead: max(u.Get("cache_read_input_tokens").Int(), 0), CacheWrite: max(u.Get("cache_creation_input_tokens").Int(), 0)}
	if c := r.Get("total_cost_usd"); c.Type == gjson.Number {
		v := c.Float()
		if prevCost != nil {
			v = max(v-*prevCost, 0)
		}
		t.Usage.CostUSD = &v
	} else {
		t.CostSource = events.CostUnknown
	}
	return t
}

var _ adapters.Approving = (*live)(nil)

// Approvals implements adapters.Approving: with Request.Approve the
// command asks hub about every tool call (--permission-prompt-tool stdio
// and an ask rule for every tool: approvalArgs), each asked as a
// can_use_tool control request, put to ask, and answered allow (with the
// call's input unchanged) or deny with the message, which the model sees
// as the call's error (testdata/approvals/claude: write-cwd-allow,
// write-cwd-deny).
func (l *live) Approvals(ask func(adapters.ToolCall, func(adapters.Decision))) { l.ask = ask }

// request answers a control request of Claude Code's: can_use_tool goes to
// the approver; any other (hooks, MCP messages hub did not ask for) gets
// an error, so that nothing waits on hub.
func (l *live) request(r gjson.Result) {
	id := r.Get("request_id").Str
	req := r.Get("request")
	respond := func(body map[string]any) {
		go func() {
			_ = l.w.Write(map[string]any{"type": "control_response", "response": body})
		}()
	}
	if req.Get("subtype").Str != "can_use_tool" || l.ask == nil {
		respond(map[string]any{"subtype": "error", "request_id": id, "error": "hub does not answer " + req.Get("subtype").Str})
		return
	}
	name := req.Get("tool_name").Str
	input := req.Get("input")
	call := adapters.ToolCall{CallID: req.Get("tool_use_id").Str, Name: name, Kind: clnorm.ToolKind(name),
		Input: json.RawMessage(input.Raw), Reason: req.Get("decision_reason").Str}
	if !input.IsObject() {
		call.Input = json.RawMessage(`{}`)
	}
	for _, k := range []string{"file_path", "notebook_path", "path"} {
		if p := input.Get(k).Str; p != "" {
			call.Paths = append(call.Paths, p)
		}
	}
	if p := req.Get("blocked_path").Str; p != "" && !slices.Contains(call.Paths, p) {
		call.Paths = append(call.Paths, p)
	}
	raw := json.RawMessage(call.Input)
	l.ask(call, func(d adapters.Decision) {
		body := map[string]any{"behavior": "deny", "message": d.Message}
		if d.Verdict == adapters.AllowOnce || d.Verdict == adapters.AllowSession {
			body = map[string]any{"behavior": "allow", "updatedInput": raw}
		}
		respond(map[string]any{"subtype": "success", "request_id": id, "response": body})
	})
}

func (l *live) NewTurnDecoder() normalize.Decoder { return clnorm.New(l.model, l.failFast) }

func (l *live) EndTurn(o normalize.Outcome) normalize.Outcome {
	if l.turn != nil {
		o.Totals, l.turn = l.turn, nil
	}
	return o
}
