package turns

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Input is one line of a session's JSONL input. A line is one JSON object
// with exactly one of two fields:
//
//	{"prompt": "fix the failing test"}   the next turn's prompt (a non-empty string)
//	{"interrupt": true}                  interrupt the turn of the prompt before it
//
// An interrupt stops what the last prompt read before it asked for: its
// turn, when it runs; the prompt itself when its turn has not begun (the
// turns before it still running): it is dropped, never sent to the agent;
// nothing when its turn has already ended. Any other
// field, a second field, or a value of another type is an error, so that a
// typo never passes silently. Blank lines are skipped.
type Input struct {
	Prompt    string
	Interrupt bool
}

// MaxLineBytes is the longest input line Reader takes: 64 MiB, room for a
// prompt of hub's 16 MiB cap written with JSON escapes.
const MaxLineBytes = 64 << 20

// LineError is a line of the input that is not one Input.
type LineError struct {
	Line int // from 1
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// Reader reads a session's inputs, one JSON object a line. It is not safe
// for concurrent use.
type Reader struct {
	br   *bufio.Reader
	line int
}

// NewReader reads inputs from r.
func NewReader(r io.Reader) *Reader { return &Reader{br: bufio.NewReaderSize(r, 64<<10)} }

// Next returns the next input. At the end of the input it returns io.EOF;
// a line that is not one Input is a *LineError, and a read error is
// returned as it is. It blocks until a whole line (or the end) is read.
func (r *Reader) Next() (Input, error) {
	for {
		b, err := r.readLine()
		if err != nil {
			return Input{}, err
		}
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		in, err := Decode(b)
		if err != nil {
			return Input{}, &LineError{Line: r.line, Err: err}
		}
		return in, nil
	}
}

// readLine reads the next line, without its "\n", at most MaxLineBytes
// long; io.EOF only when there is none. A last line without "\n" counts.
func (r *Reader) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(line)+len(chunk) > MaxLineBytes+1 {
			r.line++
			return nil, &LineError{Line: r.line, Err: fmt.Errorf("longer than %d bytes (64 MiB), the most hub reads of a line", MaxLineBytes)}
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			r.line++
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) > 0:
			r.line++
			return line, nil
		default:
			return nil, err
		}
	}
}

// Decode reads one line of input (see Input).
func Decode(line []byte) (Input, error) {
	var fields map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(line))
	if err := dec.Decode(&fields); err != nil || dec.More() {
		var typ *json.UnmarshalTypeError
		switch {
		case err == nil:
			err = errors.New("more after it")
		case errors.As(err, &typ):
			err = fmt.Errorf("it is a JSON %s", typ.Value)
		}
		return Input{}, fmt.Errorf(`not one JSON object (want {"prompt":"…"} or {"interrupt":true}): %v`, err)
	}
	if fields == nil {
		return Input{}, errors.New(`null: want {"prompt":"…"} or {"interrupt":true}`)
	}
	var in Input
	for k, v := range fields {
		switch k {
		case "prompt":
			if json.Unmarshal(v, &in.Prompt) != nil {
				return Input{}, errors.New(`"prompt" must be a string`)
			}
			if strings.TrimSpace(in.Prompt) == "" {
				return Input{}, errors.New(`"prompt" is empty (or only white space)`)
			}
		case "interrupt":
			if json.Unmarshal(v, &in.Interrupt) != nil || !in.Interrupt {
				return Input{}, errors.New(`"interrupt" must be true`)
			}
		default:
			return Input{}, fmt.Errorf(`unknown field %q: a line holds "prompt" or "interrupt"`, k)
		}
	}
	switch {
	case len(fields) == 0:
		return Input{}, errors.New(`empty object: want {"prompt":"…"} or {"interrupt":true}`)
	case len(fields) > 1:
		return Input{}, errors.New(`"prompt" and "interrupt" on one line: give each a line of its own`)
	}
	return in, nil
}
