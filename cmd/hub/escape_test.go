package main

// The escape suite: black-box tests, through a real `hub run` process (this
// test binary as hub), of SPEC §5's "no process the agent started may
// outlive the run", whatever the process does to hide — a session of its
// own, a double fork, an environment cleared of hub's marker, hub's own
// process group, a /proc entry hub cannot read, a start from the version
// probe rather than the run, a chain that re-forks faster than hub walks
// /proc — and even when hub itself is SIGKILLed; of fair stops (one SIGTERM
// per process, the whole --grace for every process of the tree); and of
// "--timeout bounds every run": hub exits within --timeout + --grace +
// hub.StopWait of the run's start whatever the agent does.
//
// Every fake agent records each process it starts (pid, start time, process
// group, a label) with a recorder script, so that the checks name each
// survivor and never mistake a reused pid for it; a cleanup SIGKILLs
// whatever is left, so a failing test leaves nothing running.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/hubtest"
)

// escGrace is the --grace of the escape runs unless a case needs another.
// escSlots bounds how many fakes of this harness run at once: as many as
// the CPUs, whatever -test.parallel says. The fakes
// fight hub for the CPU on purpose (a hydra re-forking thousands of times a
// second, floods of 1 MiB writes), and each asserts hub's bounds: more of
// them at once only measures each other (seen: the hydra outliving the
// run with 8 at once beside a second suite, load 25; and once in a fresh
// clone's CI, whatever this bound, while cmd/hub's other tests ran 8 at
// once: -test.parallel is back at its default).
var escSlots = make(chan struct{}, runtime.GOMAXPROCS(0))

const escGrace = time.Second

// envClear runs a command with an empty environment but for PATH: no
// HUB_RUN_MARK, nothing of hub's.
const envClear = `env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`

// quiet detaches a command's stdio from the agent's pipes, so that a case
// tests the escape alone and not a held pipe (TestEscapeNoHang does that).
const quiet = `</dev/null >/dev/null 2>&1`

// escape is the directory of one escape run: the fake agent, its helper
// programs and what they recorded.
type escape struct {
	t     *testing.T
	dir   string
	pids  string // the recorder's file: "PID START PGID LABEL" lines
	execs string // the fake agent's start times (Unix ns), one line per exec
	stop  string // created by the cleanup: tells a hydra (hydra.pl) to end
	bin   string // the fake agent
	fifo  int    // read end of the hydra's STOP.fifo
	repl  *strings.Replacer
}

