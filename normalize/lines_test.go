package normalize_test

import (
	"strings"
	"testing"

	"github.com/hubcli/hub/normalize"
)

// TestJoinLines: lines that fit are joined as they are; a long line no
// longer pushes the last one out of the limit.
func TestJoinLines(t *testing.T) {
	t.Parallel()
	if got := normalize.JoinLines([]string{"a", "b"}, 600); got != "a | b" {
		t.Errorf("JoinLines(a, b) = %q, want %q", got, "a | b")
	}
	long := strings.Repeat("e", 1000)
	got := normalize.JoinLines([]string{long, long, "Error: the real cause"}, 600)
	if len(got) > 600 || !strings.HasSuffix(got, " | Error: the real cause") {
		t.Errorf("JoinLines(long, long, error) = %q (%d bytes), want at most 600 bytes ending with the error", got, len(got))
	}
	if got := normalize.JoinLines([]string{long}, 600); len(got) > 600 || len(got) < 590 || !strings.HasPrefix(got, "eee") {
		t.Errorf("JoinLines(one long line) = %d bytes, want its start, at most 600 bytes", len(got))
	}
}
