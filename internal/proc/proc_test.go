package proc

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestSignalSkipsReusedPID: a recorded descendant whose pid now belongs to
// another process (different start time) must not be signalled.
func TestSignalSkipsReusedPID(t *testing.T) {
	t.Parallel()
	g, err := Start(exec.Command("sleep", "30"))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { g.Reap(time.Second); g.Cmd.Wait() }()
	stranger := exec.Command("sleep", "30")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stranger.Process.Kill(); stranger.Wait() }()
	pid := stranger.Process.Pid
	g.mu.Lock()
	g.tree[pid] = startTime(pid) + 1 // as if a dead descendant had had this pid
	g.mu.Unlock()
	if err := g.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if !Running(pid) {
		t.Errorf("Signal killed pid %d, which belongs to an unrelated process", pid)
	}
	if Running(g.PGID) && !isZombie(g.PGID) {
		t.Errorf("Signal did not kill the group leader %d", g.PGID)
	}
}

func isZombie(pid int) bool {
	p, ok := readStat(pid)
	return ok && p.zombie
}

// TestSnapshotFindsOwnGroupChild: a child in a process group of its own is
// recorded and signalled.
func TestSnapshotFindsOwnGroupChild(t *testing.T) {
	t.Parallel()
	g, err := Start(exec.Command("sh", "-c", "setsid sleep 30 & wait"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Cmd.Wait()
	var child int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if d := Descendants(g.PGID); len(d) > 0 {
			child = d[0]
			break
		}
	}
	if child == 0 {
		t.Fatal("no descendant appeared")
	}
	g.Snapshot()
	if !g.Reap(2 * time.Second) {
		t.Errorf("Reap did not end the group and its recorded descendants")
	}
	if Running(child) {
		t.Errorf("descendant %d in its own session survived Reap", child)
	}
}
