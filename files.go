package hub

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
)

// MaxFileBytes is the largest context file (Request.Files, --file) hub
// takes: 8 MiB, the most an ACP agent's whole prompt may hold.
const MaxFileBytes = 8 << 20

// ReadFile reads path, relative to hub's working directory (the caller's),
// as a context file for Request.Files: its absolute path and its content.
// Errors are *events.Error invalid_input/bad_request naming the file and
// why: missing or unreadable, not a regular file, over MaxFileBytes, or
// not UTF-8 text.
func ReadFile(path string) (adapters.File, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return adapters.File{}, fileError(path, "%v", err)
	}
	f, err := os.Open(abs)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return adapters.File{}, fileError(abs, "cannot open it: %v", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return adapters.File{}, fileError(abs, "%v", err)
	} else if !st.Mode().IsRegular() {
		what := "not a regular file"
		if st.IsDir() {
			what = "a directory, not a file"
		}
		return adapters.File{}, fileError(abs, "it is %s", what)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return adapters.File{}, fileError(abs, "cannot read it: %v", err)
	}
	file := adapters.File{Path: abs, Content: string(b)}
	if e := checkFile(file); e != nil {
		return adapters.File{}, e
	}
	return file, nil
}

// fileError is the invalid_input/bad_request error of context file path.
func fileError(path, format string, args ...any) *events.Error {
	return events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
		"pass --file a readable UTF-8 text file of at most 8 MiB; put larger material in the working directory and refer to it in the prompt",
		"--file %s: %s", path, fmt.Sprintf(format, args...))
}

// checkFile refuses a context file hub does not send: no path, over
// MaxFileBytes, or not UTF-8.
func checkFile(f adapters.File) *events.Error {
	switch {
	case f.Path == "":
		return fileError(`""`, "a context file needs a path")
	case len(f.Content) > MaxFileBytes:
		return fileError(f.Path, "it is over %d bytes (8 MiB), the most hub inlines in a prompt; nothing was cut or sent", MaxFileBytes)
	case !utf8.ValidString(f.Content):
		return fileError(f.Path, "it is not UTF-8 text (hub inlines context files in the prompt, which holds text only)")
	}
	return nil
}

// checkFiles refuses, before anything starts, the files of a request
// (checkFile) and a prompt that with them is larger than maxBytes (the
// agent's adapters.Info.MaxPromptBytes; 0: unknown, left to the adapter).
// session: the request is a session's, whose first turn's prompt is not
// known yet.
func checkFiles(req Request, agent string, maxBytes int, session bool) *events.Error {
	if len(req.Files) == 0 {
		return nil
	}
	for _, f := range req.Files {
		if e := checkFile(f); e != nil {
			return e
		}
	}
	if !session && strings.TrimSpace(req.Prompt) == "" {
		return events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			"pass a prompt that says what to do with the files", "empty prompt (with %d context files)", len(req.Files))
	}
	if n := len(adapters.InlineFiles(req.Files, req.Prompt)); maxBytes > 0 && n > maxBytes {
		return filesTooLarge(agent, n, maxBytes, req)
	}
	return nil
}

// filesTooLarge is the invalid_input/prompt_too_large error of a prompt of
// n bytes with req's files inlined, over the agent's maxBytes.
func filesTooLarge(agent string, n, maxBytes int, req Request) *events.Error {
	return events.NewError(events.BinInvalidInput, events.ReasonPromptTooLarge,
		"pass fewer or smaller --file files, or put the material in the working directory and refer to it in the prompt",
		"the prompt with its context files is %d bytes; %s accepts at most %d through hub, and hub does not cut files: %s, prompt (%d bytes)",
		n, agent, maxBytes, adapters.FileSizes(req.Files), len(req.Prompt))
}

// withFiles adds the sizes of req's files to err when it is a
// prompt_too_large of a prompt that holds them (an adapter's own check,
// codex's character count).
func withFiles(err error, req Request) error {
	var e *events.Error
	if len(req.Files) == 0 || !errors.As(err, &e) || e.Reason != events.ReasonPromptTooLarge {
		return err
	}
	c := *e
	c.Message += "; with the context files " + adapters.FileSizes(req.Files) + " inlined ahead of the prompt, which hub does not cut"
	return &c
}
