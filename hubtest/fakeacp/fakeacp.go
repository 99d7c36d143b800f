// Package fakeacp is a scripted Agent Client Protocol agent for tests of
// hub's ACP client (adapters/acp): the permission, cancel, hang, crash and
// malformed-message cases a real agent cannot be made to play. A test
// binary calls Main when EnvScenario is set (os/exec's helper-command
// pattern); the process then speaks ACP (JSON-RPC 2.0, a message a line)
// on stdin and stdout, written by hand rather than through an SDK so that
// it can also write what no SDK would.
//
// The scenario is EnvScenario's value, or, when that is "prompt", the first
// word of the prompt that names one (Scenarios). Every scenario answers
// initialize and session/new first (but "auth", which refuses session/new);
// what it does with session/prompt is its own. It owns no assertions.
package fakeacp

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvScenario selects the scenario (see Scenarios); "prompt" reads it from
// the prompt.
const EnvScenario = "HUB_FAKE_ACP"

// EnvPIDFile is where the scenario grandchild writes its child's pid.
const EnvPIDFile = "HUB_FAKE_ACP_PIDFILE"

// Answer is the text the scenarios that answer give.
const Answer = "Hello from the fake ACP agent."

// Scenarios are the scenarios, each with what it does with the prompt.
var Scenarios = map[string]string{
	"text":       "streams Answer in three chunks, a thought, a plan, a usage_update of $0.0125 and end_turn with usage",
	"write":      "asks permission to write the file named after the marker (an edit with that location), writes it when allowed, then answers",
	"shell":      "asks permission to run a shell command, then answers whatever the answer",
	"giveup":     "asks permission to run a shell command; rejected, it ends the turn with stopReason cancelled and no answer (as codex-acp does)",
	"other":      "asks permission of kind other for the file named after the marker (as OpenCode's external_directory), writes it when allowed, then answers",
	"unasked":    "runs a shell tool without asking (tool_call in_progress), then answers",
	"hang":       "never answers the prompt; on session/cancel answers cancelled at once",
	"stall":      "streams a chunk, then waits for session/cancel and answers cancelled",
	"recall":     "answers with the prompts this process was sent before this one, joined by \" | \" (a live session's earlier turns)",
	"deaf":       "never answers the prompt, ignores session/cancel, SIGTERM and stdin's end",
	"grandchild": "starts a child that ignores SIGTERM (its pid in EnvPIDFile), then hangs as deaf",
	"crash":      "streams a chunk, then exits 3 without answering",
	"malformed":  "writes a line that is not JSON, a truncated message and a message of neither kind, then answers",
	"error":      "answers the prompt with a JSON-RPC error that carries a provider's 429",
	"auth":       "refuses session/new with auth_required (-32000)",
	"max_tokens": "answers with stopReason max_tokens",
	"refusal":    "answers with stopReason refusal",
	"read":       "reads the file named after the marker with fs/read_text_file and answers with what it got",
	"load":       "answers session/load by replaying an old turn's text before the answer, then answers the prompt",
	"stdin-eof":  "answers the prompt, then exits only when its stdin ends",
	"stray":      "(EnvScenario only) sends responses to no request (id null, an unknown id) before its first answer and repeats its initialize answer, then answers as text",
	"burst":      "sends 200 permission requests at once, edits alternately inside and outside its cwd, and answers with how many answers were not the grant's (workspace-write: inside allowed, outside rejected)",
	"reuse":      "asks permission for a read, then, under the same tool call id, for a shell command, and answers with both answers",
	"stuck":      "(EnvScenario only) answers session/new, then reads no more of its stdin",
	"ask":        "asks permission to write the file named after the marker (default asked.txt in its cwd) as OpenCode does (an edit, its path as the title, a diff); allowed, writes it and answers with the option chosen; rejected, reports the call failed and ends the turn without a word (as OpenCode 1.18.33); cancelled, ends the turn cancelled",
	"ask-twice":  "asks permission twice, one call after the other, for calls of the same title (\"edit twice\") writing twice-1.txt and twice-2.txt in its cwd, writes what is allowed, and answers with both options",
	"ask-bare":   "asks permission with no toolCall at all, and answers with the outcome",
	"late":       "answers with the responses it got to requests already answered (late answers), as \"late answers: N\" and the lines",
	"flood":      "asks permission for 1,000 edits at once (flood-N.txt in its cwd, each its own call), waits for every answer, and answers with the count of each outcome (\"once N, reject N, cancelled N\")",
}

