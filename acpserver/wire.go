package acpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	acp "github.com/coder/acp-go-sdk"

	"github.com/hubcli/hub/events"
)

// MaxMessage is the longest client message (a line without its newline)
// Serve takes: the ACP SDK reads a line of at most 10 MiB, its newline
// included. A longer one is skipped, read in bounded chunks, and answered
// with an error (see Serve).
const MaxMessage = 10<<20 - 1

// ErrConnection is wrapped by the error Serve returns when the connection
// ended abnormally: the input ended in the middle of a message, reading it
// failed, or the connection stopped reading on its own.
var ErrConnection = errors.New("acpserver: the ACP connection ended abnormally")

const (
	// chunkSize is how much of the input the filter reads at once.
	chunkSize = 64 << 10
	// headSize is how much of an over-long message the filter keeps to
	// find its id and method.
	headSize = 4 << 10
	// keepSize is the largest line buffer kept for the next line; a
	// bigger one (a message of megabytes) is dropped once passed on.
	keepSize = 1 << 20
)

// lockedWriter is the one writer under the SDK's messages and the filter's
// answers: each Write (one whole message and its newline) is written
// alone.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// filter stands between the client's input and the SDK: it reads the input
// in chunks of chunkSize and passes on, whole, each line of at most max
// bytes that is a JSON-RPC message. It answers itself, on out, what the
// SDK would drop without a word: a line that is not JSON (-32700, id
// null), JSON that is not a message object (-32600, id null: a batch, a
// number, an object with neither method nor id or with an id neither a
// string nor a number), and a line longer than max, which it skips keeping
// only its first headSize bytes (-32600, or -32602 for a session/prompt,
// answering the id found in that head; see overLong). It never holds more
// than max+1 bytes of a line (headSize, if more), whatever the line's
// length.
//
// To the SDK, the input always ends in io.EOF; how it really ended is
// Err's.
type filter struct {
	src    io.Reader
	out    io.Writer
	logger *slog.Logger
	max    int
	start  <-chan struct{} // the first Read waits until it is closed (nil: no wait)

	buf     []byte // the chunk read, buf[r:w] not yet looked at
	r, w    int
	srcErr  error  // the input's error (io.EOF at its end), once buf is used up
	line    []byte // the line so far (at most max bytes), or the head of an over-long one
	long    int64  // the length so far of the over-long line being skipped; 0 when none
	pending []byte // a whole line and its newline, given to the SDK up to pending[given:]
	given   int
	peak    int // the most bytes of lines held at once (line + pending)

	mu    sync.Mutex
	ended bool  // the input ended (then err says how)
	err   error // nil for a clean end after whole lines
}

func newFilter(src io.Reader, out io.Writer, logger *slog.Logger) *filter {
	return &filter{src: src, out: out, logger: logger, max: MaxMessage, buf: make([]byte, chunkSize)}
}

// Read gives the SDK the next whole lines that pass.
func (f *filter) Read(p []byte) (int, error) {
	if f.start != nil {
		<-f.start
		f.start = nil
	}
	for len(f.pending) == 0 {
		if f.r == f.w {
			if f.done() {
				return 0, io.EOF
			}
			if f.srcErr != nil {
				f.end(f.srcErr)
				return 0, io.EOF
			}
			f.r, f.w = 0, 0
			f.w, f.srcErr = f.src.Read(f.buf)
			continue
		}
		f.scan()
	}
	n := copy(p, f.pending[f.given:])
	f.given += n
	if f.given == len(f.pending) {
		if cap(f.pending) <= keepSize && f.line == nil {
			f.line = f.pending[:0] // the next line's buffer
		}
		f.pending, f.given = nil, 0
	}
	return n, nil
}

