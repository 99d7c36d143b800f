package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ownerFile, in a sandbox's temporary directory, names the process that
// made it: "<pid> <start time> <repository top or ->", so that a later
// Open can remove a sandbox whose hub was killed before it could (SIGKILL
// leaves no chance to clean up).
const ownerFile = ".hub-owner"

// procStart returns pid's start time in clock ticks since boot (field 22
// of /proc/PID/stat), which tells a pid reused by another process apart.
func procStart(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return "", fmt.Errorf("sandbox: /proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return "", fmt.Errorf("sandbox: /proc/%d/stat: short", pid)
	}
	return f[19], nil
}

// writeOwner records this process as the owner of the sandbox in tmp.
func writeOwner(tmp, repoTop string) error {
	start, err := procStart(os.Getpid())
	if err != nil {
		start = "?"
	}
	if repoTop == "" {
		repoTop = "-"
	}
	return os.WriteFile(filepath.Join(tmp, ownerFile), []byte(fmt.Sprintf("%d %s %s", os.Getpid(), start, repoTop)), 0o600)
}

// sweepStale removes the sandboxes in dir (the temporary directory) that
// the current user's hub processes made and left behind when they were
// killed: those whose owner process is gone (or its pid now names another
// process). It is best effort: what cannot be read or removed stays.
func sweepStale(dir string) {
	if dir == "" {
		dir = os.TempDir()
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "hub-sandbox-*"))
	for _, tmp := range matches {
		fi, err := os.Lstat(tmp)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(tmp, ownerFile))
		if err != nil {
			continue // being made, or not hub's: leave it
		}
		f := strings.SplitN(string(b), " ", 3)
		if len(f) != 3 {
			continue
		}
		pid, err := strconv.Atoi(f[0])
		if err != nil || pid <= 0 {
			continue
		}
		start, err := procStart(pid)
		switch {
		case err == nil && (start == f[1] || f[1] == "?"):
			continue // its hub still runs
		case err != nil && !errors.Is(err, os.ErrNotExist):
			continue // cannot tell
		}
		// Gone, or its pid now names another process.
		_ = removeAll(tmp)
		if top := f[2]; top != "-" {
			r := &repo{top: top}
			_, _ = r.git(context.Background(), "worktree", "prune")
		}
	}
}

// Keep marks the sandbox as kept (--keep-sandbox): a later Open's sweep of
// stale sandboxes leaves it, though its owner is gone. The caller removes
// it when done (Remove, or by hand).
func (s *Sandbox) Keep() error {
	if err := os.Remove(filepath.Join(s.tmp, ownerFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sandbox: %w", err)
	}
	return nil
}
