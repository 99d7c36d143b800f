package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/adapters"
)

// TestFileFlag: hub run --file (repeatable) reads each file, a relative
// path against hub's working directory, not --cwd, and the agent gets them
// inlined ahead of the prompt (OpenCode on its stdin).
func TestFileFlag(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(dir, "got")
	bin := fakeAgent(t, `printf '%s\n' "$@" > `+got+"\ncat >> "+got+"\n"+okBody)
	a := filepath.Join(dir, "a.md")
	if err := os.WriteFile(a, []byte("</file> naïve"), 0o644); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, a)
	if err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(dir, "b.txt")
	if err := os.WriteFile(b, []byte("second\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--cwd", t.TempDir(), "--file", rel, "--file", b, "--", "use them")
	if code != 0 {
		t.Fatalf("hub run --file = exit %d, stderr %q; want 0", code, stderr)
	}
	args, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	want := adapters.InlineFiles([]adapters.File{{Path: a, Content: "</file> naïve"}, {Path: b, Content: "second\n"}}, "use them")
	if !strings.Contains(string(args), want) {
		t.Errorf("the agent's arguments %q, want them to hold the files inlined ahead of the prompt %q", args, want)
	}
	if !strings.Contains(string(args), "--title=use them\n") {
		t.Errorf("the agent's arguments %q, want OpenCode's session titled by the prompt, not by the files", args)
	}
}

// TestFileFlagRefused: a --file hub does not send is the run's
// invalid_input/bad_request (exit 5), naming the file, before anything
// starts (the agent's version probe included); hub acp says so on stderr.
func TestFileFlagRefused(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("\xff\xfe"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.txt")
	if err := os.WriteFile(big, []byte(strings.Repeat("a", hub.MaxFileBytes+1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ path, why string }{
		{bad, "not UTF-8"},
		{big, "over 8388608 bytes"},
		{dir, "a directory"},
		{filepath.Join(dir, "missing.txt"), "no such file"},
	} {
		marker := filepath.Join(t.TempDir(), "ran")
		bin := fakeAgent(t, "")
		// The marker is written by every start, --version included.
		if err := os.WriteFile(bin, []byte("#!/bin/sh\necho ran > "+marker+"\necho 1.18.33\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		code, stdout, stderr := hubCLI(t, "", "run", "--agent", "opencode", "--bin", bin, "--output", "jsonl", "--file", tt.path, "x")
		if code != 5 || !strings.Contains(stdout, `"bin":"invalid_input","reason":"bad_request"`) ||
			!strings.Contains(stdout, tt.path) || !strings.Contains(stdout, tt.why) {
			t.Errorf("hub run --file %s = exit %d, stdout %.500q, stderr %q; want 5 and invalid_input/bad_request naming it and %q", tt.path, code, stdout, stderr, tt.why)
		}
		code, _, stderr = hubCLI(t, "", "acp", "--agent", "opencode", "--bin", bin, "--file", tt.path)
		if code != 5 || !strings.Contains(stderr, tt.path) || !strings.Contains(stderr, tt.why) {
			t.Errorf("hub acp --file %s = exit %d, stderr %q; want 5 naming it and %q", tt.path, code, stderr, tt.why)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("--file %s: the agent's binary ran; nothing may start", tt.path)
		}
	}
}

// TestFileBatch: a batch line takes "file" as hub run's flag, an array.
func TestFileBatch(t *testing.T) {
	dir := t.TempDir()
	got := filepath.Join(dir, "got")
	bin := fakeAgent(t, `printf '%s\n' "$@" > `+got+"\ncat >> "+got+"\n"+okBody)
	a := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(a, []byte("context"), 0o644); err != nil {
		t.Fatal(err)
	}
	reqs := filepath.Join(dir, "reqs.jsonl")
	line := `{"id":"ok","prompt":"p","file":["` + a + `"]}` + "\n" + `{"id":"missing","prompt":"p","file":["` + a + `.nope"]}` + "\n"
	if err := os.WriteFile(reqs, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := hubCLI(t, "", "batch", "--agent", "opencode", "--bin", bin, "--max-parallel", "1", reqs)
	if code != 5 || !strings.Contains(out, `"id":"ok","line":1,`) || !strings.Contains(out, `"bin":"invalid_input","reason":"bad_request","message":"--file `+a+`.nope`) {
		t.Errorf("hub batch = exit %d, stdout %.3000s, stderr %q; want 5, the first ok and the second invalid_input/bad_request", code, out, errOut)
	}
	args, err := os.ReadFile(got)
	if err != nil || !strings.Contains(string(args), adapters.InlineFiles([]adapters.File{{Path: a, Content: "context"}}, "p")) {
		t.Errorf("the agent's arguments %q (%v), want the file inlined ahead of the prompt", args, err)
	}
}
