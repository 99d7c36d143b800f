package redact

import (
	"slices"
	"testing"
)

// TestArgv: flag values, NAME=VALUE and --name=VALUE with credential names,
// and key shapes anywhere, are redacted; nothing else.
func TestArgv(t *testing.T) {
	t.Parallel()
	in := []string{"x", "--api-key", "abc", "--token=zzz", "OPENAI_API_KEY=sk-123456789012", "prompt with sk-abcdefghijkl inside", "--model", "m"}
	want := []string{"x", "--api-key", "[REDACTED]", "--token=[REDACTED]", "OPENAI_API_KEY=[REDACTED]", "prompt with [REDACTED] inside", "--model", "m"}
	if got := Argv(in); !slices.Equal(got, want) {
		t.Errorf("Argv(%q) = %q, want %q", in, got, want)
	}
}
