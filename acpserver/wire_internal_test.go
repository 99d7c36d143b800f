package acpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
)

// repeatReader reads n bytes of c, made as they are read.
type repeatReader struct {
	c byte
	n int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n)]
	for i := range p {
		p[i] = r.c
	}
	r.n -= int64(len(p))
	return len(p), nil
}

// longLine reads a session/prompt request of id whose text is n bytes of
// "a", its newline, and then rest: the long line made as it is read.
func longLine(id string, n int64, rest string) io.Reader {
	return io.MultiReader(
		strings.NewReader(`{"jsonrpc":"2.0","id":`+id+`,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"`),
		&repeatReader{c: 'a', n: n},
		strings.NewReader(`"}]}}`+"\n"+rest))
}

// TestACPFilterBounded: a 64 MiB line goes through the filter lazily made,
// and the filter never holds more than MaxMessage+1 bytes of it (by its
// own account of every line buffer it holds), answers its id, and passes
// the next line on whole.
func TestACPFilterBounded(t *testing.T) {
	next := `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`
	var out bytes.Buffer
	f := newFilter(longLine("1", 64<<20, next+"\n"), &out, slog.New(slog.DiscardHandler))
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != next+"\n" {
		t.Errorf("passed on %.200q, want only the next line", got)
	}
	if f.peak > MaxMessage+1 {
		t.Errorf("the filter held %d bytes of lines at once, want at most %d", f.peak, MaxMessage+1)
	}
	var m struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Bin    string `json:"bin"`
				Reason string `json:"reason"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal(out.Bytes(), &m); err != nil {
		t.Fatalf("answer %q: %v", out.String(), err)
	}
	if m.ID != 1 || m.Error.Code != -32602 || m.Error.Data.Bin != "invalid_input" || m.Error.Data.Reason != "prompt_too_large" ||
		!strings.Contains(m.Error.Message, "the prompt is too large") {
		t.Errorf("answer = %s, want -32602 invalid_input/prompt_too_large to id 1", out.String())
	}
	if ended, err := f.Err(); !ended || err != nil {
		t.Errorf("Err() = %v, %v; want ended cleanly", ended, err)
	}

	// With a small limit: the bound is the limit (or the head kept, when
	// that is more), whatever the line.
	f = newFilter(longLine(`"x"`, 1<<20, ""), io.Discard, slog.New(slog.DiscardHandler))
	f.max = 1000
	if got, _ := io.ReadAll(f); len(got) != 0 {
		t.Errorf("passed on %d bytes of an over-long line", len(got))
	}
	if f.peak > max(1001, headSize) {
		t.Errorf("with max 1000, the filter held %d bytes at once, want at most %d", f.peak, max(1001, headSize))
	}
}

// TestACPFilterEnd: how the input ended.
func TestACPFilterEnd(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		in   func() io.Reader
		err  bool
	}{
		{"whole lines", func() io.Reader { return strings.NewReader("{\"id\":1,\"method\":\"x\"}\n") }, false},
		{"blanks after the last newline", func() io.Reader { return strings.NewReader("{\"id\":1,\"method\":\"x\"}\n  \r") }, false},
		{"nothing", func() io.Reader { return strings.NewReader("") }, false},
		{"a cut line", func() io.Reader { return strings.NewReader("{\"id\":1,\"method\":\"x\"}\n{\"id\":2,") }, true},
		{"a cut over-long line", func() io.Reader {
			return io.MultiReader(strings.NewReader(`{"id":1,"method":"session/prompt","params":"`), &repeatReader{c: 'a', n: 11 << 20})
		}, true},
		{"a read error", func() io.Reader {
			return io.MultiReader(strings.NewReader("{\"id\":1,\"method\":\"x\"}\n"), errReader{boom})
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFilter(tc.in(), io.Discard, slog.New(slog.DiscardHandler))
			_, rerr := io.ReadAll(f)
			ended, err := f.Err()
			if rerr != nil || !ended || (err != nil) != tc.err || (err != nil && !errors.Is(err, ErrConnection)) {
				t.Errorf("read %v, Err() = %v, %v; want ended, error %v (ErrConnection)", rerr, ended, err, tc.err)
			}
		})
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// TestACPScanHead: the id and method of a head cut anywhere.
func TestACPScanHead(t *testing.T) {
	for _, tc := range []struct {
		head, id, method string
		response         bool
	}{
		{`{"jsonrpc":"2.0","id":12,"method":"session/prompt","params":{"prompt":[{"text":"aaa`, `12`, "session/prompt", false},
		{`{"method":"session/new","id":"abc","params":{"x`, `"abc"`, "session/new", false},
		{`{"jsonrpc":"2.0","method":"x","params":{"a":"bbbb`, ``, "x", false},
		{`{"jsonrpc":"2.0","id":12`, ``, "", false}, // the id runs to the cut: perhaps 123
		{`{"jsonrpc":"2.0","result":{"a":1},"id":3,"x":"`, `3`, "", true},
		{`{"id":{"a":1},"method":"m","p":"`, ``, "m", false},
		{`[1,2,`, ``, "", false},
		{`not json`, ``, "", false},
	} {
		id, method, response := scanHead([]byte(tc.head))
		if string(id) != tc.id || method != tc.method || response != tc.response {
			t.Errorf("scanHead(%q) = %s, %q, %v; want %s, %q, %v", tc.head, id, method, response, tc.id, tc.method, tc.response)
		}
	}
}