// newEscape writes the helper programs into a new directory and registers
// the cleanup that kills whatever the fakes started. Fake agent bodies name
// the helpers with placeholders:
//
//	@REC@ PID LABEL     record process PID (its start time and group) as LABEL
//	@WAITN@ N           wait until N processes are recorded
//	@JOINPG@ PID LABEL CMD…  move into PID's process group, record, exec CMD
//	@FAIR@ LOG ROLE     a process that logs every SIGTERM (see fair.pl)
//	@HYDRA@ MODE LEADER a chain that re-forks in new sessions (see hydra.pl)
//	@FLOOD@             writes on stdout without end (see flood.pl)
//	@DIR@, @LOG@, @STOP@, @ENVCLEAR@, @QUIET@
func newEscape(t *testing.T) *escape {
	t.Helper()
	// Registered first, so released last: after the cleanup that ends
	// what the fake left.
	escSlots <- struct{}{}
	t.Cleanup(func() { <-escSlots })
	dir := t.TempDir()
	e := &escape{t: t, dir: dir, pids: filepath.Join(dir, "pids"), execs: filepath.Join(dir, "execs"), stop: filepath.Join(dir, "stop")}
	e.repl = strings.NewReplacer(
		"@REC@", filepath.Join(dir, "rec"),
		"@WAITN@", filepath.Join(dir, "waitn"),
		"@JOINPG@", "perl "+filepath.Join(dir, "joinpg.pl"),
		"@FAIR@", "perl "+filepath.Join(dir, "fair.pl"),
		"@HYDRA@", "perl "+filepath.Join(dir, "hydra.pl")+" "+filepath.Join(dir, "stop"),
		"@FLOOD@", "perl "+filepath.Join(dir, "flood.pl"),
		"@LOG@", filepath.Join(dir, "log"),
		"@STOP@", filepath.Join(dir, "stop"),
		"@PIDS@", e.pids,
		"@DIR@", dir,
		"@ENVCLEAR@", envClear,
		"@QUIET@", quiet,
	)
	if err := os.WriteFile(e.pids, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// The hydra's liveness: a FIFO every generation holds open for
	// writing, read here without blocking (raw fd: os.File would park a
	// read in the poller).
	if err := syscall.Mkfifo(e.stop+".fifo", 0o600); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(e.stop+".fifo", syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	e.fifo = fd
	for name, text := range map[string]string{
		// cut -f: the recorded processes are sh, sleep, perl, setpriv,
		// ssh-agent: no spaces in their names.
		"rec": `#!/bin/sh
set -- "$1" "$2" $(cut -d' ' -f5,22 /proc/$1/stat)
echo "$1 $4 $3 $2" >> @PIDS@
`,
		"waitn": `#!/bin/sh
while [ "$(wc -l < @PIDS@)" -lt "$1" ]; do sleep 0.01; done
`,
		"joinpg.pl": `# joinpg.pl PID LABEL CMD...: moves into the process group of PID (hub's),
# records itself as LABEL (LABEL-refused when the kernel refuses the move:
# the group is in another session), and execs CMD.
my ($of, $label, @cmd) = @ARGV;
my $g = getpgrp($of);
$label .= "-refused" unless setpgrp(0, $g);
system("@REC@", $$, $label) == 0 or die "rec: $?";
exec @cmd or die "exec: $!";
`,
		"fair.pl": `# fair.pl LOG ROLE: records itself as ROLE, then appends "PID TERM NS" to
# LOG at every SIGTERM it gets. The leader exits at its SIGTERM; the others
# keep running and append "PID ALIVE NS" every 20 ms until killed (60 s at
# most).
use strict; use Time::HiRes qw(time sleep);
my ($log, $role) = @ARGV;
my $termed = 0;
sub note { open(my $f, '>>', $log) or die "$log: $!"; syswrite($f, sprintf("%d %s %.0f\n", $$, $_[0], time * 1e9)); close $f }
$SIG{TERM} = sub { note("TERM"); $termed = 1; exit 0 if $role eq 'leader' };
system("@REC@", $$, $role) == 0 or die "rec: $?";
my $end = time + 60;
while (time < $end) { sleep 0.02; note("ALIVE") if $termed }
`,
		"flood.pl": `# flood.pl: writes on stdout without end, 1 MiB at a time, into a pipe it
# grows to 1 MiB (F_SETPIPE_SZ), so that the pipe is never empty while
# anyone reads it; dies of SIGPIPE once nobody does (60 s at most).
fcntl(STDOUT, 1031, 1 << 20);
my $buf = "y\n" x (1 << 19);
my $end = time + 60;
while (time < $end) { syswrite(STDOUT, $buf) }
`,
		"hydra.pl": `# hydra.pl STOP MODE LEADER: two chains of processes that ignore SIGTERM, each
# in a session of its own, each forking its successor and exiting at once,
# so that its pid changes many times while anyone walks /proc (ps does not
# see it). Every generation holds STOP.fifo open for writing: the test's
# reader sees EOF only once the whole chain is gone. MODE quiet writes
# nothing; in MODE stdout, half a second after process LEADER is gone (so
# that a supervisor that walks /proc once at its exit missed the chain), the
# generation of the moment stops forking and writes on stdout without end, into a pipe
# it grows to 1 MiB, faster than hub can frame lines, so that the pipe is
# never empty; it dies of SIGPIPE once nobody reads it. It ends when STOP
# exists, or after 30 s. The first generation records itself as "hydra".
use strict; use POSIX (); use Time::HiRes qw(time);
my ($stop, $mode, $leader) = @ARGV;
my $gone;
$SIG{TERM} = 'IGNORE';
open(my $alive, '>', "$stop.fifo") or die "$stop.fifo: $!";
system("@REC@", $$, "hydra") == 0 or die "rec: $?";
my $chunk = "y\n" x (32 << 10);
my $end = time + 30;
fork // die "fork: $!"; # two chains: both must be caught
while (1) {
	exit 0 if -e $stop || time > $end;
	my $pid = fork;
	next unless defined $pid;
	POSIX::_exit(0) if $pid;
	POSIX::setsid();
	next unless $mode eq "stdout" && !kill(0, $leader);
	$gone //= time;
	next if time < $gone + 0.5;
	fcntl(STDOUT, 1031, 1 << 20); # F_SETPIPE_SZ
	while (!-e $stop && time < $end) { syswrite(STDOUT, $chunk) or exit 0 }
	exit 0;
}
`,
	} {
		mode := os.FileMode(0o644)
		if !strings.HasSuffix(name, ".pl") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(e.repl.Replace(text)), mode); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(e.cleanup)
	return e
}

// escProc is one process a fake recorded.
type escProc struct {
	pid   int
	start uint64 // /proc/<pid>/stat field 22: with pid, names one process
	pgid  int    // its process group when it recorded itself
	label string
}

func (p escProc) String() string { return fmt.Sprintf("%d (%s)", p.pid, p.label) }

// alive reports whether p is still running. A pid whose start time differs
// is another process that reused it: p is gone. A zombie has exited: all
// that is left is a pid for its parent to reap (hub, init, or this test
// binary should it be a subreaper), which holds nothing and runs nothing,
// so it counts as gone.
func (p escProc) alive() bool {
	st, ok := escStat(p.pid)
	return ok && st.start == p.start && !st.zombie
}

type escStatus struct {
	ppid, pgid int
	start      uint64
	zombie     bool
}

// escStat reads /proc/<pid>/stat (comm may hold spaces and parentheses).
func escStat(pid int) (escStatus, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return escStatus{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return escStatus{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return escStatus{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return escStatus{ppid: ppid, pgid: pgid, start: start, zombie: f[0] == "Z" || f[0] == "X"}, true
}

// recorded returns the processes recorded so far.
func (e *escape) recorded() []escProc {
	b, _ := os.ReadFile(e.pids)
	var out []escProc
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) != 4 {
			continue
		}
		var p escProc
		var err error
		if p.pid, err = strconv.Atoi(f[0]); err != nil {
			continue
		}
		if p.start, err = strconv.ParseUint(f[1], 10, 64); err != nil {
			continue
		}
		p.pgid, _ = strconv.Atoi(f[2])
		p.label = f[3]
		out = append(out, p)
	}
	return out
}

// hydraAlive reports whether any process of this directory's hydra is
// still running: it recorded itself, and STOP.fifo still has a writer (a
// read gets EAGAIN, not EOF).
func (e *escape) hydraAlive() bool {
	if !slices.ContainsFunc(e.recorded(), func(p escProc) bool { return p.label == "hydra" }) {
		return false
	}
	var b [4096]byte
	for {
		n, err := syscall.Read(e.fifo, b[:])
		if n > 0 {
			continue
		}
		return err == syscall.EAGAIN
	}
}

// cleanup SIGKILLs every recorded process still running, ends the hydra,
// and reaps those that were re-parented to this test binary (when it is a
// subreaper).
func (e *escape) cleanup() {
	if err := os.WriteFile(e.stop, nil, 0o644); err != nil {
		e.t.Log(err)
	}
	defer syscall.Close(e.fifo)
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var left []int
		for _, p := range e.recorded() {
			if p.alive() {
				left = append(left, p.pid)
			}
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, p := range e.recorded() {
			if st, ok := escStat(p.pid); ok && st.start == p.start && st.zombie && st.ppid == os.Getpid() {
				var ws syscall.WaitStatus
				_, _ = syscall.Wait4(p.pid, &ws, syscall.WNOHANG, nil)
			}
		}
		hydra := e.hydraAlive()
		if len(left) == 0 && !hydra || time.Now().After(end) {
			if len(left) > 0 || hydra {
				e.t.Errorf("cleanup: processes %v of the fakes still running (hydra: %v)", left, hydra)
			}
			return
		}
	}
}

// agent writes the fake agent, an OpenCode that runs version for
// --version (default: prints 1.18.33) and otherwise body, and returns its
// path. Every start of it, the version probe first, appends its time to
// e.execs.
func (e *escape) agent(version, body string) string {
	e.t.Helper()
	if version == "" {
		version = "echo 1.18.33; exit 0"
	}
	script := "#!/bin/sh\ndate +%s%N >> " + e.execs + "\nif [ \"$1\" = --version ]; then\n" + version + "\nfi\n" + body + "\n"
	e.bin = filepath.Join(e.dir, "bin", "opencode")
	if err := os.MkdirAll(filepath.Dir(e.bin), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := hubtest.WriteScript(e.bin, []byte(e.repl.Replace(script))); err != nil {
		e.t.Fatal(err)
	}
	return e.bin
}

// origin is when the fake agent first started: the version probe, which
// --timeout covers (the run's clock starts before it). Bounds measured from
// it are hub's own limits, never a guess at how long hub takes to start.
func (e *escape) origin() time.Time {
	e.t.Helper()
	b, _ := os.ReadFile(e.execs)
	line, _, _ := strings.Cut(string(b), "\n")
	ns, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	if err != nil {
		e.t.Fatalf("the fake agent never started (execs %q)", b)
	}
	return time.Unix(0, ns)
}

// escHub is a running `hub run` process.
type escHub struct {
	t        *testing.T
	cmd      *exec.Cmd
	out, err string // files holding hub's stdout and stderr
	exited   chan struct{}
	startAt  time.Time // just before hub was started
	exitAt   time.Time // set before exited is closed
}

// start runs `wrap… hub run --agent opencode --bin FAKE --output jsonl
// args… -- x` as a process of its own, in a process group of its own (as
// a shell runs a command), its stdout and stderr in files (so that nothing
// but hub's exit ends the test's wait).
func (e *escape) start(wrap []string, args ...string) *escHub {
	e.t.Helper()
	exe, err := os.Executable()
	if err != nil {
		e.t.Fatal(err)
	}
	argv := append(slices.Clone(wrap), exe, "run", "--agent", "opencode", "--bin", e.bin, "--output", "jsonl")
	argv = append(append(argv, args...), "--", "x")
	h := &escHub{t: e.t, out: filepath.Join(e.dir, "hub.stdout"), err: filepath.Join(e.dir, "hub.stderr"), exited: make(chan struct{})}
	h.cmd = exec.Command(argv[0], argv[1:]...)
	h.cmd.Env = append(os.Environ(), "HUB_TEST_AS_HUB=1", "GORACE=atexit_sleep_ms=0")
	h.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	outf, err := os.Create(h.out)
	if err != nil {
		e.t.Fatal(err)
	}
	errf, err := os.Create(h.err)
	if err != nil {
		e.t.Fatal(err)
	}
	h.cmd.Stdout, h.cmd.Stderr = outf, errf
	h.startAt = time.Now()
	err = h.cmd.Start()
	outf.Close()
	errf.Close()
	if err != nil {
		e.t.Fatal(err)
	}
	go func() {
		_ = h.cmd.Wait()
		h.exitAt = time.Now()
		close(h.exited)
	}()
	// Registered after newEscape's cleanup, so run before it: hub first,
	// then what is left of the tree.
	e.t.Cleanup(func() {
		select {
		case <-h.exited:
		default:
			_ = h.cmd.Process.Kill()
			<-h.exited
		}
	})
	return h
}

// wait waits for hub to exit and fails t unless it did within bound of
// origin (the fake's first start; hub's own start until then). It waits
// hub.StopWait past the bound to tell an overrun from a hang, then
// SIGKILLs hub; it reports whether hub exited on its own.
func (h *escHub) wait(e *escape, bound time.Duration, why string) bool {
	h.t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-h.exited:
			took := h.exitAt.Sub(e.origin())
			h.t.Logf("hub exited %s after the run started (bound %s), status %v", took.Round(time.Millisecond), bound, h.cmd.ProcessState)
			if took > bound {
				h.t.Errorf("hub exited %s after the run started, want within %s (%s)\n%s", took.Round(time.Millisecond), bound, why, h.output())
			}
			return true
		case <-tick.C:
		}
		origin := h.startAt
		if b, _ := os.ReadFile(e.execs); len(b) > 0 {
			origin = e.origin()
		}
		if time.Since(origin) > bound+hub.StopWait {
			_ = h.cmd.Process.Kill()
			<-h.exited
			h.t.Errorf("hub still running %s after the run started (bound %s: %s): hung, SIGKILLed\n%s",
				h.exitAt.Sub(origin).Round(time.Millisecond), bound, why, h.output())
			return false
		}
	}
}

// output is hub's stdout and stderr, for messages.
func (h *escHub) output() string {
	out, _ := os.ReadFile(h.out)
	errb, _ := os.ReadFile(h.err)
	return fmt.Sprintf("stdout:\n%.3000s\nstderr:\n%.1000s", out, errb)
}

// finished checks hub's exit status and its last event: run.finished with
// bin ("" for an ok run).
func (h *escHub) finished(code int, bin string) {
	h.t.Helper()
	out, _ := os.ReadFile(h.out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var fin struct {
		Type  string `json:"type"`
		OK    bool   `json:"ok"`
		Error *struct {
			Bin string `json:"bin"`
		} `json:"error"`
	}
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &fin)
	got := ""
	if fin.Error != nil {
		got = fin.Error.Bin
	}
	if c := h.cmd.ProcessState.ExitCode(); c != code || fin.Type != "run.finished" || fin.OK != (bin == "") || got != bin {
		h.t.Errorf("hub exit %d, last event %s ok=%v bin %q; want exit %d and run.finished bin %q\n%s", c, fin.Type, fin.OK, got, code, bin, h.output())
	}
}

// wantGone fails t unless every label in want was recorded, and every
// recorded process (and hydra) is gone by the time by.
func (e *escape) wantGone(by time.Time, want ...string) {
	e.t.Helper()
	procs := e.recorded()
	for _, w := range want {
		if !slices.ContainsFunc(procs, func(p escProc) bool { return p.label == w || p.label == w+"-refused" }) {
			e.t.Errorf("no process recorded as %q (recorded: %v): the fake's tree did not come up", w, procs)
		}
	}
	var live []escProc
	var hydra bool
	for ; ; time.Sleep(20 * time.Millisecond) {
		live = live[:0]
		for _, p := range procs {
			if p.alive() {
				live = append(live, p)
			}
		}
		hydra = e.hydraAlive()
		if len(live) == 0 && !hydra || time.Now().After(by) {
			break
		}
	}
	for _, p := range live {
		st, _ := escStat(p.pid)
		e.t.Errorf("process %v outlived the run (ppid %d, pgid %d)", p, st.ppid, st.pgid)
	}
	if hydra {
		e.t.Errorf("the hydra (two chains re-forking in new sessions) outlived the run: its FIFO still has a writer")
	}
}

// runBound is "--timeout bounds every run": the longest hub may take from
// the start of a run with these limits to its exit.
func runBound(timeout, grace time.Duration) time.Duration {
	return timeout + grace + hub.StopWait
}

// escCase is one fake agent and how its run must end.
type escCase struct {
	name    string
	version string   // the --version branch; "" prints 1.18.33
	body    string   // the run
	want    []string // labels that must be recorded
	timeout time.Duration
	grace   time.Duration // 0: escGrace
	code    int           // hub's exit status
	bin     string        // run.finished's bin, "" for ok
	wrap    []string      // runs hub under these (setpriv …)
}

// runEscape runs c and checks the run's outcome, its bound and that nothing
// the fake started is left.
func runEscape(t *testing.T, c escCase) *escape {
	t.Helper()
	e := newEscape(t)
	e.agent(c.version, c.body)
	grace := cmpOrDur(c.grace, escGrace)
	h := e.start(c.wrap, "--timeout", c.timeout.String(), "--grace", grace.String())
	bound := runBound(c.timeout, grace)
	if h.wait(e, bound, "--timeout + --grace + hub.StopWait") {
		h.finished(c.code, c.bin)
	}
	e.wantGone(h.exitAt.Add(grace+hub.StopWait), c.want...)
	return e
}

// cmpOrDur is cmpOr for durations.
func cmpOrDur(a, b time.Duration) time.Duration {
	if a != 0 {
		return a
	}
	return b
}

// okRun is the end of a fake that finishes its run normally.
const okRun = "\n" + okBody + "\nexit 0"

// hangRun is the end of a fake that goes on until --timeout stops it.
const hangRun = "\n" + `echo '{"type":"step_start","sessionID":"ses_x","part":{}}'` + "\nexec sleep 300"

// shapes runs tree (which records n processes, labels want) in both
// shapes: the agent finishes normally (ok), and the agent is stopped by
// --timeout (timeout/wall).
func shapes(tree string, n int, want ...string) []escCase {
	wait := fmt.Sprintf("\n@WAITN@ %d", n)
	return []escCase{
		{name: "agent exits", body: tree + wait + okRun, want: want, timeout: 30 * time.Second, code: 0},
		{name: "timeout", body: tree + wait + hangRun, want: want, timeout: 3 * time.Second, code: 8, bin: "timeout"},
	}
}

func needTools(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
}

func runCases(t *testing.T, cases []escCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			runEscape(t, c)
		})
	}
}

