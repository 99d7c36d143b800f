package hub_test

// The fake agent: the test binary re-executes itself as "opencode" on PATH
// (os/exec's helper-command pattern) and plays the scenario named in
// HUB_FAKE_SCENARIO. Scenarios speak OpenCode's dialect so that runs go
// through the real opencode adapter and decoder.

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hubcli/hub/hubtest"
)

const (
	sid      = "ses_fake1"
	stepLine = `{"type":"step_start","timestamp":1,"sessionID":"ses_fake1","part":{"type":"step-start"}}`
	textLine = `{"type":"text","timestamp":1,"sessionID":"ses_fake1","part":{"type":"text","text":"fake answer"}}`
	stopLine = `{"type":"step_finish","timestamp":1,"sessionID":"ses_fake1","part":{"type":"step-finish","reason":"stop","tokens":{"input":10,"output":5,"reasoning":0,"cache":{"read":2,"write":1}},"cost":0.25}}`
)

func okStream(w io.Writer) { fmt.Fprintln(w, stepLine+"\n"+textLine+"\n"+stopLine) }

// scenarios are the fake agent's behaviours. Each runs in the fake agent
// process with the agent's argv (after argv[0]).
var scenarios = map[string]func(args []string){
	"ok": func([]string) { okStream(os.Stdout) },
	// trip: one step whose usage ($0.50, 100 tokens) crosses any budget
	// below it; it records when it wrote that line and when SIGTERM came
	// (Unix nanoseconds) in $HUB_FAKE_OUT, then exits.
	"trip": func([]string) {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM)
		fmt.Println(stepLine)
		crossing := `{"type":"step_finish","timestamp":1,"sessionID":"ses_fake1","part":{"type":"step-finish","reason":"tool-calls","tokens":{"input":60,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.5}}` + "\n"
		t0 := time.Now().UnixNano()
		os.Stdout.WriteString(crossing)
		select {
		case <-sig:
			t1 := time.Now().UnixNano()
			os.WriteFile(os.Getenv("HUB_FAKE_OUT"), fmt.Appendf(nil, "%d %d", t0, t1), 0o644)
			os.Exit(0)
		case <-time.After(10 * time.Second):
			os.Exit(3)
		}
	},
	// steps: five model steps, each a tool call and a usage report of 100
	// tokens and $0.50 (or no cost: HUB_FAKE_NOCOST), 50 ms apart, then an
	// answer; then it ignores SIGTERM and hangs, so only a stop ends it.
	"steps": func(args []string) {
		if slices.Contains(args, "--session="+sid) {
			resumeFinal()
			return
		}
		signal.Ignore(syscall.SIGTERM)
		cost := `,"cost":0.5`
		if os.Getenv("HUB_FAKE_NOCOST") != "" {
			cost = ""
		}
		for i := 1; i <= 5; i++ {
			fmt.Println(stepLine)
			fmt.Printf(`{"type":"tool_use","timestamp":1,"sessionID":"ses_fake1","part":{"type":"tool","tool":"bash","callID":"call_%d","state":{"status":"completed","input":{"command":"echo %d"},"output":"%d"}}}`+"\n", i, i, i)
			fmt.Printf(`{"type":"step_finish","timestamp":1,"sessionID":"ses_fake1","part":{"type":"step-finish","reason":"tool-calls","tokens":{"input":60,"output":40,"reasoning":0,"cache":{"read":0,"write":0}}%s}}`+"\n", cost)
			time.Sleep(50 * time.Millisecond)
		}
		okStream(os.Stdout)
		time.Sleep(time.Hour)
	},
	// answers: answers with the text of its turn: $HUB_FAKE_ANSWERS holds
	// one answer per turn, separated by "\x1e", the first for the first run
	// and the next for each resume (of --session=ses_fake1); past the last,
	// the last again. Each prompt it read is appended to $HUB_FAKE_OUT,
	// followed by "\n--\n". With $HUB_FAKE_NOSID its events carry no
	// session id.
	"answers": func(args []string) {
		prompt, _ := io.ReadAll(os.Stdin)
		out := os.Getenv("HUB_FAKE_OUT")
		f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			os.Exit(9)
		}
		f.Write(append(prompt, "\n--\n"...))
		f.Close()
		all, _ := os.ReadFile(out)
		turn := strings.Count(string(all), "\n--\n") - 1
		answers := strings.Split(os.Getenv("HUB_FAKE_ANSWERS"), "\x1e")
		text := answers[min(turn, len(answers)-1)]
		if text == "BADSESSION" {
			fmt.Fprintln(os.Stderr, "Error: Session not found")
			os.Exit(1)
		}
		if text == "HANG" {
			signal.Ignore(syscall.SIGTERM)
			fmt.Println(stepLine)
			time.Sleep(time.Hour)
		}
		q, _ := json.Marshal(text)
		id := sid
		if os.Getenv("HUB_FAKE_NOSID") != "" {
			id = ""
		}
		r := strings.NewReplacer(`"sessionID":"ses_fake1"`, `"sessionID":"`+id+`"`)
		fmt.Println(r.Replace(stepLine))
		fmt.Println(r.Replace(`{"type":"text","timestamp":1,"sessionID":"ses_fake1","part":{"type":"text","text":` + string(q) + `}}`))
		fmt.Println(r.Replace(stopLine))
	},
	"version-old": func(args []string) {
		fmt.Println("0.9.1")
	},
	"version-hang":   func([]string) {},                      // see TestMain
	"version-linger": func([]string) { okStream(os.Stdout) }, // --version: see TestMain
	"version-garbage": func(args []string) {
		fmt.Println("development build")
	},
	"malformed": func([]string) {
		fmt.Println("opencode starting up…")                              // banner
		fmt.Println("\x1b[32m" + stepLine + "\x1b[0m")                    // ANSI around JSON
		fmt.Println("\xef\xbb\xbf" + textLine)                            // BOM
		fmt.Println(`{"type":"text","sessionID":"ses_fake1","part":{"te`) // cut JSON
		fmt.Println(`[1,2,3]`)                                            // JSON but not an object
		fmt.Println(`{"type":"brand_new_event","sessionID":"ses_fake1"}`) // unknown type
		fmt.Print(strings.ReplaceAll(stopLine, "\n", "") + "\r\n")        // CRLF
	},
	"giant": func([]string) {
		fmt.Println(stepLine)
		w := bufio.NewWriterSize(os.Stdout, 1<<20)
		fmt.Fprint(w, `{"type":"text","sessionID":"ses_fake1","part":{"type":"text","text":"`)
		w.WriteString(strings.Repeat("g", 10<<20))
		fmt.Fprintln(w, `"}}`)
		w.Flush()
		fmt.Println(textLine)
		fmt.Println(stopLine)
	},
	"truncated-last": func([]string) {
		fmt.Println(stepLine)
		fmt.Println(textLine)
		fmt.Print(stopLine) // no final newline
	},
	"cut-last": func([]string) {
		fmt.Println(stepLine)
		fmt.Println(textLine)
		fmt.Print(stopLine[:40]) // killed mid-line, no newline
	},
	"hang": func([]string) {
		fmt.Println(stepLine)
		time.Sleep(time.Hour)
	},
	"ignore-term": func([]string) {
		signal.Ignore(syscall.SIGTERM)
		fmt.Println(stepLine)
		time.Sleep(time.Hour)
	},
	"grandchild": func([]string) {
		// A grandchild in the agent's group that keeps stdout open long
		// after the agent exits.
		cmd := exec.Command("sleep", "300")
		cmd.Stdout = os.Stdout
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(9)
		}
		os.WriteFile(os.Getenv("HUB_FAKE_PIDFILE"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644)
		okStream(os.Stdout)
	},
	"tool-own-group": func([]string) {
		// A tool in a process group of its own, as OpenCode and Claude Code
		// run theirs; the agent then ignores SIGTERM, as OpenCode does while
		// a tool runs.
		signal.Ignore(syscall.SIGTERM)
		startOwnGroupTool()
		fmt.Println(stepLine)
		time.Sleep(time.Hour)
	},
	"tool-left-behind": func([]string) {
		// The agent finishes and exits, leaving a tool in its own group.
		startOwnGroupTool()
		time.Sleep(1500 * time.Millisecond) // long enough for hub to see it
		okStream(os.Stdout)
	},
	"tool-daemon": func([]string) {
		// A double-forked daemon in a session of its own, ignoring SIGTERM;
		// the agent answers and exits at once (or after $HUB_FAKE_DELAY).
		// With $HUB_FAKE_CLEARENV the daemon clears its environment; with
		// $HUB_FAKE_KILLGUARD the agent then SIGKILLs its parent, the
		// run's guard.
		clear := ""
		if os.Getenv("HUB_FAKE_CLEARENV") != "" {
			clear = "env -i PIDFILE=\"$HUB_FAKE_PIDFILE\" "
		}
		cmd := exec.Command("sh", "-c", `export PIDFILE="$HUB_FAKE_PIDFILE"; ( setsid `+clear+`sh -c 'trap "" TERM; env > "$PIDFILE.env"; echo $$ > "$PIDFILE"; exec sleep 300' </dev/null >/dev/null 2>&1 & ); while [ ! -s "$HUB_FAKE_PIDFILE" ]; do sleep 0.01; done`)
		if err := cmd.Run(); err != nil {
			os.Exit(9)
		}
		if os.Getenv("HUB_FAKE_KILLGUARD") != "" {
			syscall.Kill(os.Getppid(), syscall.SIGKILL)
			time.Sleep(time.Minute) // Pdeathsig ends it
		}
		if d, err := time.ParseDuration(os.Getenv("HUB_FAKE_DELAY")); err == nil {
			time.Sleep(d) // answers late: runs side by side overlap
		}
		okStream(os.Stdout)
	},
	"detached-writer": func([]string) {
		// A process in a session of its own keeps writing to stdout after
		// the agent exits, and ignores SIGTERM.
		cmd := exec.Command("sh", "-c", `trap "" TERM; while :; do echo tick; sleep 0.1; done`)
		cmd.Stdout = os.Stdout
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			os.Exit(9)
		}
		os.WriteFile(os.Getenv("HUB_FAKE_PIDFILE"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644)
		okStream(os.Stdout)
		time.Sleep(300 * time.Millisecond)
	},
	"close-stdout": func([]string) {
		fmt.Println(stepLine)
		os.Stdout.Close()
		time.Sleep(time.Hour)
	},
	"stop-then-more": func([]string) {
		okStream(os.Stdout)
		fmt.Println(stepLine)
		fmt.Println(`{"type":"text","sessionID":"ses_fake1","part":{"type":"text","text":"working on more"}}`)
		time.Sleep(time.Hour)
	},
	"echo-env": func([]string) {
		// Prints a credential from its environment, as a careless tool would.
		fmt.Println(stepLine)
		fmt.Printf(`{"type":"text","sessionID":"ses_fake1","part":{"type":"text","text":"key is %s"}}`+"\n", os.Getenv("MY_API_KEY"))
		fmt.Println(stopLine)
	},
	"burst": func([]string) {
		for range 10 {
			fmt.Println(stepLine)
			time.Sleep(100 * time.Millisecond)
		}
		okStream(os.Stdout)
	},
	"linger": func([]string) {
		okStream(os.Stdout)
		time.Sleep(time.Hour)
	},
	"crash": func([]string) {
		fmt.Println(stepLine)
		// As the kernel's OOM killer would (Go turns a raised SIGSEGV into
		// a panic with exit status 2).
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Hour)
	},
	"exit1-stderr": func([]string) {
		fmt.Fprintln(os.Stderr, "\x1b[91m\x1b[1mError: \x1b[0mProviderModelNotFoundError: model nope/nope not found")
		os.Exit(1)
	},
	"exit3": func([]string) {
		fmt.Println(stepLine)
		fmt.Fprintln(os.Stderr, "something odd happened")
		os.Exit(3)
	},
	"exit0-nothing": func([]string) {},
	"error-event": func([]string) {
		fmt.Println(stepLine)
		fmt.Println(`{"type":"error","timestamp":1,"sessionID":"ses_fake1","error":{"name":"APIError","data":{"message":"Rate limit reached","statusCode":429,"isRetryable":true,"responseHeaders":{"retry-after":"7"}}}}`)
		os.Exit(1)
	},
	"echo-argv": func(args []string) {
		// Answers with its own argv, one JSON string per argument.
		var parts []string
		for _, a := range args {
			parts = append(parts, fmt.Sprintf("%q", a))
		}
		fmt.Println(stepLine)
		fmt.Printf(`{"type":"text","sessionID":"ses_fake1","part":{"type":"text","text":%q}}`+"\n", strings.Join(parts, " "))
		fmt.Println(stopLine)
	},
	"echo-stdin": func([]string) {
		b, _ := io.ReadAll(os.Stdin)
		fmt.Println(stepLine)
		fmt.Printf(`{"type":"text","sessionID":"ses_fake1","part":{"type":"text","text":"stdin bytes %d"}}`+"\n", len(b))
		fmt.Println(stopLine)
	},
	"stderr-flood": func([]string) {
		chunk := []byte(strings.Repeat("e", 1<<20-1) + "\n")
		for range 100 {
			os.Stderr.Write(chunk)
		}
		os.Stderr.WriteString("LAST STDERR LINE\n")
		okStream(os.Stdout)
	},
	// tool: one tool call, the part of $HUB_FAKE_TOOL (OpenCode's tool part
	// JSON), then (after $HUB_FAKE_HOLD, a duration, if set: the time a
	// stop has to come) writes $HUB_FAKE_OUT and answers. A watch that
	// stops the run at the call leaves no file.
	"tool": func([]string) {
		fmt.Println(stepLine)
		fmt.Printf(`{"type":"tool_use","timestamp":1,"sessionID":"ses_fake1","part":%s}`+"\n", os.Getenv("HUB_FAKE_TOOL"))
		if d, err := time.ParseDuration(os.Getenv("HUB_FAKE_HOLD")); err == nil {
			time.Sleep(d)
		}
		if out := os.Getenv("HUB_FAKE_OUT"); out != "" {
			os.WriteFile(out, []byte("went on"), 0o644)
		}
		okStream(os.Stdout)
	},
	// env: writes its environment, one K=V per line, to $HUB_FAKE_OUT.
	"env": func([]string) {
		os.WriteFile(os.Getenv("HUB_FAKE_OUT"), []byte(strings.Join(os.Environ(), "\n")), 0o644)
		okStream(os.Stdout)
	},
	// argv: writes its arguments, one per line, to $HUB_FAKE_OUT (for
	// each run of it but the version probe).
	"argv": func(args []string) {
		os.WriteFile(os.Getenv("HUB_FAKE_OUT"), []byte(strings.Join(args, "\n")), 0o644)
		okStream(os.Stdout)
	},
	"denied": func([]string) {
		fmt.Println(stepLine)
		fmt.Println(`{"type":"tool_use","sessionID":"ses_fake1","part":{"type":"tool","tool":"bash","callID":"c1","state":{"status":"error","input":{"command":"rm -rf /"},"error":"The user rejected permission to use this specific tool call."}}}`)
		fmt.Println(`{"type":"step_finish","sessionID":"ses_fake1","part":{"type":"step-finish","reason":"tool-calls","tokens":{"input":1,"output":1,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.01}}`)
	},
}

