package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
)

// brokerFor is a broker of a read-only run in dir whose approver is a, its
// events and stops recorded.
func brokerFor(t *testing.T, dir string, a Approver) (*broker, *[]events.Body, *[]*events.Error, *sync.Mutex) {
	t.Helper()
	g, err := grant.For("claude", map[grant.Level]grant.Rule{grant.ReadOnly: {How: grant.Native}}, grant.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var evs []events.Body
	var stops []*events.Error
	b := newBroker(a, "claude", grant.NewWatch("claude", g, dir), dir,
		func(n events.Body, _ bool) { mu.Lock(); evs = append(evs, n); mu.Unlock() },
		func(e *events.Error) { mu.Lock(); stops = append(stops, e); mu.Unlock() }, time.Now)
	return b, &evs, &stops, &mu
}

func write(id, path string) ToolCall {
	in, _ := json.Marshal(map[string]string{"file_path": path})
	return ToolCall{CallID: id, Name: "Write", Kind: events.ToolWrite, Input: in, Paths: []string{path}}
}

// TestBrokerFlood: an agent that asks 1,000 times at once is never kept
// waiting by hub (ask does not block), the approver is asked about at most
// maxPendingApprovals of them at a time and the rest are denied at once,
// and every request gets exactly one answer, the last ones once the run
// ended.
func TestBrokerFlood(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var asked int
		var amu sync.Mutex
		b, _, _, _ := brokerFor(t, t.TempDir(), func(ctx context.Context, c ToolCall) Decision {
			amu.Lock()
			asked++
			amu.Unlock()
			select {
			case <-release:
			case <-ctx.Done():
			}
			return Decision{Verdict: AllowOnce}
		})
		var rmu sync.Mutex
		replies := map[string][]Verdict{}
		for i := range 1000 {
			id := string(rune('a'+i%26)) + string(rune('0'+i/26%10)) + string(rune('0'+i/260))
			b.ask(write(id, "/outside/f"), func(d Decision) { rmu.Lock(); replies[id] = append(replies[id], d.Verdict); rmu.Unlock() })
		}
		synctest.Wait()
		rmu.Lock()
		denied := 0
		for _, v := range replies {
			denied += len(v)
		}
		rmu.Unlock()
		if want := 1000 - maxPendingApprovals; denied != want {
			t.Errorf("%d answered at once, want %d (all past the %d waiting)", denied, want, maxPendingApprovals)
		}
		amu.Lock()
		if asked != 1 {
			t.Errorf("the approver is asked about %d calls at once, want 1 (one at a time)", asked)
		}
		amu.Unlock()
		// The run ends: the approver's ctx ends and every call still
		// waiting is denied.
		b.close()
		synctest.Wait()
		rmu.Lock()
		defer rmu.Unlock()
		total := 0
		for id, v := range replies {
			total += len(v)
			if len(v) != 1 {
				t.Errorf("call %s answered %d times", id, len(v))
			}
		}
		if total != 1000 {
			t.Errorf("%d answers for 1000 requests", total)
		}
	})
}

// TestBrokerStop: after Stop, the run is stopped with
// permission_denied/tool_denied and a call asked after it is denied
// without asking the approver.
func TestBrokerStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := 0
		b, _, stops, mu := brokerFor(t, t.TempDir(), func(context.Context, ToolCall) Decision {
			n++
			return Decision{Verdict: Stop, Message: "no"}
		})
		defer b.close()
		var got []Verdict
		b.ask(write("1", "/outside/a"), func(d Decision) { got = append(got, d.Verdict) })
		synctest.Wait()
		b.ask(write("2", "/outside/b"), func(d Decision) { got = append(got, d.Verdict) })
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		if len(*stops) != 1 || (*stops)[0].Reason != events.ReasonToolDenied {
			t.Errorf("stops %+v, want one permission_denied/tool_denied", *stops)
		}
		if n != 1 || len(got) != 2 || got[0] != Deny || got[1] != Deny {
			t.Errorf("approver asked %d times, CLI told %v: want asked once and both denied", n, got)
		}
	})
	// Calls queued while the approver decides the one it stops at are not
	// put to it either.
	synctest.Test(t, func(t *testing.T) {
		n := 0
		b, _, _, _ := brokerFor(t, t.TempDir(), func(context.Context, ToolCall) Decision {
			n++
			time.Sleep(time.Second)
			return Decision{Verdict: Stop, Message: "no"}
		})
		defer b.close()
		var got []Verdict
		for _, id := range []string{"1", "2", "3"} {
			b.ask(write(id, "/outside/"+id), func(d Decision) { got = append(got, d.Verdict) })
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if n != 1 || len(got) != 3 {
			t.Errorf("approver asked %d times, %d answers: want asked once, three answers", n, len(got))
		}
	})
}