// TestEscapeSession (class 1): a descendant in a session of its own
// (setsid -f), and a double-forked daemon in a new session, whose parents
// are gone at once.
func TestEscapeSession(t *testing.T) {
	t.Parallel()
	needTools(t, "setsid")
	tree := `setsid -f sh -c '@REC@ $$ setsid; exec sleep 300' @QUIET@
( setsid sh -c '@REC@ $$ daemon; exec sleep 300' @QUIET@ & )`
	runCases(t, shapes(tree, 2, "setsid", "daemon"))
}

// TestEscapeClearedEnv (class 2): a double-forked descendant that cleared
// its environment (no HUB_RUN_MARK): re-parented away from the agent, and
// unmarked.
func TestEscapeClearedEnv(t *testing.T) {
	t.Parallel()
	tree := `( @ENVCLEAR@ sh -c '@REC@ $$ cleared; exec sleep 300' @QUIET@ & )
( @ENVCLEAR@ setsid sh -c '@REC@ $$ cleared-setsid; exec sleep 300' @QUIET@ & )`
	runCases(t, shapes(tree, 2, "cleared", "cleared-setsid"))
}

// TestEscapeHubGroup (class 3): descendants that move into hub's own
// process group (hub runs in a group of its own, as a shell starts it): a
// child of the agent, and a double-forked one with its environment cleared.
// A supervisor that signals the agent's group and skips its own cannot
// reach them by group. (Should the agent run in a session of its own, the
// kernel refuses the move, recorded as "-refused": the processes must be
// gone all the same.)
func TestEscapeHubGroup(t *testing.T) {
	t.Parallel()
	needTools(t, "perl")
	tree := `sh -c 'exec @JOINPG@ '"$PPID"' hubgroup sleep 300' @QUIET@ &
( @ENVCLEAR@ @JOINPG@ $PPID hubgroup-daemon sleep 300 @QUIET@ & )`
	for _, c := range shapes(tree, 2, "hubgroup", "hubgroup-daemon") {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := runEscape(t, c)
			e.logMoved()
		})
	}
}

