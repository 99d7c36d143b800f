package main

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// openRawLog opens --raw-log's file for the agent's stdout, byte for byte,
// credentials included — so that nobody else can read it:
//
//   - A path whose last component is a symbolic link is refused, dangling
//     or not: hub would write wherever the link points. (O_NOFOLLOW makes
//     that hold even if a link appears after the check.) Links among the
//     parent directories are followed, as in every path hub takes: they are
//     the user's own layout (a linked home or /tmp), and the classic attack
//     through them, a link planted in a shared sticky directory such as
//     /tmp, is what Linux's fs.protected_symlinks stops.
//   - A regular file is always a new one, created mode 0600 (and made 0600
//     whatever the umask): an existing file is removed first, not
//     truncated, so that a reader that holds it open, or another hard link
//     to it, never sees the new log, and its old mode, owner or ACL do not
//     carry over. Removing it needs write permission on its directory, as
//     creating it does.
//   - A FIFO or a device (/dev/null) is opened as it is: it keeps nothing.
//
// Errors are usage errors, before anything starts.
func openRawLog(path string) (*os.File, error) { return openPrivate("--raw-log", path) }

// openPrivate is openRawLog for the file of flag (--raw-log, --diff-out):
// both hold what the agent wrote, credentials included.
func openPrivate(flag, path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, usagef("run: %s: %v", flag, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, usagef("run: %s %s is a symbolic link: hub does not follow it (the file holds what the agent wrote, credentials included); give the path of the file itself", flag, path)
	case fi.IsDir():
		return nil, usagef("run: %s %s is a directory", flag, path)
	case fi.Mode().IsRegular():
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, usagef("run: %s %s: cannot replace it with a new file readable by its owner only: %v", flag, path, err)
		}
	default: // a FIFO, a device, a socket
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
		if err != nil {
			return nil, privateErr(flag, path, err)
		}
		return f, nil
	}
	// O_EXCL: a file that appeared since (a link, another file) is refused,
	// not written into.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, privateErr(flag, path, err)
	}
	if err := f.Chmod(0o600); err != nil { // a umask that took the owner's bits
		f.Close()
		return nil, usagef("run: %s %s: cannot make it readable and writable by its owner only: %v", flag, path, err)
	}
	return f, nil
}

func privateErr(flag, path string, err error) error {
	if errors.Is(err, syscall.ELOOP) {
		return usagef("run: %s %s is a symbolic link: hub does not follow it (the file holds what the agent wrote, credentials included); give the path of the file itself", flag, path)
	}
	return usagef("run: %s: %v", flag, err)
}
