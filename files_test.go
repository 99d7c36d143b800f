package hub_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/adapters/claude"
	"github.com/hubcli/hub/adapters/codex"
	"github.com/hubcli/hub/events"
)

// markerAgent is an agent binary that writes marker whenever it runs (its
// version probe included), so a test can tell that nothing started.
func markerAgent(t *testing.T) (bin, marker string) {
	t.Helper()
	dir := t.TempDir()
	marker = filepath.Join(dir, "ran")
	bin = filepath.Join(dir, "agent")
	script := "#!/bin/sh\necho ran >> " + marker + "\necho 9.9.9\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, marker
}

// TestReadFileRefused: ReadFile refuses what hub does not send, naming the
// file and why (invalid_input/bad_request).
func TestReadFileRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, path, why string
	}{
		{"OverCap", write("big.txt", []byte(strings.Repeat("a", hub.MaxFileBytes+1))), "over 8388608 bytes"},
		{"NotUTF8", write("bad.txt", []byte("ok\xff\xfe")), "not UTF-8"},
		{"Directory", dir, "a directory"},
		{"Missing", filepath.Join(dir, "missing.txt"), "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := hub.ReadFile(tt.path)
			e, ok := err.(*events.Error)
			if !ok || e.Bin != events.BinInvalidInput || e.Reason != events.ReasonBadRequest ||
				!strings.Contains(e.Message, tt.path) || !strings.Contains(e.Message, tt.why) {
				t.Fatalf("ReadFile(%s) = %v, want invalid_input/bad_request naming the file and %q", tt.path, err, tt.why)
			}
		})
	}
	p := write("ok.txt", []byte("héllo"))
	if f, err := hub.ReadFile(p); err != nil || f.Path != p || f.Content != "héllo" {
		t.Errorf("ReadFile(%s) = %+v, %v, want its path and content", p, f, err)
	}
	rel, err := filepath.Rel(mustGetwd(t), p)
	if err != nil {
		t.Fatal(err)
	}
	if f, err := hub.ReadFile(rel); err != nil || f.Path != p {
		t.Errorf("ReadFile(%s) = %+v, %v, want the path made absolute against the working directory", rel, f, err)
	}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestRunFilesRefused: a request whose files hub does not send, or that
// with them is over the agent's MaxPromptBytes, fails before anything
// starts, the agent's version probe included.
func TestRunFilesRefused(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("x", 6<<20) // three are over claude's 16 MiB
	tests := []struct {
		name   string
		files  []adapters.File
		reason events.Reason
		want   []string // in the message
	}{
		{"OverCap", []adapters.File{{Path: "/a/big", Content: strings.Repeat("a", hub.MaxFileBytes+1)}}, events.ReasonBadRequest, []string{"/a/big", "over"}},
		{"NotUTF8", []adapters.File{{Path: "/a/bad", Content: "\xff"}}, events.ReasonBadRequest, []string{"/a/bad", "UTF-8"}},
		{"NoPath", []adapters.File{{Content: "x"}}, events.ReasonBadRequest, []string{"path"}},
		{"OverPrompt", []adapters.File{{Path: "/a/1", Content: big}, {Path: "/a/2", Content: big}, {Path: "/a/3", Content: big}},
			events.ReasonPromptTooLarge, []string{"/a/1 (6291456 bytes)", "/a/3 (6291456 bytes)", "at most 16777216"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			bin, marker := markerAgent(t)
			fin := hub.Run(context.Background(), hub.Request{Agent: claude.Name, Bin: bin, Prompt: "read them", Files: tt.files}, func(events.Event) error { return nil })
			if e := fin.Error; e == nil || e.Bin != events.BinInvalidInput || e.Reason != tt.reason {
				t.Fatalf("Run = %+v, want invalid_input/%s", fin.Error, tt.reason)
			}
			for _, w := range tt.want {
				if !strings.Contains(fin.Error.Message, w) {
					t.Errorf("message %q, want it to hold %q", fin.Error.Message, w)
				}
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the agent's binary ran: nothing may start")
			}
		})
	}
	t.Run("CodexChars", func(t *testing.T) {
		// Under Codex's bytes, over its characters: refused by its
		// CheckRequest, before its version probe, naming the files.
		t.Parallel()
		bin, marker := markerAgent(t)
		wide := strings.Repeat("é", 600_000) // 1.2 MB, 600,000 characters
		files := []adapters.File{{Path: "/a/1", Content: wide}, {Path: "/a/2", Content: wide}}
		fin := hub.Run(context.Background(), hub.Request{Agent: codex.Name, Bin: bin, Prompt: "read them", Files: files}, func(events.Event) error { return nil })
		if e := fin.Error; e == nil || e.Reason != events.ReasonPromptTooLarge || !strings.Contains(e.Message, "/a/2 (1200000 bytes)") || !strings.Contains(e.Message, "characters") {
			t.Fatalf("Run = %+v, want invalid_input/prompt_too_large counting characters and naming the files", fin.Error)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the agent's binary ran: nothing may start")
		}
	})
	t.Run("Session", func(t *testing.T) {
		t.Parallel()
		bin, marker := markerAgent(t)
		_, err := hub.NewSession(context.Background(), hub.Request{Agent: claude.Name, Bin: bin, Files: []adapters.File{{Path: "/a/bad", Content: "\xff"}}})
		if e, ok := err.(*events.Error); !ok || e.Reason != events.ReasonBadRequest || !strings.Contains(e.Message, "/a/bad") {
			t.Fatalf("NewSession = %v, want invalid_input/bad_request naming the file", err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("the agent's binary ran: nothing may start")
		}
	})
}