type agent struct {
	out      *bufio.Writer
	mu       sync.Mutex
	nextID   int
	pending  map[string]chan json.RawMessage
	scenario string
	cwd      string
	// Of the prompt being answered, set as its session/prompt is read
	// (prompts come one at a time): closed by its session/cancel.
	cancelled chan struct{}
	once      *sync.Once
	prompts   []string // every prompt's text, in order
	spent     float64  // the session's cost so far, USD: usage_update's cost is the session's
	late      []string // responses to requests already answered, or to none
}

type message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
}

// Main plays the scenario named by EnvScenario until stdin ends (or the
// scenario exits), then exits.
func Main() {
	a := &agent{out: bufio.NewWriter(os.Stdout), pending: map[string]chan json.RawMessage{},
		cancelled: make(chan struct{}), once: &sync.Once{}, scenario: os.Getenv(EnvScenario)}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	for in.Scan() {
		var m message
		if json.Unmarshal(in.Bytes(), &m) != nil {
			continue
		}
		switch {
		case m.Method == "" && m.ID != nil:
			a.mu.Lock()
			ch := a.pending[string(m.ID)]
			delete(a.pending, string(m.ID))
			if ch == nil {
				a.late = append(a.late, in.Text())
			}
			a.mu.Unlock()
			if ch != nil {
				ch <- json.RawMessage(append([]byte(nil), in.Bytes()...))
			}
		case m.Method == "session/cancel":
			a.mu.Lock()
			ch, once := a.cancelled, a.once
			a.mu.Unlock()
			once.Do(func() { close(ch) })
		case m.Method == "session/prompt":
			a.mu.Lock()
			a.cancelled, a.once = make(chan struct{}), &sync.Once{}
			a.prompts = append(a.prompts, promptText(m.Params))
			a.mu.Unlock()
			go a.handle(m)
		case a.scenario == "stuck" && m.Method == "session/new":
			a.handle(m)
			select {} // reads no more of stdin
		default:
			go a.handle(m)
		}
	}
	if a.scenario == "deaf" || a.scenario == "grandchild" {
		select {} // ignores stdin's end
	}
	os.Exit(0)
}

func (a *agent) write(v any) {
	b, _ := json.Marshal(v)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.out.Write(b)
	a.out.WriteByte('\n')
	a.out.Flush()
}

func (a *agent) raw(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.out.WriteString(s + "\n")
	a.out.Flush()
}

