// Command hub runs coding-agent CLIs and normalizes their event streams.
// See docs/cli.md and SPEC §6 for the commands.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/hubcli/hub"
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
	// agent's process group and descendants at once (hub.WithKill).
	kill := make(chan struct{})
	ended := make(chan struct{}) // run has returned: main exits with its status
	ctx, stop := signalContext(sigs, func() {
		close(kill)
		// The run reaps the agent and writes run.finished, and main exits
		// with its status. Only a run that cannot end is cut short: one
		// stuck writing to an output nobody reads, whose stall guard gives
		// up only --grace after the first signal. A fixed 2 s here, as
		// before, lost run.finished of a run that was merely slow (seen
		// with both cores busy: exit 130 with no run.finished).
		select {
		case <-ended:
		case <-time.After(forceWait):
			fmt.Fprintln(os.Stderr, "hub: second signal: agent killed; its run did not end in "+forceWait.String()+", exiting")
			os.Exit(130)
		}
	})
	defer stop()
	defer close(ended)
	return run(ctx, kill, args, stdin, stdout, stderr)
}

// forceWait is how long after a second signal hub waits for the run to end
// before it exits without it: the agent's tree SIGKILLed and reaped
// (hub.StopWait), then a last write to a consumer that does not read
// (stallMargin and stallLast, as the stall guard allows after a stop).
const forceWait = hub.StopWait + stallMargin + stallLast

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
