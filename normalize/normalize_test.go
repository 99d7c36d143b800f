package normalize_test

import (
	"testing"

	"github.com/hubcli/hub/normalize"
)

func TestClean(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{`{"a":1}`, `{"a":1}`},
		{"\xef\xbb\xbf{\"a\":1}", `{"a":1}`},
		{"\x1b[0m\x1b[1;32m{\"a\":1}\x1b[0m", `{"a":1}`},
		{"\x1b]0;title\x07{}", `{}`},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", `link`},
		{"\x1b7{}\x1b8", `{}`},
		{"  {}\r", `{}`},
		{"\x1b[", ``},
		{"\x1b", ``},
		{"Thinking...\r{\"a\":1}", `{"a":1}`},              // a spinner overwritten
		{"\x1b[2K Thinking \x1b[0G\r{\"a\":1}", `{"a":1}`}, // the same, with escapes
		{"{\"a\":1}\x00", `{"a":1}`},                       // a trailing NUL
		{"\x00\x00{}\r\n", `{}`},                           // leading NULs, CRLF
		{"50%\r", `50%`},                                   // nothing after the CR
		{"\x1b[2K Thinking \x1b[0G{\"a\":1}", `{"a":1}`},   // erase line, column 1
	}
	for _, tt := range tests {
		if got := string(normalize.Clean([]byte(tt.in))); got != tt.want {
			t.Errorf("Clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestCleanText(t *testing.T) {
	t.Parallel()
	in := "\x1b[91m\x1b[1mError: \x1b[0mboom\r\n\n  second\n"
	if got, want := normalize.CleanText(in), "Error: boom\nsecond"; got != want {
		t.Errorf("CleanText(%q) = %q, want %q", in, got, want)
	}
}

func TestCutOutput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in        string
		cap       int
		want      string
		size      int64
		truncated bool
	}{
		{"hello", 10, "hello", 5, false},
		{"hello", 5, "hello", 5, false},
		{"hello", 3, "hel", 5, true},
		{"héllo", 2, "h", 6, true}, // é is 2 bytes at offset 1: not split
		{"", 0, "", 0, false},
	}
	for _, tt := range tests {
		out, size, tr := normalize.CutOutput(tt.in, tt.cap)
		if out != tt.want || size != tt.size || tr != tt.truncated {
			t.Errorf("CutOutput(%q, %d) = %q, %d, %v; want %q, %d, %v", tt.in, tt.cap, out, size, tr, tt.want, tt.size, tt.truncated)
		}
	}
}