var (
	usedMu sync.Mutex
	used   = map[string]bool{}
)

// resumeFinal is "steps" resumed for a final answer (hub's final-answer
// resume after --max-tool-steps). It writes the prompt it read on stdin and
// OPENCODE_CONFIG_CONTENT to $HUB_FAKE_OUT, then plays $HUB_FAKE_RESUME:
// "" answers (one step, 100 tokens, $0.50); "tool" calls a tool and hangs;
// "hang" hangs; "fail" ends with an error event. It ignores SIGTERM.
func resumeFinal() {
	signal.Ignore(syscall.SIGTERM)
	prompt, _ := io.ReadAll(os.Stdin)
	if out := os.Getenv("HUB_FAKE_OUT"); out != "" {
		os.WriteFile(out, []byte(string(prompt)+"\n--\n"+os.Getenv("OPENCODE_CONFIG_CONTENT")), 0o644)
	}
	fmt.Println(stepLine)
	switch os.Getenv("HUB_FAKE_RESUME") {
	case "tool":
		fmt.Println(`{"type":"tool_use","timestamp":1,"sessionID":"ses_fake1","part":{"type":"tool","tool":"bash","callID":"call_r","state":{"status":"completed","input":{"command":"ls"},"output":"x"}}}`)
		time.Sleep(time.Hour)
	case "hang":
		time.Sleep(time.Hour)
	case "fail":
		fmt.Println(`{"type":"error","timestamp":1,"sessionID":"ses_fake1","error":{"name":"APIError","data":{"message":"boom","statusCode":500,"isRetryable":false}}}`)
	default:
		fmt.Println(`{"type":"text","timestamp":1,"sessionID":"ses_fake1","part":{"type":"text","text":"partial from the fake"}}`)
		fmt.Println(`{"type":"step_finish","timestamp":1,"sessionID":"ses_fake1","part":{"type":"step-finish","reason":"stop","tokens":{"input":60,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.5}}`)
	}
}

