package acpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/hubcli/hub/acpserver"
	"github.com/hubcli/hub/events"
)

// okBody is an OpenCode that answers "the answer".
const okBody = `echo '{"type":"step_start","sessionID":"ses_ok","part":{}}'
echo '{"type":"text","sessionID":"ses_ok","part":{"type":"text","text":"the answer"}}'
echo '{"type":"step_finish","sessionID":"ses_ok","part":{"reason":"stop","tokens":{"input":3,"output":4,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.001}}'`

// TestACPOverLongPrompt: an 11 MiB session/prompt is answered with
// invalid_input/prompt_too_large to its id, and the connection goes on:
// the next prompt runs.
func TestACPOverLongPrompt(t *testing.T) {
	t.Parallel()
	req, _ := template(t, resumed, fakeOpencode(t, okBody))
	c := serve(t, acpserver.Config{Request: req})
	s := c.session(t)
	_, err := c.prompt(t, s, strings.Repeat("a", 11<<20))
	var re *acp.RequestError
	if !errors.As(err, &re) || re.Code != -32602 || !strings.Contains(re.Message, "over the 10 MiB limit") ||
		!strings.Contains(re.Message, "the prompt is too large") {
		t.Fatalf("an 11 MiB session/prompt = %v, want invalid params: over the 10 MiB limit, the prompt is too large", err)
	}
	var data events.Error
	if b, _ := json.Marshal(re.Data); json.Unmarshal(b, &data) != nil || data.Bin != events.BinInvalidInput || data.Reason != events.ReasonPromptTooLarge {
		t.Errorf("error data = %v, want invalid_input/prompt_too_large", re.Data)
	}
	if resp, err := c.prompt(t, s, "hi"); err != nil || resp.StopReason != acp.StopReasonEndTurn || c.cl.text() != "the answer" {
		t.Errorf("the next session/prompt = %+v, %v, text %q; want end_turn, the answer", resp, err, c.cl.text())
	}
	started := 0
	for _, ev := range all(c) {
		if ev.Type() == events.TypeRunStarted {
			started++
		}
	}
	if started != 1 {
		t.Errorf("%d runs started, want one (the normal prompt's)", started)
	}
}

// raw is a Serve driven line by line.
type raw struct {
	w       *io.PipeWriter
	answers chan map[string]any
	done    chan error
	once    sync.Once
	err     error // what Serve returned, once closed
}

// rawServe starts Serve on in (then the pipe raw writes to) and reads its
// answers.
func rawServe(t *testing.T, cfg acpserver.Config, in io.Reader) *raw {
	t.Helper()
	pr, pw := io.Pipe()
	outR, outW := io.Pipe()
	r := &raw{w: pw, answers: make(chan map[string]any, 100), done: make(chan error, 1)}
	if in == nil {
		in = strings.NewReader("")
	}
	go func() {
		r.done <- acpserver.Serve(context.Background(), cfg, io.MultiReader(in, pr), outW)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("Serve wrote %q: not a JSON object", sc.Text())
				continue
			}
			r.answers <- m
		}
		close(r.answers)
	}()
	t.Cleanup(func() { r.close() })
	return r
}

// send writes line and returns the answer.
func (r *raw) send(t *testing.T, line string) map[string]any {
	t.Helper()
	go r.w.Write([]byte(line + "\n"))
	return r.next(t)
}

// answerWait bounds the wait for an answer: a hang detector, not a speed
// check. A 10 MiB message decoded under the race detector took over 60 s
// with both cores busy (TestACPPromptAtLimit, load ~20); the test's own
// -timeout still bounds the whole.
const answerWait = 5 * time.Minute

func (r *raw) next(t *testing.T) map[string]any {
	t.Helper()
	select {
	case m := <-r.answers:
		return m
	case <-time.After(answerWait):
		t.Fatalf("no answer within %s", answerWait)
		return nil
	}
}

// close ends the input cleanly and returns what Serve returned.
func (r *raw) close() error {
	r.once.Do(func() {
		r.w.Close()
		r.err = <-r.done
	})
	return r.err
}

// errorOf returns the answer's id (as JSON) and error code.
func errorOf(t *testing.T, m map[string]any) (string, int) {
	t.Helper()
	id, _ := json.Marshal(m["id"])
	e, ok := m["error"].(map[string]any)
	if !ok {
		return string(id), 0
	}
	code, _ := e["code"].(float64)
	return string(id), int(code)
}

