// Command hub runs coding-agent CLIs and normalizes their event streams.
// See README.md and SPEC §6 for the commands.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	// kill is closed by a second SIGINT/SIGTERM: the run SIGKILLs the
	// agent's process group and descendants at once (adapters.WithKill).
	kill := make(chan struct{})
	ctx, stop := signalContext(func() {
		close(kill)
		// Give the run a moment to reap the agent and write run.finished;
		// hub may also be stuck writing to an output nobody reads.
		time.Sleep(2 * time.Second)
		fmt.Fprintln(os.Stderr, "hub: second signal: agent killed, exiting")
		os.Exit(130)
	})
	code := run(ctx, kill, os.Args, os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalContext returns a context cancelled by the first SIGINT, SIGTERM or SIGHUP to
// hub, which stops the agent's process group (grace, then SIGKILL) and ends
// the run as cancelled/caller with run.finished. A second signal calls
// force, for when waiting is not wanted or hub is blocked writing its output.
// SIGPIPE is caught so that a closed stdout is a write error (the run then
// stops the agent) rather than hub's silent death leaving the agent behind.
func signalContext(force func()) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 2)
	// SIGHUP: a closed terminal or a dropped ssh session.
	// SIGQUIT (Ctrl-\) too: Go's default would dump goroutines and exit 2,
	// the usage-error status, leaving the agent's tools behind.
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case <-done:
				return
			case sig := <-sigs:
				n++
				switch n {
				case 1:
					cancel(fmt.Errorf("hub received %v", sig))
				case 2:
					go force()
				}
			}
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}
