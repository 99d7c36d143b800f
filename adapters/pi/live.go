package pi

import (
	"fmt"
	"io"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
	pinorm "github.com/hubcli/hub/normalize/pi"
)

var _ adapters.Sessioner = (*Adapter)(nil)

// SessionCommand implements adapters.Sessioner. The argv is Command's with
// --mode rpc in place of --print --mode json, and no prompt: pi then reads
// commands on stdin, one JSON object a line, and answers each prompt with
// its agent events, the turn ending at agent_end, in one process until its
// stdin closes (0.73.1, recorded against mockllm in testdata/live/pi; its
// docs/rpc.md).
func (*Adapter) SessionCommand(req adapters.Request, inst adapters.Install) (adapters.Command, error) {
	var files adapters.TempFiles
	args, err := runArgs(req, &files)
	if err != nil {
		return adapters.WithTempFiles(adapters.Command{}, err, &files)
	}
	return adapters.WithTempFiles(adapters.Command{Path: inst.Path, Args: append([]string{"--mode", "rpc"}, args...)}, nil, &files)
}

// NewLive implements adapters.Sessioner.
func (*Adapter) NewLive(req adapters.Request) adapters.Live {
	return &live{model: req.Model, failFast: !req.NoFailFast, gate: gated(req)}
}

// live is hub's side of pi's RPC mode:
//
//	{"id":"hub-1","type":"prompt","message":"…"}   → {"id":"hub-1","type":"response","command":"prompt","success":true}, then the agent events
//	{"type":"abort"}                               → the turn's message_end (stopReason aborted), agent_end, then {"type":"response","command":"abort",…}
//	{"id":"hub-session","type":"get_session_stats"} → its sessionId
//
// pi prints no session header in RPC mode: the session id comes from
// get_session_stats, asked at once. An extension's dialog
// (extension_ui_request) is answered at once, cancelled, unless it is hub's
// approval gate's (Approvals). A prompt pi refuses (success false: it
// is still busy) ends the turn with pi's error. pi splits its stdin on
// "\n" only (JSON escapes U+2028), and exits at once when stdin closes,
// even in a turn (hub closes it only at the session's end).
type live struct {
	model    string
	failFast bool

	w     adapters.LineWriter     // the agent's stdin
	early adapters.EarlyInterrupt // sent again at the turn's agent_start
	mu    sync.Mutex              // n
	n     int                     // prompts sent, for their ids

	refused string // the running turn's prompt was refused (run goroutine only): pi's error

	gate bool                                             // the command loads hub's approval gate (gated)
	ask  func(adapters.ToolCall, func(adapters.Decision)) // the approver's (Approvals), nil without one
}

func (l *live) Open(stdin io.WriteCloser) {
	l.w.Open(stdin)
	go func() { _ = l.w.Write(map[string]any{"id": "hub-session", "type": "get_session_stats"}) }()
}

func (l *live) Check(prompt string) error { return adapters.CheckPrompt(Name, prompt, MaxPromptBytes) }

func (l *live) Send(prompt string) error {
	l.mu.Lock()
	l.n++
	id := fmt.Sprintf("hub-%d", l.n)
	l.mu.Unlock()
	l.early.Sent()
	return l.w.Write(map[string]any{"id": id, "type": "prompt", "message": prompt})
}

// Interrupt sends abort. pi 0.73.1 acknowledges an abort that comes before
// the turn's agent_start and does nothing (the turn runs to its end:
// recorded in testdata/live/pi/edge-misc): such an abort is sent again at
// agent_start.
func (l *live) Interrupt() error {
	l.early.Asked()
	l.abort()
	return nil
}

// abort sends abort, without waiting for the write.
func (l *live) abort() {
	go func() { _ = l.w.Write(map[string]any{"type": "abort"}) }()
}

func (l *live) Close() { l.w.Close() }

func (l *live) Line(dst []events.Body, line []byte) ([]events.Body, bool, bool) {
	switch gjson.GetBytes(line, "type").Str {
	case "response":
	case "extension_ui_request":
		if !gjson.ValidBytes(line) {
			return dst, false, false // a torn line: the decoder reports it
		}
		return dst, l.uiRequest(gjson.ParseBytes(line)), false
	case "agent_start":
		if l.early.Began() {
			l.abort()
		}
		return dst, false, false
	default:
		return dst, false, false
	}
	r := gjson.ParseBytes(line)
	switch r.Get("command").Str {
	case "get_session_stats":
		if id := r.Get("data.sessionId").Str; id != "" && r.Get("id").Str == "hub-session" {
			var model *string
			if l.model != "" {
				m := l.model
				model = &m
			}
			dst = append(dst, events.SessionStarted{SessionID: id, Model: model})
		}
	case "prompt":
		if !r.Get("success").Bool() {
			l.refused = r.Get("error").Str
			return dst, true, true
		}
	}
	return dst, true, false
}

func (l *live) NewTurnDecoder() normalize.Decoder { return pinorm.New(l.model, l.failFast) }

func (l *live) EndTurn(o normalize.Outcome) normalize.Outcome {
	if l.refused != "" {
		o = normalize.Outcome{Error: events.NewError(events.BinProtocol, events.ReasonMalformed,
			"send the next prompt once the last turn ended", "pi refused the prompt: %s", normalize.Shorten(l.refused, 500))}
		l.refused = ""
	}
	return o
}
