package acp

import (
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
)

// liveStdin plays the agent's stdin for a live session without a process:
// it records each message's method (one Write a message, or hub's own
// session/cancel line), answers initialize at once, and session/new once
// newAnswer is closed (through the Live's Line, as the run's goroutine
// would: one at a time).
type liveStdin struct {
	l         *live
	newAnswer chan struct{}
	line      sync.Mutex // Line's callers, one at a time

	mu      sync.Mutex
	methods []string
	wrote   chan string
}

func (r *liveStdin) Write(b []byte) (int, error) {
	m := gjson.ParseBytes(b)
	method := m.Get("method").Str
	r.mu.Lock()
	r.methods = append(r.methods, method)
	r.mu.Unlock()
	id := m.Get("id").Raw
	switch method {
	case "initialize":
		go r.answer(`{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":1}}`)
	case "session/new":
		go func() {
			<-r.newAnswer
			r.answer(`{"jsonrpc":"2.0","id":` + id + `,"result":{"sessionId":"s1"}}`)
		}()
	}
	r.wrote <- method
	return len(b), nil
}

func (r *liveStdin) Close() error { return nil }

// answer gives the Live one of the agent's lines.
func (r *liveStdin) answer(line string) []events.Body {
	r.line.Lock()
	defer r.line.Unlock()
	out, _, _ := r.l.Line(nil, []byte(line))
	return out
}

func (r *liveStdin) written() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.methods, " ")
}

func newLive(t *testing.T) (*live, *liveStdin) {
	t.Helper()
	l := NewLive(adapters.Request{Cwd: t.TempDir()}, LiveOptions{}).(*live)
	l.NewTurnDecoder()
	r := &liveStdin{l: l, newAnswer: make(chan struct{}), wrote: make(chan string, 16)}
	l.Open(r)
	t.Cleanup(l.Close)
	return l, r
}

// TestLiveInterruptBeforePrompt: an interrupt asked while the turn's Send
// waits for the session's setup (the first turn) is sent right after the
// prompt, never before it (a session/cancel ahead of the prompt would
// cancel nothing, and the turn would run to its end); once the prompt is
// answered, an interrupt sends nothing.
func TestLiveInterruptBeforePrompt(t *testing.T) {
	t.Parallel()
	l, r := newLive(t)
	sent := make(chan error, 1)
	go func() { sent <- l.Send("hello") }()
	waitFor(r.wrote, "session/new")
	for { // Send has begun its turn
		l.mu.Lock()
		gen := l.gen
		l.mu.Unlock()
		if gen == 1 {
			break
		}
	}
	if err := l.Interrupt(); err != nil {
		t.Fatal(err)
	}
	close(r.newAnswer)
	if err := <-sent; err != nil {
		t.Fatalf("Send: %v", err)
	}
	waitFor(r.wrote, "session/cancel")
	if got, want := r.written(), "initialize session/new session/prompt session/cancel"; got != want {
		t.Errorf("the agent's stdin got %q, want %q", got, want)
	}
	out := r.answer(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}`)
	if len(out) != 0 {
		t.Errorf("the answer's events: %+v", out)
	}
	if !l.cur.Answered() {
		t.Error("the turn's decoder did not take the answer to the prompt (id 3)")
	}
	_ = l.Interrupt()
	l.cancelTurn(1) // as the goroutine Interrupt starts would, at once
	if got, want := r.written(), "initialize session/new session/prompt session/cancel"; got != want {
		t.Errorf("after the answer the agent's stdin got %q, want %q (no session/cancel)", got, want)
	}
}

// TestLiveNextTurnIDs: each turn's decoder takes the answer to its own
// prompt, by the id the prompt's write gave it: a repeat of the last
// turn's answer is no answer to the next prompt.
func TestLiveNextTurnIDs(t *testing.T) {
	t.Parallel()
	l, r := newLive(t)
	close(r.newAnswer)
	for turn, id := range []string{"3", "4"} {
		if err := l.Send("hello"); err != nil {
			t.Fatal(err)
		}
		waitFor(r.wrote, "session/prompt")
		if turn == 1 {
			r.answer(`{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}`) // the last turn's, again
			if l.cur.Answered() {
				t.Fatal("turn 2 ended at turn 1's answer")
			}
		}
		r.answer(`{"jsonrpc":"2.0","id":` + id + `,"result":{"stopReason":"end_turn"}}`)
		if !l.cur.Answered() {
			t.Fatalf("turn %d did not end at the answer to its prompt (id %s)", turn+1, id)
		}
		l.NewTurnDecoder()
	}
}
