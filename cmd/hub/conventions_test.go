package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/hubtest"
)

// TestUsageMessages pins the first line of each usage error of the CLI
// conventions: exit 2, nothing on stdout.
func TestUsageMessages(t *testing.T) {
	const runNote = " (flags go before the prompt; put a prompt that starts with - after --)"
	tests := []struct {
		env  string // K=V, or ""
		args []string
		want string // the first line on stderr; a trailing "…" matches a prefix
	}{
		{"", []string{"rnu"}, `hub: unknown command "rnu" (commands: run, chat, batch, …`},
		{"", []string{"docter", "x"}, `hub: unknown command "docter" (commands: run, chat, batch, …`},
		{"", []string{"help", "rnu"}, `hub: unknown command "rnu" (commands: run, chat, batch, …`},
		{"", []string{"run", "--agent", "opencode", "--timeout", "10", "x"}, `hub: invalid value "10" for flag --timeout: use a unit, e.g. 10s or 10m`},
		{"", []string{"run", "--agent", "opencode", "--timeout=1.5", "x"}, `hub: invalid value "1.5" for flag --timeout: use a unit, e.g. 1.5s or 1.5m`},
		{"", []string{"run", "--agent", "opencode", "--timeout", "soon", "x"}, `hub: invalid value "soon" for flag --timeout: time: invalid duration "soon" (a duration is a number and a unit: 300ms, 10s, 5m, 1h30m)`},
		{"HUB_IDLE_TIMEOUT=30", []string{"run", "--agent", "opencode", "x"}, `hub: invalid value "30" in environment variable "HUB_IDLE_TIMEOUT" (for --idle-timeout): use a unit, e.g. 30s or 30m`},
		{"", []string{"run", "--foo", "x"}, "hub: flag provided but not defined: --foo" + runNote},
		{"", []string{"run", "-foo", "x"}, "hub: flag provided but not defined: --foo" + runNote},
		{"", []string{"run", "--timout", "1s", "x"}, "hub: flag provided but not defined: --timout; did you mean --timeout?" + runNote},
		{"", []string{"agents", "--jsn"}, "hub: flag provided but not defined: --jsn; did you mean --json?"},
		{"", []string{"--verison"}, "hub: flag provided but not defined: --verison; did you mean --version?"},
		{"", []string{"run", "--agent", "opencode", "--max-tokens", "many", "x"}, `hub: invalid value "many" for flag --max-tokens: want a whole number`},
		{"HUB_MAX_TURNS=1.5", []string{"run", "--agent", "opencode", "x"}, `hub: invalid value "1.5" in environment variable "HUB_MAX_TURNS" (for --max-turns): want a whole number`},
		{"HUB_TTY=yes", []string{"run", "--agent", "opencode", "x"}, `hub: invalid value "yes" in environment variable "HUB_TTY" (for --tty): want true or false (or 1 or 0)`},
		{"", []string{"run", "--agent", "opencode", "--max-cost", "lots", "x"}, `hub: invalid value "lots" for flag --max-cost: want a number`},
		{"", []string{"run", "--agent", "opencode", "--yes=maybe", "x"}, `hub: invalid value "maybe" for flag --yes: want true or false`},
		{"", []string{"run", "--agent", "opencode", "--timeout"}, "hub: flag needs a value: --timeout"},
		{"", []string{"--version", "x"}, `hub: --version takes no arguments, got ["x"]`},
		{"", []string{"completion"}, "hub: completion takes one shell (bash, zsh or fish), got 0 arguments"},
		{"", []string{"completion", "tcsh"}, `hub: completion: unknown shell "tcsh" (bash, zsh or fish)`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			if k, v, ok := strings.Cut(tt.env, "="); ok {
				t.Setenv(k, v)
			}
			code, out, errOut := hubCLI(t, "", tt.args...)
			first, _, _ := strings.Cut(errOut, "\n")
			match := first == tt.want
			if prefix, ok := strings.CutSuffix(tt.want, "…"); ok {
				match = strings.HasPrefix(first, prefix)
			}
			if code != exitUsage || !match || out != "" {
				t.Errorf("hub %q = exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout and %q", tt.args, code, out, errOut, tt.want)
			}
		})
	}
}

// TestUnknownCommand checks the whole unknown-command message: every
// command listed, the nearest one suggested when it is a typo away.
func TestUnknownCommand(t *testing.T) {
	app := newApp(nil, nil, nil, nil)
	app.Setup()
	var names []string
	for _, c := range app.VisibleCommands() {
		names = append(names, c.Name)
	}
	list := strings.Join(names, ", ")
	for _, tt := range []struct{ word, suggest string }{
		{"rnu", "run"}, {"docter", "doctor"}, {"agnets", "agents"}, {"completions", "completion"}, {"xyzzy", ""},
	} {
		want := fmt.Sprintf("hub: unknown command %q (commands: %s)", tt.word, list)
		if tt.suggest != "" {
			want += fmt.Sprintf("; did you mean %q?", tt.suggest)
		}
		code, _, errOut := hubCLI(t, "", tt.word)
		if first, _, _ := strings.Cut(errOut, "\n"); code != exitUsage || first != want {
			t.Errorf("hub %s = exit %d %q, want 2 and %q", tt.word, code, first, want)
		}
	}
	if !strings.Contains(list, "doctor") || !strings.Contains(list, "completion") {
		t.Errorf("commands %q lack doctor or completion", list)
	}
}