// logMoved logs where the hub-group processes ended up: in hub's group
// (the pgid is hub's pid) or refused.
func (e *escape) logMoved() {
	e.t.Helper()
	for _, p := range e.recorded() {
		if strings.HasPrefix(p.label, "hubgroup") {
			e.t.Logf("%v recorded in process group %d", p, p.pgid)
		}
	}
}

// TestEscapeUnreadableProc (class 4): descendants whose /proc entries hub
// may not read — a non-dumpable ssh-agent (-D: in the foreground, so its pid
// is the one recorded) and a process of another user (nobody) — both
// double-forked into sessions of their own with their environments cleared. Run once with hub as
// root, and once with hub (and so the agent) without CAP_SYS_PTRACE,
// CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH: on this kernel root keeps
// reading /proc/<pid>/environ of a non-dumpable root process and of another
// user's without CAP_SYS_PTRACE alone; without the DAC capabilities too,
// nobody's is unreadable (the fake logs which ones it could not read).
func TestEscapeUnreadableProc(t *testing.T) {
	t.Parallel()
	needTools(t, "ssh-agent", "setpriv")
	tree := `( @ENVCLEAR@ setsid sh -c '@REC@ $$ ssh-agent; exec ssh-agent -D -a @DIR@/agent.sock' @QUIET@ & )
( @ENVCLEAR@ setsid sh -c '@REC@ $$ nobody; exec setpriv --reuid=65534 --regid=65534 --clear-groups sleep 300' @QUIET@ & )
@WAITN@ 2
sleep 0.2
while read pid st pg label; do cat /proc/$pid/environ >/dev/null 2>&1 || echo "$label" >> @DIR@/unreadable; done < @PIDS@`
	for _, wrap := range []struct {
		name string
		argv []string
	}{
		{"as root", nil},
		{"without CAP_SYS_PTRACE and DAC caps", []string{"setpriv", "--bounding-set=-sys_ptrace,-dac_override,-dac_read_search", "--"}},
	} {
		for _, c := range shapes(tree, 2, "ssh-agent", "nobody") {
			c.name = wrap.name + "/" + c.name
			c.wrap = wrap.argv
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				e := runEscape(t, c)
				b, _ := os.ReadFile(filepath.Join(e.dir, "unreadable"))
				t.Logf("environ unreadable to the agent (hub's capabilities): %q", strings.Fields(string(b)))
			})
		}
	}
}