// scan takes buf[r:w] up to and including its first newline into the
// current line, and handles the line if it is whole.
func (f *filter) scan() {
	chunk := f.buf[f.r:f.w]
	i := bytes.IndexByte(chunk, '\n')
	whole := i >= 0
	if whole {
		chunk = chunk[:i]
		f.r += i + 1
	} else {
		f.r = f.w
	}
	switch {
	case f.long > 0:
		f.long += int64(len(chunk))
		f.keepHead(chunk)
	case len(f.line)+len(chunk) > f.max:
		// Over-long: from now on, only its head is kept.
		f.long = int64(len(f.line) + len(chunk))
		head := make([]byte, 0, headSize)
		head = append(head, f.line[:min(len(f.line), headSize)]...)
		f.line = head
		f.keepHead(chunk)
	default:
		f.line = grow(f.line, len(chunk)+1, f.max+1) // +1: the newline pending adds
		f.line = append(f.line, chunk...)
	}
	f.peak = max(f.peak, cap(f.line)+cap(f.pending))
	if !whole {
		return
	}
	if f.long > 0 {
		f.overLong(f.line, f.long)
		f.line, f.long = f.line[:0], 0
		return
	}
	if f.check(f.line) {
		f.pending = append(f.line, '\n') // line has room for it: grow's bound is max+1
		f.line = nil
	} else if cap(f.line) > keepSize {
		f.line = nil
	} else {
		f.line = f.line[:0]
	}
	f.peak = max(f.peak, cap(f.line)+cap(f.pending))
}

// keepHead appends to the head of an over-long line what fits of b.
func (f *filter) keepHead(b []byte) {
	if room := headSize - len(f.line); room > 0 {
		f.line = append(f.line, b[:min(room, len(b))]...)
	}
}

// grow returns b with room for n more bytes, its capacity at most limit
// (when len(b)+n fits in it).
func grow(b []byte, n, limit int) []byte {
	if len(b)+n <= cap(b) {
		return b
	}
	c := min(max(2*cap(b), len(b)+n, 512), max(limit, len(b)+n))
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}

// done reports whether the input has ended.
func (f *filter) done() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended
}

// end records how the input ended: err from the input's Read, io.EOF for
// its end. An end in the middle of a line (but for blanks) is an error.
func (f *filter) end(err error) {
	switch {
	case !errors.Is(err, io.EOF):
		err = fmt.Errorf("%w: reading the client's messages: %v", ErrConnection, err)
	case f.long > 0:
		err = fmt.Errorf("%w: the input ended in the middle of a message (%d bytes after the last newline)", ErrConnection, f.long)
	case len(bytes.TrimSpace(f.line)) > 0:
		err = fmt.Errorf("%w: the input ended in the middle of a message (%d bytes after the last newline)", ErrConnection, len(f.line))
	default:
		err = nil
	}
	f.mu.Lock()
	f.ended, f.err = true, err
	f.mu.Unlock()
	f.line = nil
}

// Err reports how the input ended: ended false while it has not; err nil
// for a clean end after whole lines.
func (f *filter) Err() (ended bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended, f.err
}

// message is what the filter looks at in a line: the fields the SDK
// decodes into types (a line whose jsonrpc, method or error does not
// decode so is dropped by the SDK), and the id.
type message struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id"`
	Method  string            `json:"method"`
	Error   *acp.RequestError `json:"error"`
}

// check reports whether line is to be passed on to the SDK; when it is
// not, it has been answered (or, blank, ignored).
func (f *filter) check(line []byte) bool {
	line = bytes.TrimSpace(line)
	switch {
	case len(line) == 0:
		return false
	case !json.Valid(line):
		f.reply(nil, acp.NewParseError(badRequest("the message is not JSON: hub acp takes one JSON-RPC message a line")), "a message that is not JSON", line)
		return false
	case line[0] == '[':
		f.reply(nil, acp.NewInvalidRequest(badRequest("the message is a batch (a JSON array): hub acp takes one JSON-RPC message a line, not batches")), "a batch", line)
		return false
	case line[0] != '{':
		f.reply(nil, acp.NewInvalidRequest(badRequest("the message is not a JSON object: a JSON-RPC message is one")), "a message that is not an object", line)
		return false
	}
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		var id json.RawMessage
		var ids struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(line, &ids) == nil && validID(ids.ID) {
			id = ids.ID
		}
		f.reply(id, acp.NewInvalidRequest(badRequest("the message is not a JSON-RPC message: %v", err)), "an invalid message", line)
		return false
	}
	null := m.ID == nil || bytes.Equal(m.ID, []byte("null"))
	switch {
	case !null && !validID(m.ID):
		f.reply(nil, acp.NewInvalidRequest(badRequest("the message's id is %.40s: a JSON-RPC id is a string or a number", m.ID)), "an invalid id", line)
		return false
	case null && m.Method == "":
		f.reply(nil, acp.NewInvalidRequest(badRequest("the message has neither a method nor an id")), "a message with neither method nor id", line)
		return false
	}
	return true
}