func (a *agent) reply(id json.RawMessage, result any) {
	a.write(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
}

func (a *agent) fail(id json.RawMessage, code int, msg string, data any) {
	e := map[string]any{"code": code, "message": msg}
	if data != nil {
		e["data"] = data
	}
	a.write(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
}

// request sends a request of the agent's and waits for its response, the
// whole message.
func (a *agent) request(method string, params any) json.RawMessage {
	a.mu.Lock()
	a.nextID++
	id := fmt.Sprintf(`"agent-%d"`, a.nextID)
	ch := make(chan json.RawMessage, 1)
	a.pending[id] = ch
	a.mu.Unlock()
	a.write(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	return <-ch
}

func (a *agent) update(u map[string]any) {
	a.write(map[string]any{"jsonrpc": "2.0", "method": "session/update",
		"params": map[string]any{"sessionId": "fake-session", "update": u}})
}

func text(kind, t string) map[string]any {
	return map[string]any{"sessionUpdate": kind, "content": map[string]any{"type": "text", "text": t}}
}

func (a *agent) handle(m message) {
	switch m.Method {
	case "initialize":
		// hub's decoder pairs answers with its requests by their ids, 1,
		// 2, … in order: a client that numbered them otherwise is told.
		if string(m.ID) != "1" {
			a.fail(m.ID, -32600, "Invalid request", "fake acp: initialize has id "+string(m.ID)+", want 1")
			return
		}
		if a.scenario == "stray" {
			a.raw(`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`)
			a.raw(`{"jsonrpc":"2.0","id":"zzz","result":{}}`)
			a.raw(`{"jsonrpc":"2.0","id":7,"result":{"stopReason":"refusal"}}`)
		}
		init := map[string]any{"protocolVersion": 1, "agentInfo": map[string]any{"name": "fake-acp", "version": "0.1.0"},
			"agentCapabilities": map[string]any{"loadSession": true}, "authMethods": []any{}}
		a.reply(m.ID, init)
		if a.scenario == "stray" {
			a.reply(m.ID, init) // again
		}
	case "session/new":
		if string(m.ID) != "2" {
			a.fail(m.ID, -32600, "Invalid request", "fake acp: session/new has id "+string(m.ID)+", want 2")
			return
		}
		var p struct{ Cwd string }
		_ = json.Unmarshal(m.Params, &p)
		a.cwd = p.Cwd
		if a.scenario == "auth" {
			a.fail(m.ID, -32000, "Authentication required", nil)
			return
		}
		a.reply(m.ID, map[string]any{"sessionId": "fake-session",
			"models": map[string]any{"currentModelId": "fake/model", "availableModels": []any{map[string]any{"modelId": "fake/model", "name": "Fake"}}}})
	case "session/load":
		var p struct{ Cwd string }
		_ = json.Unmarshal(m.Params, &p)
		a.cwd = p.Cwd
		a.update(text("user_message_chunk", "the old prompt"))
		a.update(text("agent_message_chunk", "the old answer"))
		a.update(map[string]any{"sessionUpdate": "usage_update", "used": 10, "size": 1000, "cost": map[string]any{"amount": 0.5, "currency": "USD"}})
		a.reply(m.ID, map[string]any{})
	case "session/set_model":
		var p struct{ ModelID string }
		_ = json.Unmarshal(m.Params, &p)
		if p.ModelID != "fake/model" {
			a.fail(m.ID, -32602, "Invalid params", map[string]any{"modelId": "unknown model " + p.ModelID})
			return
		}
		a.reply(m.ID, map[string]any{})
	case "session/prompt":
		a.prompt(m)
	default:
		if m.ID != nil {
			a.fail(m.ID, -32601, "Method not found", m.Method)
		}
	}
}

// promptText is the prompt's text.
func promptText(params json.RawMessage) string {
	var p struct {
		Prompt []struct{ Type, Text string }
	}
	_ = json.Unmarshal(params, &p)
	var b strings.Builder
	for _, c := range p.Prompt {
		b.WriteString(c.Text)
	}
	return b.String()
}

// marker returns the word after "name:" in the prompt ("" if none).
func marker(prompt, name string) string {
	_, after, ok := strings.Cut(prompt, name+":")
	if !ok {
		return ""
	}
	return strings.Fields(after + " ")[0]
}

func (a *agent) endTurn(id json.RawMessage, reason string) {
	a.reply(id, map[string]any{"stopReason": reason,
		"usage": map[string]any{"inputTokens": 800, "outputTokens": 50, "cachedReadTokens": 200, "cachedWriteTokens": 0, "thoughtTokens": 5, "totalTokens": 1055}})
}

func (a *agent) answer(id json.RawMessage) {
	for _, p := range []string{"Hello ", "from the fake ", "ACP agent."} {
		a.update(text("agent_message_chunk", p))
	}
	a.spend(id)
}

// spend reports the turn's cost, $0.0125, as ACP reports cost (the
// session's running total in usage_update), and ends the turn.
func (a *agent) spend(id json.RawMessage) {
	a.mu.Lock()
	a.spent += 0.0125
	spent := a.spent
	a.mu.Unlock()
	a.update(map[string]any{"sessionUpdate": "usage_update", "used": 1055, "size": 128000, "cost": map[string]any{"amount": spent, "currency": "USD"}})
	a.endTurn(id, "end_turn")
}

func (a *agent) prompt(m message) {
	prompt := promptText(m.Params)
	sc := a.scenario
	if sc == "prompt" || sc == "" {
		for _, w := range strings.Fields(prompt) {
			if _, ok := Scenarios[strings.TrimSuffix(w, ":")]; ok {
				sc = strings.TrimSuffix(w, ":")
				break
			}
		}
	}
	switch sc {
	case "text", "load", "stdin-eof", "stray":
		a.update(text("agent_thought_chunk", "Thinking it over."))
		a.update(map[string]any{"sessionUpdate": "plan", "entries": []any{map[string]any{"content": "answer", "priority": "high", "status": "in_progress"}}})
		a.answer(m.ID)
	case "write", "shell", "giveup", "other":
		path := filepath.Join(a.cwd, "out.txt")
		if p := marker(prompt, "write"); p != "" {
			path = p
		}
		kind, input := "edit", map[string]any{"filePath": path, "content": "written by fake acp\n"}
		if p := marker(prompt, "other"); p != "" {
			path = p
		}
		switch sc {
		case "shell", "giveup":
			kind, input = "execute", map[string]any{"command": "echo hi > " + path}
		case "other":
			kind, input = "other", map[string]any{"filepath": path, "parentDir": filepath.Dir(path)}
		}
		a.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call-1", "title": sc, "kind": kind, "status": "pending",
			"rawInput": input, "locations": []any{map[string]any{"path": path}}})
		res := a.request("session/request_permission", map[string]any{"sessionId": "fake-session",
			"toolCall": map[string]any{"toolCallId": "call-1"},
			"options": []any{
				map[string]any{"optionId": "once", "name": "Allow once", "kind": "allow_once"},
				map[string]any{"optionId": "always", "name": "Always", "kind": "allow_always"},
				map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
			}})
		var r struct {
			Result struct {
				Outcome struct{ Outcome, OptionID string } `json:"outcome"`
			} `json:"result"`
		}
		_ = json.Unmarshal(res, &r)
		if o := r.Result.Outcome; o.Outcome == "selected" && (o.OptionID == "once" || o.OptionID == "always") {
			a.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "in_progress"})
			if err := os.WriteFile(path, []byte("written by fake acp\n"), 0o644); err != nil {
				a.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "failed",
					"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": err.Error()}}}})
			} else {
				a.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "completed",
					"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "wrote " + path}}}})
			}
		} else {
			a.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "failed",
				"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "rejected: " + string(res)}}}})
			if sc == "giveup" {
				a.endTurn(m.ID, "cancelled")
				return
			}
		}
		a.answer(m.ID)
	case "unasked":
		// in_progress alone is no proof it runs (OpenCode reports that
		// before it asks): the output is.
		a.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call-1", "title": "bash", "kind": "execute", "status": "in_progress",
			"rawInput": map[string]any{"command": "touch " + filepath.Join(a.cwd, "unasked.txt")}})
		a.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call-1", "status": "in_progress",
			"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "partial output"}}}})
		time.Sleep(time.Hour) // hub stops it here
	case "burst":
		type answer struct {
			inside bool
			res    json.RawMessage
		}
		results := make(chan answer, 200)
		for i := range 200 {
			dir := a.cwd
			if i%2 == 1 {
				dir = filepath.Join(filepath.Dir(a.cwd), "elsewhere")
			}
			id := fmt.Sprintf("b%03d", i)
			go func() {
				res := a.request("session/request_permission", map[string]any{"sessionId": "fake-session",
					"toolCall": map[string]any{"toolCallId": id, "title": "edit " + id, "kind": "edit",
						"locations": []any{map[string]any{"path": filepath.Join(dir, id+".txt")}}},
					"options": []any{map[string]any{"optionId": "once", "name": "Allow", "kind": "allow_once"},
						map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"}}})
				results <- answer{dir == a.cwd, res}
			}()
		}
		wrong := 0
		for range 200 {
			r := <-results
			allowed := strings.Contains(string(r.res), `"optionId":"once"`)
			if allowed != r.inside {
				wrong++
			}
		}
		a.update(text("agent_message_chunk", fmt.Sprintf("wrong answers: %d", wrong)))
		a.endTurn(m.ID, "end_turn")
	case "reuse":
		ask := func(tc map[string]any) string {
			res := a.request("session/request_permission", map[string]any{"sessionId": "fake-session", "toolCall": tc,
				"options": []any{map[string]any{"optionId": "once", "name": "Allow", "kind": "allow_once"},
					map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"}}})
			if strings.Contains(string(res), `"optionId":"once"`) {
				return "allow"
			}
			return "reject"
		}
		first := ask(map[string]any{"toolCallId": "t1", "title": "read README", "kind": "read",
			"locations": []any{map[string]any{"path": filepath.Join(a.cwd, "README")}}})
		second := ask(map[string]any{"toolCallId": "t1", "title": "rm -rf victim", "kind": "execute",
			"rawInput": map[string]any{"command": "rm -rf " + filepath.Join(a.cwd, "victim")}})
		a.update(text("agent_message_chunk", "first: "+first+", second: "+second))
		a.endTurn(m.ID, "end_turn")
	case "ask", "ask-twice", "ask-bare", "late":
		a.ask(m, sc, prompt)
	case "flood":
		var mu sync.Mutex
		counts := map[string]int{}
		var wg sync.WaitGroup
		for i := range 1000 {
			wg.Go(func() {
				path := filepath.Join(a.cwd, fmt.Sprintf("flood-%d.txt", i))
				res := a.request("session/request_permission", map[string]any{"sessionId": "fake-session",
					"toolCall": map[string]any{"toolCallId": fmt.Sprintf("flood-%d", i), "title": path, "kind": "edit", "status": "pending",
						"locations": []any{map[string]any{"path": path}}, "rawInput": map[string]any{"filepath": path}},
					"options": permissionOptions})
				kind, option := outcome(res)
				if kind == "selected" {
					kind = option
				}
				mu.Lock()
				counts[kind]++
				mu.Unlock()
			})
		}
		wg.Wait()
		a.update(text("agent_message_chunk", fmt.Sprintf("once %d, reject %d, cancelled %d", counts["once"], counts["reject"], counts["cancelled"])))
		a.endTurn(m.ID, "end_turn")
	case "hang", "stall":
		a.mu.Lock()
		cancelled := a.cancelled
		a.mu.Unlock()
		if sc == "stall" {
			a.update(text("agent_message_chunk", "Streaming, then stalling"))
		}
		<-cancelled
		a.update(text("agent_message_chunk", "stopping"))
		a.endTurn(m.ID, "cancelled")
	case "recall":
		a.mu.Lock()
		earlier := strings.Join(a.prompts[:len(a.prompts)-1], " | ")
		a.mu.Unlock()
		a.update(text("agent_message_chunk", "earlier: "+earlier))
		a.spend(m.ID)
	case "deaf":
		signal.Ignore(syscall.SIGTERM)
		select {}
	case "grandchild":
		signal.Ignore(syscall.SIGTERM)
		cmd := exec.Command("/bin/sh", "-c", `trap "" TERM; exec sleep 300`)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err == nil {
			_ = os.WriteFile(os.Getenv(EnvPIDFile), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644)
		}
		a.update(text("agent_message_chunk", "started a child"))
		select {}
	case "crash":
		a.update(text("agent_message_chunk", "about to"))
		fmt.Fprintln(os.Stderr, "fake acp: segmentation fault (core dumped)")
		os.Exit(3)
	case "malformed":
		a.raw("this is not json")
		a.raw(`{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":"agent_mess`)
		a.raw(`{"jsonrpc":"2.0","surprise":true}`)
		a.answer(m.ID)
	case "error":
		a.update(text("agent_message_chunk", "trying"))
		a.fail(m.ID, -32603, "Internal error", map[string]any{"message": `429 {"type":"error","error":{"type":"rate_limit_error","message":"Rate limited, try again in 20s"}}`})
	case "max_tokens", "refusal":
		a.update(text("agent_message_chunk", "partial"))
		a.endTurn(m.ID, sc)
	case "read":
		path := marker(prompt, "read")
		res := a.request("fs/read_text_file", map[string]any{"sessionId": "fake-session", "path": path})
		a.update(text("agent_message_chunk", "read: "+string(res)))
		a.endTurn(m.ID, "end_turn")
	default:
		a.fail(m.ID, -32602, "Invalid params", "fake acp: no scenario in the prompt")
	}
}

// permissionOptions are OpenCode 1.18.33's options of a permission request.
var permissionOptions = []any{
	map[string]any{"optionId": "once", "name": "Allow once", "kind": "allow_once"},
	map[string]any{"optionId": "always", "name": "Always allow", "kind": "allow_always"},
	map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
}

// outcome reads a permission request's response: the outcome and the
// option chosen.
func outcome(res json.RawMessage) (kind, option string) {
	var r struct {
		Result struct {
			Outcome struct{ Outcome, OptionID string } `json:"outcome"`
		} `json:"result"`
	}
	_ = json.Unmarshal(res, &r)
	return r.Result.Outcome.Outcome, r.Result.Outcome.OptionID
}

// askWrite asks permission to write path as OpenCode 1.18.33 does (a
// tool_call of title "write", then the request with the path as its title
// and the change as a diff), and writes it when allowed; it returns the
// option chosen ("" when the outcome was cancelled).
func (a *agent) askWrite(callID, title, path string) string {
	a.update(map[string]any{"sessionUpdate": "tool_call", "toolCallId": callID, "title": "write", "kind": "edit", "status": "pending",
		"locations": []any{}, "rawInput": map[string]any{}})
	a.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": callID, "title": "write", "kind": "edit", "status": "in_progress",
		"locations": []any{map[string]any{"path": path}}, "rawInput": map[string]any{"filePath": path, "content": "approved\n"}})
	res := a.request("session/request_permission", map[string]any{"sessionId": "fake-session",
		"toolCall": map[string]any{"toolCallId": callID, "title": title, "kind": "edit", "status": "pending",
			"locations": []any{map[string]any{"path": path}}, "rawInput": map[string]any{"filepath": path},
			"content": []any{map[string]any{"type": "diff", "path": path, "oldText": "", "newText": "approved\n"}}},
		"options": permissionOptions})
	kind, option := outcome(res)
	if kind == "selected" && (option == "once" || option == "always") {
		if err := os.WriteFile(path, []byte("approved\n"), 0o644); err != nil {
			a.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": callID, "status": "failed",
				"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": err.Error()}}}})
		} else {
			a.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": callID, "status": "completed",
				"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "Wrote file successfully."}}}})
		}
		return option
	}
	why := "The user rejected permission to use this specific tool call."
	if kind != "selected" {
		why, option = "Tool execution aborted", ""
	}
	a.update(map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": callID, "status": "failed",
		"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": why}}}})
	return option
}