// TestACPMalformed: what is not a JSON-RPC message is answered with an
// error to id null (to its id when it has one that is valid), and the
// valid messages around it are answered as ever.
func TestACPMalformed(t *testing.T) {
	t.Parallel()
	req, _ := template(t, "opencode", "opencode")
	r := rawServe(t, acpserver.Config{Request: req}, nil)
	initialize := `{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":1}}`
	for _, tc := range []struct {
		line, id string
		code     int
	}{
		{strings.Replace(initialize, "%s", `"first"`, 1), `"first"`, 0},
		{`{not json`, "null", -32700},
		{`[1,2]`, "null", -32600},
		{`[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}]`, "null", -32600},
		{`42`, "null", -32600},
		{`"initialize"`, "null", -32600},
		{`{}`, "null", -32600},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}`, "null", -32600},
		{`{"jsonrpc":"2.0","id":7,"method":5}`, "7", -32600},
		{strings.Replace(initialize, "%s", "8", 1), "8", 0},
		// Over the limit, whatever the method: the id of its head.
		{`{"jsonrpc":"2.0","id":"big","method":"session/new","params":{"cwd":"` + strings.Repeat("x", 10<<20) + `"}}`, `"big"`, -32600},
		// The id after the long params: not found, null.
		{`{"jsonrpc":"2.0","method":"session/prompt","params":{"x":"` + strings.Repeat("x", 10<<20) + `"},"id":9}`, "null", -32602},
		{strings.Replace(initialize, "%s", "10", 1), "10", 0},
	} {
		m := r.send(t, tc.line)
		if id, code := errorOf(t, m); id != tc.id || code != tc.code {
			t.Errorf("%.60s… answered id %s, error %d; want id %s, error %d (%v)", tc.line, id, code, tc.id, tc.code, m)
		}
		if tc.code == 0 && m["result"] == nil {
			t.Errorf("%.60s… answered %v, want a result", tc.line, m)
		}
	}
	// Blank lines are not messages: nothing to answer.
	go r.w.Write([]byte("\n  \r\n"))
	if m := r.send(t, strings.Replace(initialize, "%s", "11", 1)); m["id"] != float64(11) {
		t.Errorf("after blank lines: answer %v, want id 11's", m)
	}
	if err := r.close(); err != nil {
		t.Errorf("Serve = %v after a clean end, want nil", err)
	}
}

// TestACPPromptAtLimit: a session/prompt of exactly MaxMessage bytes is the
// SDK's (it answers: unknown session); one byte more is hub's
// (prompt_too_large).
func TestACPPromptAtLimit(t *testing.T) {
	t.Parallel()
	req, _ := template(t, "opencode", "opencode")
	r := rawServe(t, acpserver.Config{Request: req}, nil)
	line := func(id string, n int) string {
		head := `{"jsonrpc":"2.0","id":` + id + `,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"`
		tail := `"}]}}`
		return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
	}
	m := r.send(t, line("1", acpserver.MaxMessage))
	e, _ := m["error"].(map[string]any)
	if id, code := errorOf(t, m); id != "1" || code != -32602 || !strings.Contains(e["data"].(map[string]any)["error"].(string), "unknown session") {
		t.Errorf("a prompt of MaxMessage bytes: answer %.300v, want the SDK's unknown session", m)
	}
	m = r.send(t, line("2", acpserver.MaxMessage+1))
	e, _ = m["error"].(map[string]any)
	if id, code := errorOf(t, m); id != "2" || code != -32602 || !strings.Contains(e["message"].(string), "prompt_too_large") {
		t.Errorf("a prompt of MaxMessage+1 bytes: answer %.300v, want prompt_too_large", m)
	}
}

// TestACPHugeLine: a 64 MiB line (made as it is read) does not grow the heap
// to its size, and the connection then answers as ever. Not parallel:
// the heap is this test's alone.
func TestACPHugeLine(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(10)) // garbage goes at once: the heap in use is what is held
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapInuse

	const size = 64 << 20
	in := io.MultiReader(
		strings.NewReader(`{"jsonrpc":"2.0","id":"huge","method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"`),
		&repeatReader{n: size},
		strings.NewReader(`"}]}}`+"\n"))
	peak := make(chan uint64)
	stop := make(chan struct{})
	go func() {
		var most uint64
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			most = max(most, ms.HeapInuse)
			select {
			case <-stop:
				peak <- most
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	req, _ := template(t, "opencode", "opencode")
	r := rawServe(t, acpserver.Config{Request: req}, in)
	m := r.next(t)
	close(stop)
	grown := <-peak - base
	if id, code := errorOf(t, m); id != `"huge"` || code != -32602 {
		t.Errorf("the 64 MiB prompt: answer %v, want -32602 to id \"huge\"", m)
	}
	if grown > size/2 {
		t.Errorf("the heap in use grew by %d MiB for a 64 MiB line, want far less", grown>>20)
	}
	t.Logf("heap in use grew by %.1f MiB", float64(grown)/(1<<20))
	if m := r.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`); m["result"] == nil {
		t.Errorf("initialize after the 64 MiB line: %v, want a result", m)
	}
}

// repeatReader reads n bytes of "a", made as they are read.
type repeatReader struct{ n int }

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(len(p), r.n)]
	for i := range p {
		p[i] = 'a'
	}
	r.n -= len(p)
	return len(p), nil
}

// TestACPAbnormalEnd: an input cut in the middle of a message, or a failed
// read, ends Serve with ErrConnection; a clean end after whole lines with
// nil.
func TestACPAbnormalEnd(t *testing.T) {
	t.Parallel()
	req, _ := template(t, "opencode", "opencode")
	for name, in := range map[string]io.Reader{
		"cut":        strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n" + `{"jsonrpc":"2.0","id":2,`),
		"read error": io.MultiReader(strings.NewReader("\n"), errReader{}),
	} {
		err := acpserver.Serve(context.Background(), acpserver.Config{Request: req}, in, io.Discard)
		if !errors.Is(err, acpserver.ErrConnection) {
			t.Errorf("%s: Serve = %v, want ErrConnection", name, err)
		}
	}
	err := acpserver.Serve(context.Background(), acpserver.Config{Request: req},
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`+"\n"), io.Discard)
	if err != nil {
		t.Errorf("a clean end: Serve = %v, want nil", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("read failed") }
