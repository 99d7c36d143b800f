// Command hub runs coding-agent CLIs and normalizes their event streams.
// See README.md and SPEC §6 for the commands.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signalContext()
	code := run(ctx, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalContext is cancelled by SIGINT or SIGTERM to hub, which stops the
// agent's process group and ends the run as cancelled/caller.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}
