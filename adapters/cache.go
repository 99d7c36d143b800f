package adapters

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hubcli/hub/events"
)

// CacheFile returns the path of a file that holds content, for a CLI that
// takes a file where hub has bytes (pi's extension, Codex's
// --output-schema): $XDG_CACHE_HOME/hub (or ~/.cache/hub) holds one copy per
// content, named prefix + the first 12 hex digits of its SHA-256 + ext,
// written once (atomically: a temporary file renamed), in a directory only
// hub's user can read. Files are never removed: there is one per content.
// Errors are *events.Error (internal), what says what the file is for:
// no cache directory, or a write that failed.
func CacheFile(prefix, ext string, content []byte, what string) (string, error) {
	fail := func(err error) (string, error) {
		return "", events.NewError(events.BinInternal, "",
			fmt.Sprintf("hub writes %s to the user's cache directory: set XDG_CACHE_HOME or HOME to a writable directory", what),
			"cannot write %s: %v", what, err)
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return fail(err)
	}
	dir = filepath.Join(dir, "hub")
	sum := sha256.Sum256(content)
	path := filepath.Join(dir, prefix+hex.EncodeToString(sum[:6])+ext)
	if b, err := os.ReadFile(path); err == nil && bytes.Equal(b, content) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fail(err)
	}
	f, err := os.CreateTemp(dir, ".cache-*")
	if err != nil {
		return fail(err)
	}
	_, werr := f.Write(content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(f.Name(), path)
	}
	if werr != nil {
		os.Remove(f.Name())
		return fail(werr)
	}
	return path, nil
}