// ask plays the scenarios that ask permission of a client with an
// approver: ask, ask-twice, ask-bare and late.
func (a *agent) ask(m message, sc, prompt string) {
	a.mu.Lock()
	cancelled := a.cancelled
	a.mu.Unlock()
	switch sc {
	case "ask":
		path := filepath.Join(a.cwd, "asked.txt")
		if p := marker(prompt, "ask"); p != "" {
			path = p
		}
		switch option := a.askWrite("call-1", path, path); option {
		case "once", "always":
			a.update(text("agent_message_chunk", "option: "+option))
			a.endTurn(m.ID, "end_turn")
		case "":
			select {
			case <-cancelled:
				a.endTurn(m.ID, "cancelled")
			default:
				a.update(text("agent_message_chunk", "cancelled though the turn was not"))
				a.endTurn(m.ID, "end_turn")
			}
		default:
			a.endTurn(m.ID, "end_turn") // not a word more, as OpenCode after a reject
		}
	case "ask-twice":
		first := a.askWrite("call-1", "edit twice", filepath.Join(a.cwd, "twice-1.txt"))
		second := a.askWrite("call-2", "edit twice", filepath.Join(a.cwd, "twice-2.txt"))
		a.update(text("agent_message_chunk", "first: "+first+", second: "+second))
		a.endTurn(m.ID, "end_turn")
	case "ask-bare":
		res := a.request("session/request_permission", map[string]any{"sessionId": "fake-session", "options": permissionOptions})
		kind, option := outcome(res)
		a.update(text("agent_message_chunk", "outcome: "+kind+" "+option))
		a.endTurn(m.ID, "end_turn")
	case "late":
		a.mu.Lock()
		late := strings.Join(a.late, " ")
		n := len(a.late)
		a.mu.Unlock()
		a.update(text("agent_message_chunk", fmt.Sprintf("late answers: %d %s", n, late)))
		a.endTurn(m.ID, "end_turn")
	}
}
