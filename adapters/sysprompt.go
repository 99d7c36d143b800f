package adapters

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/hubcli/hub/events"
)

// TempFiles is a private temporary directory of files one agent process
// reads (the system prompt of Request.SystemPrompt and
// Request.AppendSystemPrompt): mode 0700, each file 0600, removed by
// Remove, which the run calls through Command.Cleanup once the process has
// ended (or when it does not start). The zero value holds nothing; Write
// makes the directory on first use. Not safe for concurrent use.
type TempFiles struct {
	dir   string
	extra []string // files written elsewhere (WriteIn)
}

// Write writes content to a file named name in t's directory and returns
// its absolute path. Errors are *events.Error (internal).
func (t *TempFiles) Write(name string, content []byte) (string, error) {
	fail := func(err error) (string, error) {
		return "", events.NewError(events.BinInternal, "",
			"hub writes the system prompt to a private temporary directory: set TMPDIR to a writable directory",
			"cannot write %s: %v", name, err)
	}
	if t.dir == "" {
		dir, err := os.MkdirTemp("", "hub-prompt-")
		if err != nil {
			return fail(err)
		}
		t.dir = dir
	}
	p := filepath.Join(t.dir, name)
	if err := os.WriteFile(p, content, 0o600); err != nil {
		return fail(err)
	}
	return p, nil
}

// WriteIn writes content to a new file in dir, an existing directory the
// CLI reads it from (Codex's home for a profile), named prefix, a random
// part and suffix, mode 0600, and returns its path. Remove removes it.
// Errors are *events.Error (internal).
func (t *TempFiles) WriteIn(dir, prefix, suffix string, content []byte) (string, error) {
	f, err := os.CreateTemp(dir, prefix+"*"+suffix) // mode 0600
	if err != nil {
		return "", events.NewError(events.BinInternal, "",
			fmt.Sprintf("hub writes a file for the agent in %s: make it a writable directory", dir),
			"cannot write a file in %s: %v", dir, err)
	}
	t.extra = append(t.extra, f.Name())
	_, werr := f.Write(content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return "", events.NewError(events.BinInternal, "", "free space on its file system",
			"cannot write %s: %v", f.Name(), werr)
	}
	return f.Name(), nil
}

// Remove removes t's directory and everything in it, and the files of
// WriteIn. Safe to call twice, and on the zero value.
func (t *TempFiles) Remove() {
	if t.dir != "" {
		_ = os.RemoveAll(t.dir)
		t.dir = ""
	}
	for _, p := range t.extra {
		_ = os.Remove(p)
	}
	t.extra = nil
}

// Empty reports whether t wrote nothing.
func (t *TempFiles) Empty() bool { return t.dir == "" && len(t.extra) == 0 }

// SystemPromptFiles writes req.SystemPrompt and req.AppendSystemPrompt, each
// that is not "", to a file of t (system-prompt.md, append-system-prompt.md)
// and returns their paths ("" for one not set): the form every CLI takes
// without argv's 128 KiB limit on one argument. Errors are Write's.
func SystemPromptFiles(t *TempFiles, req Request) (system, appendPath string, err error) {
	if req.SystemPrompt != "" {
		if system, err = t.Write("system-prompt.md", []byte(req.SystemPrompt)); err != nil {
			return "", "", err
		}
	}
	if req.AppendSystemPrompt != "" {
		if appendPath, err = t.Write("append-system-prompt.md", []byte(req.AppendSystemPrompt)); err != nil {
			return "", "", err
		}
	}
	return system, appendPath, nil
}

// WithTempFiles gives cmd t's removal as its Cleanup (after any Cleanup it
// had), or removes t at once when err is not nil: the command is then not
// run. It returns cmd and err.
func WithTempFiles(cmd Command, err error, t *TempFiles) (Command, error) {
	if err != nil || t.Empty() {
		t.Remove()
		return cmd, err
	}
	prev := cmd.Cleanup
	cmd.Cleanup = func() {
		if prev != nil {
			prev()
		}
		t.Remove()
	}
	return cmd, nil
}

// NoSystemPrompt is the error of an agent that cannot carry
// Request.SystemPrompt or Request.AppendSystemPrompt (what says which and
// why): invalid_input/bad_request, before anything starts.
func NoSystemPrompt(agent, what string) error {
	return events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
		"run without --system-prompt and --append-system-prompt, or give the agent its instructions in the prompt",
		"%s", fmt.Sprintf("%s cannot take %s", agent, what))
}
