// Command mockllm runs the mock model server of package mockllm, for
// trying agent CLIs against it by hand. It prints one line,
// MOCKLLM_URL=http://127.0.0.1:PORT, then serves until SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hubcli/hub/mockllm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("mockllm", flag.ContinueOnError)
	flags.SetOutput(stderr)
	addr := flags.String("addr", "127.0.0.1:0", "loopback `address` to listen on")
	retryAfter := flags.Duration("retry-after", 0, "send retry-after-ms with every 429, 500 and 503 (0: only 429, 1s)")
	if err := flags.Parse(args); err != nil {
		return 2
	}
	s, err := mockllm.StartWith(mockllm.Options{Addr: *addr, RetryAfter: *retryAfter})
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer s.Close()
	fmt.Fprintf(stdout, "MOCKLLM_URL=%s\n", s.URL()) // os.Stdout is unbuffered
	<-ctx.Done()
	return 0
}
