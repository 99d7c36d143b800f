package normalize_test

import (
	"bytes"
	"slices"
	"testing"

	"github.com/hubcli/hub/normalize"
)

// TestPieces: a line split where a terminal writes over it; shown is the
// piece Clean keeps.
func TestPieces(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		want  []string
		shown int
	}{
		{`{"a":1}`, []string{`{"a":1}`}, 0},
		{``, nil, -1},
		{"\r\r", nil, -1},
		// Records separated by a bare CR: each its own piece.
		{"{\"a\":1}\r{\"b\":2}\r{\"c\":3}", []string{`{"a":1}`, `{"b":2}`, `{"c":3}`}, 2},
		{"{\"a\":1}\r{\"b\":2}\r", []string{`{"a":1}`, `{"b":2}`}, 1},
		// A spinner before the record.
		{"\r⠋ working\r{\"type\":\"x\"}", []string{"⠋ working", `{"type":"x"}`}, 1},
		{"\x1b[2K⠋ working\x1b[1G{\"a\":1}", []string{"⠋ working", `{"a":1}`}, 1},
		{"\x1b[2K Thinking \x1b[0G\r{\"a\":1}", []string{"Thinking", `{"a":1}`}, 1},
		// Escapes that do not overwrite are removed, not split at.
		{"\x1b[32m{\"a\":\x1b[0m1}", []string{`{"a":1}`}, 0},
		// An erase after the last piece: nothing shown.
		{"{\"a\":1}\x1b[2K", []string{`{"a":1}`}, -1},
		{"50%\r", []string{"50%"}, 0},
		{"\xef\xbb\xbf{\"a\":1}\r{\"b\":2}", []string{`{"a":1}`, `{"b":2}`}, 1},
		// A CR inside an OSC sequence is part of it.
		{"\x1b]0;a\rb\x07{\"a\":1}", []string{`{"a":1}`}, 0},
	}
	for _, tt := range tests {
		got, shown := normalize.Pieces(nil, []byte(tt.in))
		var gs []string
		for _, p := range got {
			gs = append(gs, string(p))
		}
		if !slices.Equal(gs, tt.want) || shown != tt.shown {
			t.Errorf("Pieces(%q) = %q, %d; want %q, %d", tt.in, gs, shown, tt.want, tt.shown)
		}
	}
}

// FuzzPieces: on any line without a newline (what the framer gives), the
// piece Pieces says is shown is what Clean keeps; no piece holds a
// carriage return, an ESC byte, or the whitespace around it; and every JSON
// record of the line written between carriage returns is a piece, whole.
func FuzzPieces(f *testing.F) {
	for _, s := range []string{
		"{\"a\":1}\r{\"b\":2}", "\r⠋ working\r{\"type\":\"x\"}", "\x1b[2K\x1b[1G\x1b[32m{}", "50%\r", "\x1b]0;t\r\x07x",
		"\xef\xbb\xbf{}\r \x00", "{\"a\":1}\x1b[2K", "\x1b[", "a\x1b[0Gb\rc",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return
		}
		pieces, shown := normalize.Pieces(nil, line)
		clean := normalize.Clean(line)
		switch {
		case shown < -1 || shown >= len(pieces):
			t.Fatalf("Pieces(%q): shown %d of %d pieces", line, shown, len(pieces))
		case shown == -1 && len(clean) != 0:
			t.Fatalf("Pieces(%q) shows nothing, Clean = %q", line, clean)
		case shown >= 0 && !bytes.Equal(pieces[shown], clean):
			t.Fatalf("Pieces(%q) shows %q, Clean = %q", line, pieces[shown], clean)
		}
		for _, p := range pieces {
			if len(p) == 0 || bytes.ContainsAny(p, "\r\x1b") || bytes.Trim(p, " \t\v\f\x00") == nil || len(bytes.Trim(p, " \t\v\f\x00")) != len(p) {
				t.Fatalf("Pieces(%q) has piece %q", line, p)
			}
		}
		// Records joined by CRs come back one piece each.
		if bytes.IndexByte(line, 0x1b) < 0 && bytes.IndexByte(line, '\r') < 0 && normalize.Valid(line) && len(bytes.TrimSpace(line)) > 0 {
			joined := bytes.Join([][]byte{line, line}, []byte("\r"))
			ps, _ := normalize.Pieces(nil, joined)
			want := bytes.Trim(bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")), " \t\v\f\x00")
			if len(ps) != 2 || !bytes.Equal(ps[1], bytes.Trim(line, " \t\v\f\x00")) || !bytes.Equal(ps[0], want) {
				t.Fatalf("Pieces(%q) = %q, want the record twice", joined, ps)
			}
		}
	})
}
