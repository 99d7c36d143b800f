package hubtemporal

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
)

// TestEndToEnd runs FanOut on a real Temporal server: a worker of this
// process, a fake agent that answers and one that fails with a 401. It runs
// only when HUB_TEMPORAL_ADDRESS names a server (host:port, for example a
// local `temporal server start-dev` on localhost:7233); the namespace is
// HUB_TEMPORAL_NAMESPACE, default "default".
func TestEndToEnd(t *testing.T) {
	addr := os.Getenv("HUB_TEMPORAL_ADDRESS")
	if addr == "" {
		t.Skip("set HUB_TEMPORAL_ADDRESS to a Temporal server (e.g. localhost:7233) to run")
	}
	ns := os.Getenv("HUB_TEMPORAL_NAMESPACE")
	if ns == "" {
		ns = "default"
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Namespace: ns, Logger: quietLogger()})
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer c.Close()

	queue := fmt.Sprintf("hub-test-%d", time.Now().UnixNano())
	w := worker.New(c, queue, worker.Options{})
	Register(w, &Activities{})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	ok, auth := fakeAgent(t, okBody), fakeAgent(t, authBody)
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: queue, TaskQueue: queue}, FanOutName, FanOutInput{
		Task:   Request{Prompt: "fix it", Permission: "full", Limits: Limits{Timeout: time.Minute}},
		Agents: []Target{{Agent: "opencode", Bin: ok}, {Agent: "opencode", Bin: auth}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var out FanOutResult
	if err := run.Get(ctx, &out); err != nil {
		t.Fatalf("FanOut = %v", err)
	}
	if len(out.Results) != 2 || !out.Results[0].OK || out.Results[0].Finished == nil || out.Results[0].Finished.Text != "the answer" ||
		out.Results[1].OK || out.Results[1].ErrorType != "unavailable/auth" || out.Results[1].Finished == nil {
		t.Errorf("FanOut = %+v, want the answer, then unavailable/auth with its run.finished", out)
	}
	if n := runs(t, auth); n != 1 {
		t.Errorf("the auth failure ran %d times, want 1", n)
	}
}