// overLong answers a message of n bytes, more than max, of which head is
// the start: the id and method found in head (see scanHead) say whom to
// answer and how. A response (a result or an error before the id) is not
// answered; an id not found in head is answered as null.
func (f *filter) overLong(head []byte, n int64) {
	id, method, response := scanHead(head)
	f.logger.Warn("skipped a message over the size limit", "bytes", n, "limit", f.max+1, "method", method, "id", string(id))
	if response {
		return
	}
	what := "message"
	if method != "" {
		what = method + " message"
	}
	msg := fmt.Sprintf("the %s is %d bytes, over the 10 MiB limit of hub acp (%d bytes a message, its newline included)", what, n, f.max+1)
	var rerr *acp.RequestError
	if method == acp.AgentMethodSessionPrompt {
		e := events.NewError(events.BinInvalidInput, events.ReasonPromptTooLarge,
			"send a shorter prompt, or give large files as resource links for the agent to read",
			"%s: the prompt is too large", msg)
		rerr = &acp.RequestError{Code: -32602, Message: errorMessage(e), Data: e}
	} else {
		e := events.NewError(events.BinInvalidInput, events.ReasonBadRequest, "send smaller messages", "%s", msg)
		rerr = &acp.RequestError{Code: -32600, Message: errorMessage(e), Data: e}
	}
	f.send(id, rerr)
}

// scanHead reads what it can of a JSON object's head (its first bytes, cut
// anywhere): the id (a string or a number) and method among the members
// before the cut, and whether a result or error member came before the id
// (a response). A value that runs to the cut is not taken.
func scanHead(head []byte) (id json.RawMessage, method string, response bool) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, "", false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return id, method, response
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil || dec.InputOffset() >= int64(len(head)) {
			return id, method, response // the value runs to the cut
		}
		switch t {
		case "id":
			if validID(v) {
				id = v
			}
		case "method":
			_ = json.Unmarshal(v, &method)
		case "result", "error":
			if id == nil {
				response = true
			}
		}
	}
	return id, method, response
}

// validID reports whether id is a JSON-RPC id hub answers: a string or a
// number.
func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	switch c := id[0]; {
	case c == '"', c == '-', c >= '0' && c <= '9':
		return true
	}
	return false
}

// badRequest is the data of the filter's answers: hub's error object
// (invalid_input/bad_request), as Outcome's errors carry.
func badRequest(format string, args ...any) *events.Error {
	return events.NewError(events.BinInvalidInput, events.ReasonBadRequest, "send one JSON-RPC 2.0 message (a JSON object) a line", format, args...)
}

// reply answers a malformed line with rerr, and logs it.
func (f *filter) reply(id json.RawMessage, rerr *acp.RequestError, what string, line []byte) {
	f.logger.Warn("answered "+what+" with an error", "code", rerr.Code, "line", fmt.Sprintf("%.200s", line))
	f.send(id, rerr)
}

// send writes a JSON-RPC error answer to id (nil: null) on out, in one
// Write.
func (f *filter) send(id json.RawMessage, rerr *acp.RequestError) {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string            `json:"jsonrpc"`
		ID      json.RawMessage   `json:"id"`
		Error   *acp.RequestError `json:"error"`
	}{"2.0", id, rerr})
	if err != nil {
		f.logger.Error("encoding an error answer", "err", err)
		return
	}
	_, _ = f.out.Write(append(b, '\n'))
}
