package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubcli/hub/events"
)

// TestSystemPromptText: --system-prompt and --append-system-prompt take
// TEXT as it is, @FILE as the file's text, @@TEXT as @TEXT; a file that
// cannot be read, is over MaxSystemPromptBytes or is not UTF-8 is
// invalid_input/bad_request naming the file.
func TestSystemPromptText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	ok := write("ok.md", []byte("Be brief.\n"))
	exact := write("exact.md", []byte(strings.Repeat("a", MaxSystemPromptBytes)))
	big := write("big.md", []byte(strings.Repeat("a", MaxSystemPromptBytes+1)))
	latin1 := write("latin1.md", []byte("caf\xe9"))
	for _, tt := range []struct {
		in, want, err string
	}{
		{in: "", want: ""},
		{in: "Be brief.", want: "Be brief."},
		{in: ok, want: ok}, // a path without @ is text
		{in: "@" + ok, want: "Be brief.\n"},
		{in: "@@" + ok, want: "@" + ok},
		{in: "@" + exact, want: strings.Repeat("a", MaxSystemPromptBytes)},
		{in: "@" + big, err: "@" + big + ": over 1048576 bytes"},
		{in: "@" + latin1, err: "@" + latin1 + ": not UTF-8 text"},
		{in: "@" + filepath.Join(dir, "missing.md"), err: "missing.md: no such file"},
		{in: "@" + dir, err: "@" + dir + ": is a directory"},
		{in: "@", err: "no file named after @"},
	} {
		got, err := systemPromptText("system-prompt", tt.in)
		if tt.err == "" {
			if err != nil || got != tt.want {
				t.Errorf("systemPromptText(%.80q) = %.80q, %v; want %.80q", tt.in, got, err, tt.want)
			}
			continue
		}
		var stop stopBeforeStart
		var he *events.Error
		if !errors.As(err, &stop) || !errors.As(stop.cause, &he) || he.Bin != events.BinInvalidInput || he.Reason != events.ReasonBadRequest ||
			!strings.Contains(he.Message, "--system-prompt ") || !strings.Contains(he.Message, tt.err) {
			t.Errorf("systemPromptText(%.80q) = %v, want invalid_input/bad_request naming the flag and %q", tt.in, err, tt.err)
		}
	}
}

// TestSystemPromptFlags: the flags reach the run's request, @FILE read by
// load; a bad @FILE ends the run before the agent starts, invalid_input
// (exit 5) with the file named in run.finished.
func TestSystemPromptFlags(t *testing.T) {
	clearHubEnv(t)
	file := filepath.Join(t.TempDir(), "append.md")
	if err := os.WriteFile(file, []byte("From the file."), 0o600); err != nil {
		t.Fatal(err)
	}
	o, code := parseRun(t, "--agent", "opencode", "--system-prompt", "Replace.", "--append-system-prompt", "@"+file, "hi")
	if code != 0 || o.SystemPrompt != "Replace." || o.AppendSystemPrompt != "@"+file {
		t.Fatalf("hub run --system-prompt … --append-system-prompt @FILE: exit %d, options %+v", code, o)
	}
	p, err := o.plan()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.load(t.Context(), strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
	if p.req.SystemPrompt != "Replace." || p.req.AppendSystemPrompt != "From the file." {
		t.Errorf("request SystemPrompt %q, AppendSystemPrompt %q; want %q, %q", p.req.SystemPrompt, p.req.AppendSystemPrompt, "Replace.", "From the file.")
	}

	bin, marker := notRun(t)
	missing := filepath.Join(t.TempDir(), "missing.md")
	code, stdout, _ := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--append-system-prompt", "@"+missing, "hi")
	if code != 5 || !strings.Contains(stdout, `"bin":"invalid_input","reason":"bad_request","message":"--append-system-prompt @`+missing) {
		t.Errorf("--append-system-prompt @missing: exit %d, %s; want 5, invalid_input/bad_request naming the file", code, stdout)
	}
	wantNotRun(t, marker)

	// An ACP agent has no system prompt: refused before it starts.
	code, stdout, _ = hubCLI(t, "", "run", "--agent", "acp", "--acp-command", bin, "--output", "jsonl", "--system-prompt", "Replace.", "hi")
	if code != 5 || !strings.Contains(stdout, `"bin":"invalid_input","reason":"bad_request"`) {
		t.Errorf("--agent acp --system-prompt: exit %d, %s; want 5, invalid_input/bad_request", code, stdout)
	}
	wantNotRun(t, marker)
}
