package main

// Routes by which a fake agent tried to defeat its guard (a breaker's
// findings), through the real `hub run`, with the escape suite's harness.
// Each test failed on b3a98f0, the guard's first version; each says what
// docs/limits.md promises. Run: go test ./cmd/hub -run TestBreaker -v

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/hubcli/hub"
)

// TestBreakerGuardStopped: the agent SIGSTOPs its guard (its parent) and
// keeps running. --timeout asks the guard to stop the tree, which it
// cannot: hub hangs past --timeout + --grace + StopWait (the harness
// SIGKILLs it). A helper that ignores SIGTERM and keeps re-stopping the
// guard also defeats the kernel's SIGCONT to the guard's orphaned process
// group once hub is dead, so the tree outlives hub.
func TestBreakerGuardStopped(t *testing.T) {
	t.Parallel()
	runCases(t, []escCase{
		{name: "stop once", body: `@REC@ $$ agent
@REC@ $PPID guard
kill -STOP $PPID` + hangRun, want: []string{"agent"}, timeout: 2 * time.Second, code: 8, bin: "timeout"},
		{name: "keep stopped", body: `@REC@ $$ agent
@REC@ $PPID guard
perl -e '$SIG{TERM}="IGNORE"; $SIG{HUP}="IGNORE"; my $g=shift; system("@REC@", $$, "stopper"); my $end=time+60; select(undef,undef,undef,0.001), kill("STOP", $g) while time<$end' $PPID @QUIET@ &
@WAITN@ 3` + hangRun, want: []string{"agent", "stopper"}, timeout: 2 * time.Second, code: 8, bin: "timeout"},
	})
}

// TestBreakerControlPipeHeld: the agent opens its guard's end of the
// control pipe for writing through /proc/$PPID/fd/3 (same user: no
// privilege needed). When hub is SIGKILLed the guard never sees the pipe
// close, so the tree outlives hub. docs/limits.md: "If hub dies, even by SIGKILL,
// the guard sees its pipe to hub close and stops the tree".
func TestBreakerControlPipeHeld(t *testing.T) {
	t.Parallel()
	e := newEscape(t)
	e.agent("", `@REC@ $$ agent
@REC@ $PPID guard
exec 7>/proc/$PPID/fd/3
( setsid sh -c '@REC@ $$ daemon; exec sleep 300' @QUIET@ & )
@WAITN@ 3
echo '{"type":"step_start","sessionID":"ses_k","part":{}}'
exec sleep 300`)
	h := e.start(nil, "--timeout", "120s", "--grace", escGrace.String())
	e.waitTree(h, 3, "ses_k")
	killed := time.Now()
	_ = h.cmd.Process.Kill()
	<-h.exited
	e.wantGone(killed.Add(escGrace+hub.StopWait), "agent", "daemon")
}

// TestBreakerForgedExit: the agent prints a complete run, then writes a
// forged "X 0 0" into its guard's status pipe (/proc/$PPID/fd/4) and holds
// the control pipe open (/proc/$PPID/fd/3). hub reports ok and exits 0
// within seconds while the agent runs on, forever, below a guard that
// waits for a stop request that never comes.
func TestBreakerForgedExit(t *testing.T) {
	t.Parallel()
	runCases(t, []escCase{{name: "forged", body: `@REC@ $$ agent
@REC@ $PPID guard
` + okBody + `
sleep 0.5
exec 7>/proc/$PPID/fd/3
printf 'X 0 0\n' > /proc/$PPID/fd/4
exec sleep 300`, want: []string{"agent"}, timeout: 30 * time.Second, code: 0}})
}

// TestBreakerProbeKillsGuard: the version command starts a daemon and
// SIGKILLs its guard. The probe's Spec has no Orphans, and the probe fails
// (not_installed), so no run sweeps hub's orphans: the daemon outlives hub.
// docs/limits.md: "The hub CLI is one: it SIGKILLs and reaps every child that is
// not a guard".
func TestBreakerProbeKillsGuard(t *testing.T) {
	t.Parallel()
	runCases(t, []escCase{{name: "probe", version: `( setsid sh -c '@REC@ $$ probe-daemon; exec sleep 300' @QUIET@ & )
@WAITN@ 1
kill -9 $PPID
echo 1.18.33; exit 0`, body: okBody, want: []string{"probe-daemon"}, timeout: 30 * time.Second, code: 3, bin: "not_installed"}})
}

// TestBreakerZombieLeader: a tool whose main thread exits (exit(2) of one
// thread, as pthread_exit in main does) while another thread runs on. Its
// /proc/PID/stat says Z, so walk skips it as a zombie: it is never
// signalled, the guard gives up after 10 s and exits, and the process, with
// any children, outlives the run (re-parented to init). (The escape
// harness's alive() also takes it for a zombie, hence the Threads check.)
func TestBreakerZombieLeader(t *testing.T) {
	t.Parallel()
	e := newEscape(t)
	e.agent("", `@REC@ $$ agent
perl -Mthreads -MPOSIX -e '$SIG{TERM}="IGNORE"; system("@REC@", $$, "threaded"); threads->create(sub { sleep 60; POSIX::_exit(0) }); syscall(60, 0)' @QUIET@ &
@WAITN@ 2`+hangRun)
	h := e.start(nil, "--timeout", "2s", "--grace", escGrace.String())
	h.wait(e, runBound(2*time.Second, escGrace), "--timeout + --grace + hub.StopWait")
	h.finished(8, "timeout")
	var threaded escProc
	for _, p := range e.recorded() {
		if p.label == "threaded" {
			threaded = p
		}
	}
	if threaded.pid == 0 {
		t.Fatalf("threaded never recorded\n%s", h.output())
	}
	t.Cleanup(func() { _ = syscall.Kill(threaded.pid, syscall.SIGKILL) })
	time.Sleep(escGrace + hub.StopWait)
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(threaded.pid) + "/status")
	if st, ok := escStat(threaded.pid); ok && st.start == threaded.start && bytes.Contains(b, []byte("Threads:\t2")) {
		t.Errorf("process %v (main thread exited, one thread running) outlived the run: ppid %d", threaded, st.ppid)
	}
}
