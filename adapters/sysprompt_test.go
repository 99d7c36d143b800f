package adapters_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/hubcli/hub/adapters"
)

// TestSystemPromptFiles: the texts are written to files of a private
// directory, which the command's Cleanup removes, together with a file
// written elsewhere (WriteIn); a command that fails removes them at once.
func TestSystemPromptFiles(t *testing.T) {
	t.Parallel()
	var files adapters.TempFiles
	sys, app, err := adapters.SystemPromptFiles(&files, adapters.Request{SystemPrompt: "S", AppendSystemPrompt: "A"})
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{sys: "S", app: "A"} {
		b, err := os.ReadFile(p)
		if err != nil || string(b) != want {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", p, b, err, want)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("Stat(%s) = %v, %v; want mode 0600", p, fi, err)
		}
	}
	dir := filepath.Dir(sys)
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("Stat(%s) = %v, %v; want mode 0700", dir, fi, err)
	}
	other, err := files.WriteIn(t.TempDir(), "p-", ".toml", []byte("x"))
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := adapters.WithTempFiles(adapters.Command{}, nil, &files)
	if err != nil || cmd.Cleanup == nil {
		t.Fatalf("WithTempFiles = %+v, %v; want a Cleanup", cmd, err)
	}
	cmd.Cleanup()
	for _, p := range []string{dir, other} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("after Cleanup, Stat(%s) = %v; want it removed", p, err)
		}
	}

	var none adapters.TempFiles
	if s, a, err := adapters.SystemPromptFiles(&none, adapters.Request{}); s != "" || a != "" || err != nil || !none.Empty() {
		t.Errorf("SystemPromptFiles(no texts) = %q, %q, %v; want nothing written", s, a, err)
	}
	if cmd, _ := adapters.WithTempFiles(adapters.Command{}, nil, &none); cmd.Cleanup != nil {
		t.Errorf("WithTempFiles(nothing written) has a Cleanup")
	}

	var failed adapters.TempFiles
	sys, _, _ = adapters.SystemPromptFiles(&failed, adapters.Request{SystemPrompt: "S"})
	if _, err := adapters.WithTempFiles(adapters.Command{}, errors.New("bad"), &failed); err == nil {
		t.Errorf("WithTempFiles(err) = nil error")
	}
	if _, err := os.Stat(filepath.Dir(sys)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed command's files: Stat = %v; want removed at once", err)
	}
}