// TestEscapeVersionProbe (class 5): the fake's --version (hub's version
// probe, before the run) starts a double-forked daemon in a session of its
// own with its environment cleared, then prints its version: one good enough (the run
// goes on, ok), one too old (no run: hub exits unsupported_version).
func TestEscapeVersionProbe(t *testing.T) {
	t.Parallel()
	daemon := `( @ENVCLEAR@ setsid sh -c '@REC@ $$ probe-daemon; exec sleep 300' @QUIET@ & )
@WAITN@ 1
`
	runCases(t, []escCase{
		{name: "run goes on", version: daemon + "echo 1.18.33; exit 0", body: okBody, want: []string{"probe-daemon"}, timeout: 30 * time.Second},
		{name: "too old", version: daemon + "echo 1.0.0; exit 0", body: okBody, want: []string{"probe-daemon"}, timeout: 30 * time.Second,
			code: 4, bin: "unsupported_version"},
	})
}

// TestEscapeHubKilled (class 6): hub SIGKILLed mid-run (it can neither
// stop nor reap anything) still takes the agent's whole tree down — the
// agent, a child in its group, a child in a session of its own, a
// double-forked daemon — within --grace + hub.StopWait of its death.
func TestEscapeHubKilled(t *testing.T) {
	t.Parallel()
	needTools(t, "setsid")
	e := newEscape(t)
	e.agent("", `@REC@ $$ agent
sh -c '@REC@ $$ group-child; exec sleep 300' @QUIET@ &
setsid -f sh -c '@REC@ $$ setsid; exec sleep 300' @QUIET@
( setsid sh -c '@REC@ $$ daemon; exec sleep 300' @QUIET@ & )
@WAITN@ 4
echo '{"type":"step_start","sessionID":"ses_k","part":{}}'
exec sleep 300`)
	h := e.start(nil, "--timeout", "120s", "--grace", escGrace.String())
	e.waitTree(h, 4, "ses_k")
	killed := time.Now()
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-h.exited
	e.wantGone(killed.Add(escGrace+hub.StopWait), "agent", "group-child", "setsid", "daemon")
}

