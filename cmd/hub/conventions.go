package main

// The conventions of a Go CLI that hub's commands share: hub --version,
// the unknown-command error, usage errors that name flags as --flag, and
// the examples and exit-status sections of the help.

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/normalize"
)

// appAction runs when no command is named: hub --version, hub alone
// (the help), or an unknown command (a usage error).
func appAction(c *cli.Context) error {
	if c.Bool("version") {
		if c.NArg() > 0 {
			return usagef("--version takes no arguments, got %q", c.Args().Slice())
		}
		return printVersion(c.App.Writer, false)
	}
	if c.NArg() == 0 {
		return cli.ShowAppHelp(c)
	}
	return unknownCommand(c.App, c.Args().First())
}

// printVersion is what hub version and hub --version print; verbose (hub
// version --verbose) adds the toolchain, the platform and the JSON scan
// kernel this process chose (normalize.Kernel).
func printVersion(w io.Writer, verbose bool) error {
	_, err := fmt.Fprintf(w, "hub %s (schema hub.event/v%d)\n", hubVersion(), events.Version)
	if err == nil && verbose {
		_, err = fmt.Fprintf(w, "go: %s %s/%s\njson scan: %v\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, normalize.Kernel())
	}
	return err
}

// unknownCommand is the usage error of `hub NAME` (and `hub help NAME`)
// for a NAME that is no command: it lists the commands, and the nearest
// one when it is a typo away.
func unknownCommand(app *cli.App, name string) error {
	var names []string
	for _, cmd := range app.VisibleCommands() {
		names = append(names, cmd.Name)
	}
	msg := fmt.Sprintf("unknown command %q (commands: %s)", name, strings.Join(names, ", "))
	if s := didYouMean(name, names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return usageError{msg}
}

// helpTopicError turns urfave/cli's error for `hub help NAME` with an
// unknown NAME ("No help topic for 'NAME'") into unknownCommand's; other
// errors are returned as they are.
func helpTopicError(app *cli.App, err error) error {
	const prefix, suffix = "No help topic for '", "'"
	var ec cli.ExitCoder
	if errors.As(err, &ec) {
		if msg := ec.Error(); strings.HasPrefix(msg, prefix) && strings.HasSuffix(msg, suffix) {
			return unknownCommand(app, msg[len(prefix):len(msg)-len(suffix)])
		}
	}
	return err
}

// didYouMean returns the candidate nearest to word when it is a typo away
// (optimal string alignment distance: an edit or a swap of neighbours per
// five letters, at least one), else "".
func didYouMean(word string, candidates []string) string {
	best, bestD := "", 1+len(word)/5
	for _, c := range candidates {
		if d := osaDistance(word, c); d <= bestD && (best == "" || d < bestD) {
			best, bestD = c, d
		}
	}
	return best
}

// osaDistance is the optimal string alignment distance between a and b,
// in bytes: insertions, deletions, substitutions and swaps of two
// neighbours, each counting one.
func osaDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// The flag errors of Go's flag package, which urfave/cli passes on: they
// name a flag with one dash whatever was typed.
var (
	undefinedFlagRe = regexp.MustCompile(`^flag provided but not defined: -(\S+)$`)
	badValueRe      = regexp.MustCompile(`^invalid value (".*") for flag -(\S+): (.*)$`)
	badBoolRe       = regexp.MustCompile(`^invalid boolean value (".*") for -(\S+): (.*)$`)
	needsArgRe      = regexp.MustCompile(`^flag needs an argument: -(\S+)$`)
	// urfave/cli's own, for a value from an environment variable.
	badEnvRe = regexp.MustCompile(`^could not parse (".*") (?:as [\w ]+ value )?from (.+?) (?:as value )?for flag (\S+): (.*)$`)
)

// flagMessage is the text of a flag parsing error for people: every flag
// written as it is typed (--timeout, -h), a duration without a unit says
// to add one, a bad number says what was wanted, and an unknown flag gets
// the nearest of the command's flags when it is a typo away.
func flagMessage(c *cli.Context, err error) string {
	msg := err.Error()
	if m := undefinedFlagRe.FindStringSubmatch(msg); m != nil {
		msg = "flag provided but not defined: " + dashed(m[1])
		var names []string
		for _, f := range commandFlags(c) {
			names = append(names, f.Names()...)
		}
		if s := didYouMean(m[1], names); s != "" {
			msg += "; did you mean " + dashed(s) + "?"
		}
		return msg
	}
	if m := badValueRe.FindStringSubmatch(msg); m != nil {
		value, name, why := unquote(m[1]), m[2], m[3]
		return fmt.Sprintf("invalid value %s for flag %s: %s", m[1], dashed(name), valueProblem(lookupFlag(c, name), value, why))
	}
	if m := badBoolRe.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("invalid value %s for flag %s: want true or false", m[1], dashed(m[2]))
	}
	if m := needsArgRe.FindStringSubmatch(msg); m != nil {
		return "flag needs a value: " + dashed(m[1])
	}
	if m := badEnvRe.FindStringSubmatch(msg); m != nil {
		value, source, name, why := unquote(m[1]), m[2], m[3], m[4]
		return fmt.Sprintf("invalid value %s in %s (for %s): %s", m[1], source, dashed(name), valueProblem(lookupFlag(c, name), value, why))
	}
	return msg
}

// valueProblem says what is wrong with value for flag f (nil: unknown),
// given the parser's reason why.
func valueProblem(f cli.Flag, value, why string) string {
	switch f.(type) {
	case *cli.DurationFlag:
		if _, err := strconv.ParseFloat(value, 64); err == nil {
			return fmt.Sprintf("use a unit, e.g. %ss or %sm", value, value)
		}
		// Go's flag package says only "parse error".
		if _, err := time.ParseDuration(value); err != nil {
			return err.Error() + " (a duration is a number and a unit: 300ms, 10s, 5m, 1h30m)"
		}
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
		// "parse error" from a flag, strconv's "invalid syntax" from
		// an environment variable.
		if why == "parse error" || strings.HasSuffix(why, "invalid syntax") {
			return "want a whole number"
		}
	case *cli.Float64Flag:
		if why == "parse error" || strings.HasSuffix(why, "invalid syntax") {
			return "want a number"
		}
	case *cli.BoolFlag:
		return "want true or false (or 1 or 0)"
	}
	return why
}

// commandFlags are the flags of c's command, or the app's.
func commandFlags(c *cli.Context) []cli.Flag {
	if c.Command != nil && len(c.Command.Flags) > 0 {
		return c.Command.Flags
	}
	return c.App.Flags
}

func lookupFlag(c *cli.Context, name string) cli.Flag {
	for _, f := range commandFlags(c) {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

func unquote(q string) string {
	if s, err := strconv.Unquote(q); err == nil {
		return s
	}
	return strings.Trim(q, `"`)
}

// exitStatusText is the EXIT STATUS section of the help: 0, 2 (usage) and
// every bin's exit code (events.Bin.ExitCode, SPEC §4), in order.
func exitStatusText() string {
	type row struct {
		code int
		text string
	}
	rows := []row{{exitOK, "ok"}, {exitUsage, "usage error of hub itself: nothing was started"}}
	for _, b := range events.Bins() {
		text := string(b)
		if rs := b.Reasons(); len(rs) > 0 {
			var names []string
			for _, r := range rs {
				names = append(names, string(r))
			}
			text += " (" + strings.Join(names, ", ") + ")"
		}
		rows = append(rows, row{b.ExitCode(), text})
	}
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Compare(a.code, b.code) })
	var sb strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&sb, "   %-4d %s\n", r.code, r.text)
	}
	return sb.String()
}