// TestBrokerGrantAndLate: a call the grant allows (a read inside the
// working directory) is answered without asking; a late approval whose
// target appeared meanwhile is refused; AllowSession answers the tool's
// later calls unasked.
func TestBrokerGrantAndLate(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "t.txt")
	var asked []string
	b, evs, _, mu := brokerFor(t, dir, func(_ context.Context, c ToolCall) Decision {
		asked = append(asked, c.CallID)
		if c.CallID == "late" {
			_ = os.WriteFile(target, []byte("meanwhile"), 0o644)
			return Decision{Verdict: AllowOnce}
		}
		return Decision{Verdict: AllowSession}
	})
	defer b.close()
	answers := make(chan Decision, 8)
	reply := func(d Decision) { answers <- d }
	in, _ := json.Marshal(map[string]string{"file_path": target})
	b.ask(ToolCall{CallID: "read", Name: "Read", Kind: events.ToolRead, Input: in, Paths: []string{target}}, reply)
	if d := <-answers; d.Verdict != AllowOnce {
		t.Errorf("a read inside --cwd: %+v, want allowed", d)
	}
	b.ask(write("late", target), reply)
	if d := <-answers; d.Verdict != Deny {
		t.Errorf("a late approval whose target appeared: %+v, want denied", d)
	}
	b.ask(write("s1", filepath.Join(dir, "other")), reply)
	<-answers
	b.ask(write("s2", filepath.Join(dir, "again")), reply)
	if d := <-answers; d.Verdict != AllowOnce {
		t.Errorf("a Write after AllowSession: %+v, want allowed", d)
	}
	if len(asked) != 2 || asked[0] != "late" || asked[1] != "s1" {
		t.Errorf("the approver was asked about %v, want late and s1 only", asked)
	}
	mu.Lock()
	defer mu.Unlock()
	// Each request an approval.requested, then its approval.decided, which
	// names who decided: the grant (policy) for the read, hub's late check
	// (policy) for the approval that came after its target appeared, the
	// approver (callback) for s1, its allow_session (policy) for s2.
	want := []string{"requested read", "decided read allow policy", "requested late", "decided late deny policy",
		"requested s1", "decided s1 allow_session callback", "requested s2", "decided s2 allow policy"}
	var got []string
	var counts events.Approvals
	for _, ev := range *evs {
		switch v := ev.(type) {
		case events.ApprovalRequested:
			got = append(got, "requested "+v.CallID)
		case events.ApprovalDecided:
			got = append(got, fmt.Sprintf("decided %s %s %s", v.CallID, v.Verdict, v.By))
			counts.Count(v)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("approval events %q, want %q", got, want)
	}
	if counts != (events.Approvals{Requested: 4, Asked: 1, Allowed: 3, Denied: 1}) {
		t.Errorf("counts %+v, want 4 requested, 1 decided by the approver (s1: late's yes was overruled), 3 allowed, 1 denied", counts)
	}
}

// TestBrokerWaited: approval.decided says how long the call waited for the
// approver (in the bubble's fake time: exactly the approver's 3 s), and
// who decided as the approver's Decision.By names it.
func TestBrokerWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		b, evs, _, mu := brokerFor(t, dir, func(context.Context, ToolCall) Decision {
			time.Sleep(3 * time.Second)
			return Decision{Verdict: Deny, Message: "no", By: "tty"}
		})
		defer b.close()
		answers := make(chan Decision, 1)
		b.ask(write("w", filepath.Join(dir, "f")), func(d Decision) { answers <- d })
		if d := <-answers; d.Verdict != Deny || d.Message != "no" {
			t.Errorf("answer %+v, want the approver's deny", d)
		}
		mu.Lock()
		defer mu.Unlock()
		last, ok := (*evs)[len(*evs)-1].(events.ApprovalDecided)
		if !ok || last.WaitedMS != 3000 || last.By != "tty" || last.Verdict != "deny" || last.Message != "no" {
			t.Errorf("last event %+v, want approval.decided deny by tty after 3000 ms", (*evs)[len(*evs)-1])
		}
	})
}
