// Command hub runs coding-agent CLIs and normalizes their event streams.
// See README.md and SPEC §6 for the commands.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	// Signals are caught before anything else, and stay caught until
	// os.Exit: from here on no SIGINT, SIGTERM, SIGHUP or SIGQUIT ends hub
	// by its default action (death by signal, or Go's goroutine dump), not
	// even one that arrives while hub is exiting. (One that arrives before
	// main, while the Go runtime starts, still does: nothing can catch it.)
	sigs := catchSignals()
	os.Exit(hubMain(sigs, os.Args, os.Stdin, os.Stdout, os.Stderr))
}

// hubMain is main but for os.Exit (the tests' hub process runs it too):
// it runs hub with a context that the first of sigs cancels and returns
// the exit status.
func hubMain(sigs <-chan os.Signal, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// kill is closed by a second SIGINT/SIGTERM: the run SIGKILLs the
	// agent's process group and descendants at once (adapters.WithKill).
	kill := make(chan struct{})
	ctx, stop := signalContext(sigs, func() {
		close(kill)
		// Give the run a moment to reap the agent and write run.finished;
		// hub may also be stuck writing to an output nobody reads.
		time.Sleep(2 * time.Second)
		fmt.Fprintln(os.Stderr, "hub: second signal: agent killed, exiting")
		os.Exit(130)
	})
	defer stop()
	return run(ctx, kill, args, stdin, stdout, stderr)
}

// catchSignals makes SIGINT, SIGTERM, SIGHUP and SIGQUIT arrive on the
// returned channel instead of ending hub, for as long as hub runs: they are
// never given back to their default action (signal.Stop), so one that
// arrives while hub exits is caught too, and changes nothing (the exit
// status is the one run.finished gave). SIGPIPE is caught so that a closed
// stdout is a write error (the run then stops the agent) rather than hub's
// silent death leaving the agent behind.
func catchSignals() <-chan os.Signal {
	sigs := make(chan os.Signal, 4)
	// SIGHUP: a closed terminal or a dropped ssh session.
	// SIGQUIT (Ctrl-\) too: Go's default would dump goroutines and exit 2,
	// the usage-error status, leaving the agent's tools behind.
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	return sigs
}

// signalContext returns a context cancelled by the first signal on sigs
// (catchSignals), which stops the agent's process group (grace, then
// SIGKILL) and ends the run as cancelled/caller with run.finished. A second
// signal calls force, for when waiting is not wanted or hub is blocked
// writing its output. The returned func stops watching sigs; the signals
// stay caught (see catchSignals).
func signalContext(sigs <-chan os.Signal, force func()) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
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
		close(done)
		cancel(nil)
	}
}