// TestEscapeFairStop (class 7): at --timeout, the leader and two
// descendants (one in the leader's group, one in a session of its own)
// each log every SIGTERM they get; the leader exits at once, the
// descendants ignore it and log a heartbeat every 20 ms until they die.
// Each process gets SIGTERM exactly once, and each descendant, though it
// outlives the leader, gets the whole --grace before SIGKILL.
//
// "The grace a descendant got" is from the stop to its death. The stop is
// no later than the first SIGTERM any process logged; its death no earlier
// than its last heartbeat. A descendant's heartbeats are at most gap apart
// (the longest gap between its log lines, which the machine's load
// stretches), and a SIGTERM is logged at most about gap after it was sent:
// so a descendant given the whole grace has a last heartbeat at least
// grace − 2·gap after the first SIGTERM logged.
func TestEscapeFairStop(t *testing.T) {
	t.Parallel()
	needTools(t, "perl", "setsid")
	const timeout, grace = 3 * time.Second, 2 * time.Second
	e := newEscape(t)
	e.agent("", `@FAIR@ @LOG@ child @QUIET@ &
setsid -f @FAIR@ @LOG@ session @QUIET@
@WAITN@ 2
echo '{"type":"step_start","sessionID":"ses_f","part":{}}'
exec @FAIR@ @LOG@ leader`)
	h := e.start(nil, "--timeout", timeout.String(), "--grace", grace.String())
	if h.wait(e, runBound(timeout, grace), "--timeout + --grace + hub.StopWait") {
		h.finished(8, "timeout")
	}
	e.wantGone(h.exitAt.Add(grace+hub.StopWait), "leader", "child", "session")

	type logLine struct {
		what string
		at   time.Time
	}
	logs := map[int][]logLine{}
	f, err := os.Open(filepath.Join(e.dir, "log"))
	if err != nil {
		t.Fatalf("no process logged a SIGTERM: %v", err)
	}
	defer f.Close()
	first := time.Time{}
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var pid int
		var what string
		var ns float64
		if _, err := fmt.Sscan(sc.Text(), &pid, &what, &ns); err != nil {
			continue
		}
		at := time.Unix(0, int64(ns))
		logs[pid] = append(logs[pid], logLine{what, at})
		if what == "TERM" && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	for _, p := range e.recorded() {
		var terms int
		var gap time.Duration = 20 * time.Millisecond
		var last time.Time
		for i, l := range logs[p.pid] {
			if l.what == "TERM" {
				terms++
			}
			if i > 0 {
				gap = max(gap, l.at.Sub(logs[p.pid][i-1].at))
			}
			last = l.at
		}
		if terms != 1 {
			t.Errorf("process %v got %d SIGTERMs in one stop, want exactly 1", p, terms)
		}
		if p.label == "leader" || terms == 0 {
			continue
		}
		if got, want := last.Sub(first), grace-2*gap; got < want {
			t.Errorf("process %v ran %s after the stop's first SIGTERM and was then killed; want the whole --grace %s (at least %s: less twice its longest gap %s between heartbeats)",
				p, got.Round(time.Millisecond), grace, want.Round(time.Millisecond), gap.Round(time.Millisecond))
		}
	}
}