// TestMain plays the fake agent when asked, else runs the tests and fails if
// a scenario was never used.
func TestMain(m *testing.M) {
	if name := os.Getenv("HUB_FAKE_SCENARIO"); name != "" {
		args := os.Args[1:]
		if len(args) == 1 && args[0] == "--version" {
			switch name {
			case "version-old", "version-garbage":
				scenarios[name](args)
			case "version-hang":
				time.Sleep(time.Hour)
			case "version-linger":
				fmt.Println("1.18.33") // then does not exit
				time.Sleep(time.Hour)
			default: // fakeBin's script answers for these
				fmt.Println("1.18.33")
			}
			os.Exit(0)
		}
		play, ok := scenarios[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "fake agent: unknown scenario %q\n", name)
			os.Exit(99)
		}
		play(args)
		os.Exit(0)
	}
	// The version cache (and CacheFile's copies) in a directory of the
	// test binary's own, not the user's: its tests set their own.
	cache, err := os.MkdirTemp("", "hub-adapters-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_CACHE_HOME", cache)
	code := m.Run()
	os.RemoveAll(cache)
	// Only a full run can tell that a scenario is unused.
	if f := flag.Lookup("test.run"); code == 0 && (f == nil || f.Value.String() == "") {
		for name := range scenarios {
			if !used[name] {
				fmt.Fprintf(os.Stderr, "fake agent scenario %q is never used\n", name)
				code = 1
			}
		}
	}
	os.Exit(code)
}

