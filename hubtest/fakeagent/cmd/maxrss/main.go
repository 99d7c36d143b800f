// Command maxrss runs a command and writes its peak resident memory, in
// bytes, to the file named by its first argument:
//
//	maxrss FILE COMMAND [ARG…]
//
// stdin, stdout and stderr are the command's; maxrss exits with its exit
// status (128+n when signal n killed it). The figure is the kernel's
// ru_maxrss of the command: its own peak and that of the children it
// reaped. Tests measure hub with it rather than from their own wait4: a
// process forked by a large parent (a race-instrumented test binary) and
// exec'd keeps that parent's high-water mark, so the test must not be the
// command's parent; this small program is.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: maxrss FILE COMMAND [ARG…]")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "maxrss:", err)
		os.Exit(127)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		// ru_maxrss is in KiB on Linux.
		if err := os.WriteFile(os.Args[1], []byte(strconv.FormatInt(ru.Maxrss<<10, 10)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "maxrss:", err)
			os.Exit(127)
		}
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		os.Exit(128 + int(ws.Signal()))
	}
	os.Exit(ws.ExitStatus())
}