// TestEscapeReFork (class 8's "ignores SIGTERM and re-forks fast"): two
// chains of processes that ignore SIGTERM, each process in a session of its
// own, forking its successor and exiting at once (thousands of generations
// a second; ps does not see them): a supervisor that walks /proc and
// signals the pids and groups it saw is mostly a generation late. Nothing
// of them may outlive the run; a kill that does not race with fork (all of
// a subreaper's, a PID namespace's or a cgroup's processes) gets them.
func TestEscapeReFork(t *testing.T) {
	t.Parallel()
	needTools(t, "perl")
	tree := `@HYDRA@ quiet $$ @QUIET@ &
@WAITN@ 1
sleep 0.2`
	runCases(t, shapes(tree, 1, "hydra"))
}

// TestEscapeNoHang (class 8): "--timeout bounds every run". Each case is a
// way for the agent to hold hub past its own --timeout: hub must exit
// within --timeout + --grace + hub.StopWait of the run's start, and
// leave nothing behind. The hang found: after the agent exits hub reads
// its stdout until the pipe is empty (FIONREAD); a descendant that escaped
// the kill at the agent's exit (the hydra) and writes faster than hub frames
// lines keeps it from ever being empty, and hub never returns.
func TestEscapeNoHang(t *testing.T) {
	t.Parallel()
	needTools(t, "perl")
	probeFlood := func(redir string) string {
		return `echo 1.18.33
( @ENVCLEAR@ setsid sh -c '@REC@ $$ probe-flood; @FLOOD@` + redir + ` & @REC@ $! probe-flood-2; @FLOOD@` + redir + ` & @REC@ $! probe-flood-3; exec @FLOOD@` + redir + `' </dev/null & )
@WAITN@ 3
exit 0`
	}
	runCases(t, []escCase{
		// The version probe's env-cleared, double-forked descendants (three)
		// that write on the probe's stdout (or stderr) without end.
		{name: "probe descendant floods stdout", version: probeFlood(" 2>/dev/null"), body: okBody,
			want: []string{"probe-flood", "probe-flood-2", "probe-flood-3"}, timeout: 5 * time.Second},
		{name: "probe descendant floods stderr", version: probeFlood(" >&2"), body: okBody,
			want: []string{"probe-flood", "probe-flood-2", "probe-flood-3"}, timeout: 5 * time.Second},
		// A version command that prints nothing, ignores SIGTERM, and
		// leaves a child holding its pipes.
		{name: "probe never exits", version: `@REC@ $$ probe
trap '' TERM
sh -c '@REC@ $$ probe-child; exec sleep 300' &
@WAITN@ 2
exec sleep 300`, body: okBody, want: []string{"probe", "probe-child"}, timeout: 3 * time.Second, code: 8, bin: "timeout"},
		// The run's hydra (TestEscapeReFork), which floods the agent's
		// stdout once the agent has exited.
		{name: "re-forking descendant floods stdout", body: `@HYDRA@ stdout $$ </dev/null 2>/dev/null &
@WAITN@ 1
sleep 0.2` + okRun, want: []string{"hydra"}, timeout: 5 * time.Second},
		{name: "re-forking descendant floods stdout after a stop", body: `@HYDRA@ stdout $$ </dev/null 2>/dev/null &
@WAITN@ 1
sleep 0.2` + hangRun, want: []string{"hydra"}, timeout: 3 * time.Second, code: 8, bin: "timeout"},
		// A descendant of the run, env-cleared and double-forked after the
		// answer, writing on the agent's stdout without end.
		{name: "run descendant floods stdout", body: okBody + `
( @ENVCLEAR@ setsid sh -c '@REC@ $$ run-flood; exec @FLOOD@' </dev/null 2>/dev/null & )
@WAITN@ 1
exit 0`, want: []string{"run-flood"}, timeout: 5 * time.Second},
		// A descendant in hub's own process group holding the agent's
		// stdout and stderr open after the agent exits.
		{name: "hub-group descendant holds pipes", body: `sh -c 'exec @JOINPG@ '"$PPID"' hubgroup sleep 300' </dev/null &
@WAITN@ 1` + okRun, want: []string{"hubgroup"}, timeout: 5 * time.Second},
		// A descendant that ignores SIGTERM and holds stderr after the
		// leader is stopped and exits.
		{name: "descendant holds stderr past a stop", body: `sh -c '@REC@ $$ stderr-holder; trap "" TERM; exec sleep 300' </dev/null >/dev/null &
@WAITN@ 1` + hangRun, want: []string{"stderr-holder"}, timeout: 3 * time.Second, code: 8, bin: "timeout"},
	})
}

// waitTree waits until the fake has recorded n processes and hub has
// printed the session id: the tree is up and hub is mid-run.
func (e *escape) waitTree(h *escHub, n int, session string) {
	e.t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		out, _ := os.ReadFile(h.out)
		if len(e.recorded()) >= n && bytes.Contains(out, []byte(session)) {
			return
		}
		select {
		case <-h.exited:
			e.t.Fatalf("hub exited before the tree was up\n%s", h.output())
		default:
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the fake's tree never came up (recorded %v)\n%s", e.recorded(), h.output())
		}
	}
}