func TestDidYouMean(t *testing.T) {
	words := []string{"run", "apply", "replay", "agents", "doctor", "schema", "completion", "version", "help"}
	for _, tt := range []struct{ word, want string }{
		{"rnu", "run"}, {"ru", "run"}, {"runn", "run"}, {"aply", "apply"}, {"shcema", "schema"},
		{"verison", "version"}, {"completions", "completion"}, {"x", ""}, {"", ""}, {"doctorate", ""}, {"run", "run"},
	} {
		if got := didYouMean(tt.word, words); got != tt.want {
			t.Errorf("didYouMean(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
	for _, tt := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"run", "run", 0}, {"rnu", "run", 1}, {"", "abc", 3}, {"kitten", "sitting", 3}, {"ca", "abc", 3}} {
		if got := osaDistance(tt.a, tt.b); got != tt.d {
			t.Errorf("osaDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.d)
		}
	}
}

func TestVersionFlag(t *testing.T) {
	code1, flag, _ := hubCLI(t, "", "--version")
	code2, cmd, _ := hubCLI(t, "", "version")
	if code1 != 0 || code2 != 0 || flag != cmd || !strings.HasPrefix(flag, "hub ") {
		t.Errorf("hub --version = %d %q, hub version = %d %q; want both 0 and the same line", code1, flag, code2, cmd)
	}
	// --verbose: the same line, then the toolchain and the JSON scan kernel.
	code3, verbose, _ := hubCLI(t, "", "version", "--verbose")
	lines := strings.Split(strings.TrimSuffix(verbose, "\n"), "\n")
	if code3 != 0 || len(lines) != 3 || lines[0]+"\n" != cmd || !strings.HasPrefix(lines[1], "go: go") ||
		!strings.HasPrefix(lines[2], "json scan: avx2 (") && !strings.HasPrefix(lines[2], "json scan: words (") {
		t.Errorf("hub version --verbose = %d %q; want 0, %q, go: and json scan: lines", code3, verbose, cmd)
	}
	code, out, _ := hubCLI(t, "")
	if code != 0 || !strings.Contains(out, "COMMANDS:") {
		t.Errorf("hub alone = exit %d %q, want 0 and the help", code, out)
	}
}

// TestHelpSections checks that hub --help and hub run --help have an
// example section and the exit-status table, one line per bin from
// events (so the table cannot drift from SPEC §4's codes).
func TestHelpSections(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {"run", "--help"}, {"help", "run"}} {
		code, out, errOut := hubCLI(t, "", args...)
		if code != 0 {
			t.Errorf("hub %q = exit %d (stderr %q)", args, code, errOut)
		}
		ex, status := strings.Index(out, "\nEXAMPLES:\n   hub run --agent claude"), strings.Index(out, "\nEXIT STATUS:\n")
		if ex < 0 || status < ex {
			t.Errorf("hub %q has no EXAMPLES section then EXIT STATUS section:\n%s", args, out)
			continue
		}
		table := out[status:]
		for _, want := range []string{"   0    ok\n", "   2    usage error of hub itself"} {
			if !strings.Contains(table, want) {
				t.Errorf("hub %q: exit table lacks %q:\n%s", args, want, table)
			}
		}
		for _, b := range events.Bins() {
			if want := fmt.Sprintf("\n   %-4d %s", b.ExitCode(), b); !strings.Contains(table, want) {
				t.Errorf("hub %q: exit table lacks %q:\n%s", args, want, table)
			}
		}
	}
	_, appHelp, _ := hubCLI(t, "", "--help")
	_, runHelp, _ := hubCLI(t, "", "run", "--help")
	if !strings.Contains(appHelp, "hub doctor") || !strings.Contains(runHelp, "--prompt-file task.md") {
		t.Errorf("examples: hub --help lacks hub doctor or hub run --help lacks --prompt-file:\n%s\n%s", appHelp, runHelp)
	}
}

// hubOnPath puts a `hub` on a new PATH directory that runs this test
// binary as hub, for shells to call, and returns the directory.
func hubOnPath(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	script := fmt.Sprintf("#!/bin/sh\nHUB_TEST_AS_HUB=1 GORACE=atexit_sleep_ms=0 exec %q \"$@\"\n", exe)
	if err := hubtest.WriteScript(filepath.Join(dir, "hub"), []byte(script)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCompletion checks each shell's script: it parses (bash -n, zsh -n,
// fish -n; a shell that is not installed is skipped), and where it can be
// driven without a terminal, completes a command and a flag through hub.
func TestCompletion(t *testing.T) {
	dir := hubOnPath(t)
	path := dir + ":" + os.Getenv("PATH")
	tests := []struct {
		shell string
		// drive completes "hub ru" and "hub run --ag" with the script
		// sourced, printing one word a line; "" when the shell cannot
		// be driven from a script.
		drive string
		want  []string
	}{
		// A redirection and a $(…) on the line are words handed to hub,
		// never run (the file keeps its text, no file is made); a
		// flag's value completes to its choices, not to flags.
		{"bash", `source <(hub completion bash)
COMP_WORDS=(hub ru); COMP_CWORD=1; _hub_cli_bash_autocomplete; printf '%s\n' "${COMPREPLY[@]}"
COMP_WORDS=(hub run --ag); COMP_CWORD=2; _hub_cli_bash_autocomplete; printf '%s\n' "${COMPREPLY[@]}"
echo kept > keep.txt
COMP_WORDS=(hub run ">" keep.txt "\$(touch made)" --ti); COMP_CWORD=5; _hub_cli_bash_autocomplete; printf '%s\n' "${COMPREPLY[@]}"
cat keep.txt; ls made 2>/dev/null
COMP_WORDS=(hub run --permission w); COMP_CWORD=3; _hub_cli_bash_autocomplete; printf '%s\n' "${COMPREPLY[@]}"`,
			[]string{"run", "--agent", "--agent-retries", "--timeout", "kept", "workspace-write"}},
		{"zsh", `autoload -U compinit; compinit -u -D; source <(hub completion zsh); print -r -- ${_comps[hub]}`,
			[]string{"_hub_cli_zsh_autocomplete"}},
		{"fish", `hub completion fish | source
complete -C 'hub ru' | string replace -r '\t.*' ''
complete -C 'hub run --ag' | string replace -r '\t.*' ''
complete -C 'hub -' | string replace -r '\t.*' ''
touch task.md; complete -C 'hub run --prompt-file ta' | string replace -r '\t.*' ''; true`,
			// hub's own flags, once each: no -v (hub refuses it); a flag
			// that takes a file completes files
			[]string{"run", "--agent", "--agent-retries", "-h", "--help", "--version", "task.md"}},
	}
	for _, tt := range tests {
		t.Run(tt.shell, func(t *testing.T) {
			code, script, errOut := hubCLI(t, "", "completion", tt.shell)
			if code != 0 || !strings.Contains(script, "hub") {
				t.Fatalf("hub completion %s = exit %d %q (stderr %q)", tt.shell, code, script, errOut)
			}
			sh, err := exec.LookPath(tt.shell)
			if err != nil {
				t.Skipf("%s is not installed: its completion script is not checked", tt.shell)
			}
			f := filepath.Join(t.TempDir(), "hub."+tt.shell)
			if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := shellCommand(t, sh, "-n", f).CombinedOutput(); err != nil {
				t.Errorf("%s -n on hub completion %s: %v\n%s", tt.shell, tt.shell, err, out)
			}
			cmd := shellCommand(t, sh, "-c", tt.drive)
			cmd.Dir = t.TempDir() // no file names among the words (fish offers them too)
			cmd.Env = append(os.Environ(), "PATH="+path, "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
			out, err := cmd.Output()
			if got := strings.Fields(string(out)); err != nil || strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("%s completing with the script = %q (%v), want %q", tt.shell, got, err, tt.want)
			}
		})
	}
}

// shellCommand is exec.Command for a shell under test, stopped a little
// before the test's deadline (a clear failure rather than the test
// binary's goroutine dump), and not waited for past its own exit when
// something it started in the background holds its output open.
func shellCommand(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-(d.Sub(time.Now()) / 10)))
		t.Cleanup(cancel)
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = time.Second
	return cmd
}

// TestCompletionWords checks what the scripts ask hub: the commands, and
// a command's flags for a word that starts with -. urfave/cli reads the
// word being completed from os.Args, so this runs hub as a process.
func TestCompletionWords(t *testing.T) {
	hubBin := filepath.Join(hubOnPath(t), "hub")
	out, err := shellCommand(t, hubBin, "--generate-bash-completion").Output()
	app := newApp(nil, nil, nil, nil)
	app.Setup()
	for _, c := range app.VisibleCommands() {
		if err != nil || !strings.Contains("\n"+string(out), "\n"+c.Name+"\n") {
			t.Errorf("hub --generate-bash-completion = %q (%v), lacks %s", out, err, c.Name)
		}
	}
	b, err := shellCommand(t, hubBin, "doctor", "--ver", "--generate-bash-completion").Output()
	if err != nil || strings.TrimSpace(string(b)) != "--version-timeout" {
		t.Errorf("hub doctor --ver --generate-bash-completion = %q (%v), want --version-timeout", b, err)
	}
}

// TestClosedPipe: a command whose reader has gone (hub schema | head -1)
// ends quietly with status 0, not as hub's internal failure.
func TestClosedPipe(t *testing.T) {
	hubBin := filepath.Join(hubOnPath(t), "hub")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // the reader is gone before hub writes
	cmd := shellCommand(t, hubBin, "schema")
	cmd.Stdout = w
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	w.Close()
	if err != nil || stderr.String() != "" {
		t.Errorf("hub schema into a closed pipe = %v, stderr %q; want exit 0 and nothing said", err, stderr.String())
	}
}
