package fakeagent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
)

// playAppServer is the fake agent of a Codex live session (`codex
// app-server`, JSON-RPC on stdin and stdout): it answers initialize,
// thread/start or thread/resume, and turn/interrupt as codex 0.169.0 does
// (testdata/live/codex), and plays the fault once for each turn/start,
// its `codex exec --json` lines (the codex dialect) rewritten as the
// app-server notifications they correspond to (appServerLines). Lines that
// are not JSON pass through as written. A fault that exits ends the
// session with its status.
func playAppServer(d dialect, play func(*script) int, size int) int {
	out := &lockedOut{w: os.Stdout}
	reply := func(v any) {
		b, _ := json.Marshal(v)
		out.line(b)
	}
	thread := defaults(d).session
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	turns := 0
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ThreadID string `json:"threadId"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil {
			fmt.Fprintln(os.Stderr, "fake app-server: not JSON")
			continue
		}
		switch req.Method {
		case "initialize":
			reply(map[string]any{"id": req.ID, "result": map[string]any{"userAgent": "fake"}})
		case "initialized":
		case "thread/start", "thread/resume":
			if req.Params.ThreadID != "" {
				thread = req.Params.ThreadID
			}
			reply(map[string]any{"id": req.ID, "result": map[string]any{"thread": map[string]any{"id": thread}}})
		case "turn/start":
			turns++
			turn := fmt.Sprintf("fake-turn-%d", turns)
			reply(map[string]any{"id": req.ID, "result": map[string]any{"turn": map[string]any{"id": turn, "status": "inProgress"}}})
			reply(map[string]any{"method": "turn/started", "params": map[string]any{"threadId": thread, "turn": map[string]any{"id": turn}}})
			pr, pw, err := os.Pipe()
			if err != nil {
				return 98
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				translate(pr, out, thread, turn)
			}()
			code := play(&script{d: d, out: pw, size: size, v: defaults(d)})
			_ = pw.Close()
			<-done
			_ = pr.Close()
			if code != 0 {
				return code
			}
		case "turn/interrupt":
			reply(map[string]any{"id": req.ID, "result": map[string]any{}})
		default:
			if len(req.ID) > 0 {
				reply(map[string]any{"id": req.ID, "error": map[string]any{"code": -32600, "message": "unknown method " + req.Method}})
			}
		}
	}
	return 0
}

// lockedOut writes whole lines to the agent's stdout, one at a time.
type lockedOut struct {
	mu sync.Mutex
	w  io.Writer
}

func (o *lockedOut) line(b []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, _ = o.w.Write(append(b, '\n'))
}

// translate rewrites a turn's exec lines from r as app-server lines.
func translate(r io.Reader, out *lockedOut, thread, turn string) {
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		l, err := br.ReadBytes('\n')
		if len(l) > 0 {
			for _, b := range appServerLines(l, thread, turn) {
				out.line(b)
			}
		}
		if err != nil {
			return
		}
	}
}

// appServerLines is the app-server form of one `codex exec --json` line
// (without its newline): none for thread.started and turn.started (the
// session said them), an item in camelCase, the usage as
// thread/tokenUsage/updated, turn.completed and turn.failed as
// turn/completed, an error as the error notification. Anything else, JSON
// or not, as it was.
func appServerLines(l []byte, thread, turn string) [][]byte {
	raw := l
	if n := len(raw); n > 0 && raw[n-1] == '\n' {
		raw = raw[:n-1]
	}
	var ev map[string]any
	if json.Unmarshal(raw, &ev) != nil {
		return [][]byte{raw}
	}
	note := func(method string, params map[string]any) []byte {
		params["threadId"], params["turnId"] = thread, turn
		b, _ := json.Marshal(map[string]any{"method": method, "params": params})
		return b
	}
	switch ev["type"] {
	case "thread.started", "turn.started":
		return nil
	case "item.started", "item.updated", "item.completed":
		it, _ := ev["item"].(map[string]any)
		m := map[string]any{"id": it["id"]}
		status := func() {
			if s, _ := it["status"].(string); s == "in_progress" {
				m["status"] = "inProgress"
			} else {
				m["status"] = s
			}
		}
		switch it["type"] {
		case "agent_message":
			m["type"], m["text"] = "agentMessage", it["text"]
		case "reasoning":
			m["type"], m["summary"], m["content"] = "reasoning", []any{it["text"]}, []any{}
		case "command_execution":
			m["type"], m["command"], m["aggregatedOutput"], m["exitCode"] = "commandExecution", it["command"], it["aggregated_output"], it["exit_code"]
			status()
		case "file_change":
			var changes []any
			cs, _ := it["changes"].([]any)
			for _, c := range cs {
				c, _ := c.(map[string]any)
				changes = append(changes, map[string]any{"path": c["path"], "kind": map[string]any{"type": c["kind"]}, "diff": ""})
			}
			m["type"], m["changes"] = "fileChange", changes
			status()
		case "mcp_tool_call":
			m["type"], m["server"], m["tool"], m["arguments"], m["result"], m["error"] = "mcpToolCall", it["server"], it["tool"], it["arguments"], it["result"], it["error"]
			status()
		case "web_search":
			m["type"], m["query"] = "webSearch", it["query"]
		case "error":
			return [][]byte{note("warning", map[string]any{"message": it["message"]})}
		default:
			return [][]byte{raw}
		}
		method := "item/started"
		switch ev["type"] {
		case "item.completed":
			method = "item/completed"
		case "item.updated":
			return nil
		}
		return [][]byte{note(method, map[string]any{"item": m})}
	case "turn.completed":
		u, _ := ev["usage"].(map[string]any)
		total := map[string]any{"inputTokens": u["input_tokens"], "cachedInputTokens": u["cached_input_tokens"],
			"cacheWriteInputTokens": u["cache_write_input_tokens"], "outputTokens": u["output_tokens"], "reasoningOutputTokens": u["reasoning_output_tokens"]}
		return [][]byte{
			note("thread/tokenUsage/updated", map[string]any{"tokenUsage": map[string]any{"total": total, "last": total}}),
			note("turn/completed", map[string]any{"turn": map[string]any{"id": turn, "status": "completed", "error": nil}}),
		}
	case "turn.failed":
		e, _ := ev["error"].(map[string]any)
		return [][]byte{note("turn/completed", map[string]any{"turn": map[string]any{"id": turn, "status": "failed", "error": map[string]any{"message": e["message"]}}})}
	case "error":
		return [][]byte{note("error", map[string]any{"error": map[string]any{"message": ev["message"]}, "willRetry": false})}
	}
	return [][]byte{raw}
}
