package main

import (
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// console is what text output knows of where it is written. Off a terminal
// (a pipe, a file, a test's buffer) every field is false and text output
// writes no escape byte at all.
type console struct {
	// status draws the live status line on stderr: stderr is a terminal
	// that is not "dumb", and stdout is not a pipe or socket.
	status bool
	// shared says stdout and stderr are one file (the same terminal, or
	// `2>&1` into one pipe or file): a line on stderr must not start in
	// the middle of a line of the answer on stdout.
	shared bool
	// color says tool lines, notices and the summary are coloured.
	color bool
	// width is stderr's width in columns, 0 when unknown; the status line
	// is cut to it so that it never wraps (a wrapped line cannot be
	// redrawn in place).
	width func() int
	// foreground says hub is in the terminal's foreground process group;
	// nil is always. A background job (`hub run … > out &`) draws no
	// status line: it would erase the shell's prompt and what is typed
	// after it, four times a second.
	foreground func() bool
}

// colorModes are --color's values.
var colorModes = []string{"auto", "always", "never"}

// checkColor refuses a --color value that is not auto, always or never
// ("" is auto).
func checkColor(mode string) error {
	for _, m := range append(colorModes, "") {
		if mode == m {
			return nil
		}
	}
	return usagef("run: --color must be auto, always or never, not %q", mode)
}

// newConsole looks at stdout and stderr (only an *os.File can be a
// terminal) and at the environment. Colour: --color always or never
// decides; auto colours a terminal stderr unless NO_COLOR is set to
// anything but "" (https://no-color.org) or TERM is "dumb".
func newConsole(stdout, stderr io.Writer, colorMode string, getenv func(string) string) console {
	var c console
	errFile, _ := stderr.(*os.File)
	outFile, _ := stdout.(*os.File)
	dumb := getenv("TERM") == "dumb"
	tty := errFile != nil && term.IsTerminal(int(errFile.Fd()))
	// A pipe on stdout may lead back to this terminal (`| tee`, `| less`):
	// what its reader writes there would land on the status line and be
	// erased by the next redraw, so there is no status line then.
	c.status = tty && !dumb && !isPipe(outFile)
	c.shared = sameFile(outFile, errFile)
	switch colorMode {
	case "always":
		c.color = true
	case "never":
	default:
		c.color = tty && !dumb && getenv("NO_COLOR") == ""
	}
	c.width = func() int { return 0 }
	if c.status {
		fd := int(errFile.Fd())
		c.width = func() int {
			w, _, err := term.GetSize(fd)
			if err != nil {
				return 0
			}
			return w
		}
		c.foreground = func() bool {
			pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
			return err != nil || pgrp == unix.Getpgrp()
		}
	}
	return c
}

// sameFile reports whether a and b are one open file: the same device and
// inode (one terminal, one pipe, one file).
func sameFile(a, b *os.File) bool {
	if a == nil || b == nil {
		return false
	}
	var sa, sb syscall.Stat_t
	if syscall.Fstat(int(a.Fd()), &sa) != nil || syscall.Fstat(int(b.Fd()), &sb) != nil {
		return false
	}
	return sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// isPipe reports whether f is a pipe or a socket.
func isPipe(f *os.File) bool {
	if f == nil {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0
}
