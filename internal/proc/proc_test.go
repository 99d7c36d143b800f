package proc

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSendSkipsReusedPID: a member whose pid now belongs to another process
// (a different start time) is not signalled.
func TestSendSkipsReusedPID(t *testing.T) {
	t.Parallel()
	stranger := exec.Command("sleep", "30")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stranger.Process.Kill(); stranger.Wait() }()
	pid := stranger.Process.Pid
	if send(member{pid: pid, start: startTime(pid) + 1}, syscall.SIGKILL) {
		t.Errorf("send reported delivery to a member whose start time does not match")
	}
	if !Running(pid) {
		t.Errorf("send killed pid %d, which belongs to an unrelated process", pid)
	}
	if !send(member{pid: pid, start: startTime(pid)}, syscall.SIGKILL) {
		t.Errorf("send did not deliver to the member itself")
	}
}

// TestWalkFindsTree: walk lists a child in a session of its own and its
// child, from the children files, and not the root.
func TestWalkFindsTree(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("sh", "-c", "setsid sh -c 'sleep 30 & wait' & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, m := range walk(cmd.Process.Pid) {
			send(m, syscall.SIGKILL)
		}
		cmd.Process.Kill()
		cmd.Wait()
	}()
	var tree []member
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if tree = walk(cmd.Process.Pid); len(tree) == 2 {
			break
		}
	}
	if len(tree) != 2 {
		t.Fatalf("walk = %v, want the setsid shell and its sleep", tree)
	}
	for _, m := range tree {
		if m.pid == cmd.Process.Pid || m.start != startTime(m.pid) {
			t.Errorf("walk member %+v: the root, or a wrong start time", m)
		}
	}
}

// TestGuardEnvInherited: a program that inherited HUB_PROC_GUARD by accident
// (a user's shell exported it) runs as itself, not as a guard: here, this
// test binary runs one of its tests.
func TestGuardEnvInherited(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSendSkipsReusedPID$", "-test.v")
	cmd.Env = append(os.Environ(), guardEnv+"=1000")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestSendSkipsReusedPID") {
		t.Errorf("with %s set, the program did not run as itself: %v\n%s", guardEnv, err, out)
	}
}