func startOwnGroupTool() {
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(9)
	}
	os.WriteFile(os.Getenv("HUB_FAKE_PIDFILE"), []byte(fmt.Sprint(cmd.Process.Pid)), 0o644)
}

// fakeBin makes an executable "opencode" that runs this test binary as the
// fake agent playing scenario, and returns its path.
func fakeBin(t *testing.T, scenario string) string {
	t.Helper()
	use(scenario)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "opencode")
	// The shell answers the version probe of the scenarios that do not
	// play one: starting this -race binary takes far longer, and the probe
	// counts against the run's --timeout.
	probe := ""
	if !strings.HasPrefix(scenario, "version-") {
		probe = "if [ \"$*\" = --version ]; then echo 1.18.33; exit 0; fi\n"
	}
	// GORACE: a -race binary otherwise sleeps 1 s when it exits.
	script := fmt.Sprintf("#!/bin/sh\n%sGORACE=atexit_sleep_ms=0 HUB_FAKE_SCENARIO=%s exec %q \"$@\"\n", probe, scenario, exe)
	if err := hubtest.WriteScript(bin, []byte(script)); err != nil {
		t.Fatal(err)
	}
	return bin
}

func use(name string) {
	usedMu.Lock()
	defer usedMu.Unlock()
	if _, ok := scenarios[name]; !ok {
		panic("unknown scenario " + name)
	}
	used[name] = true
}