const appExamples = `   hub run --agent claude "explain main.go"
   hub run --agent codex --output jsonl --timeout 10m --idle-timeout 2m -- "$PROMPT"
   echo "summarize README.md" | hub run --agent opencode -
   hub chat --agent claude           # a conversation on the terminal: one session, a turn a line
   hub agents                        # installed agents, versions, minimums
   hub doctor                        # can each agent run here? exit 1 if one cannot
   source <(hub completion bash)     # shell completion (also zsh, fish)
`

const runExamples = `   hub run --agent claude "explain main.go"
   hub run --agent opencode --model anthropic/claude-haiku-4-5 --timeout 10m "fix the failing test"
   hub run --agent codex --output json --permission workspace-write --sandbox worktree "add a test for parse()"
   hub run --agent pi --output jsonl -- "$PROMPT"      # after --, a prompt may start with -
   hub run --agent claude --prompt-file task.md --raw-log raw.jsonl
   echo "summarize README.md" | hub run --agent opencode -
   hub run --agent claude --output jsonl --session-in prompts.jsonl   # a session: {"prompt":"…"} a line, one agent process
`

// helpSections are the EXAMPLES and EXIT STATUS sections appended to a
// help template (text/template: the text holds no "{{").
func helpSections(examples string) string {
	return "\nEXAMPLES:\n" + examples + "\nEXIT STATUS:\n" + exitStatusText()
}

// appHelpTemplate is hub --help; runHelpTemplate is hub run --help.
func appHelpTemplate() string { return cli.AppHelpTemplate + helpSections(appExamples) }
func runHelpTemplate() string { return cli.CommandHelpTemplate + helpSections(runExamples) }
