package main

import (
	"errors"
	"io"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/grant"
)

// defaultOptions are runOptions as the flags leave them for
// `hub run --agent opencode hi` (TestNewRunOptions checks that they are).
func defaultOptions() runOptions {
	return runOptions{
		Agent:         "opencode",
		Output:        "text",
		Color:         "auto",
		Grace:         budget.DefaultGrace,
		Linger:        budget.DefaultLinger,
		Finalize:      budget.DefaultFinalize,
		SessionIdle:   hub.DefaultSessionIdle,
		AgentRetries:  -1,
		MaxLine:       hub.DefaultMaxLine,
		Permission:    "read-only",
		Auth:          "inherit",
		SchemaRetries: hub.DefaultSchemaRetries,
		Sandbox:       "none",
		Args:          []string{"hi"},
	}
}

// defaultPlan is plan's result for defaultOptions.
func defaultPlan() runPlan {
	return runPlan{
		req: hub.Request{
			Agent:  "opencode",
			Prompt: "hi",
			Limits: budget.Limits{
				Grace:    budget.DefaultGrace,
				Linger:   budget.DefaultLinger,
				Finalize: budget.DefaultFinalize,
			},
			MaxLine:       hub.DefaultMaxLine,
			Permission:    grant.ReadOnly,
			Auth:          grant.AuthInherit,
			SchemaRetries: hub.DefaultSchemaRetries,
		},
		output:      "text",
		color:       "auto",
		sessionIdle: hub.DefaultSessionIdle, // the flag's default; a session's (hub acp's too)
	}
}

// TestPlan: one row per rule that turns hub run's options into a request
// (or a usage error). plan is pure: nothing here reads a file or runs.
func TestPlan(t *testing.T) {
	t.Parallel()
	two := 2
	tests := []struct {
		name string
		opts func(*runOptions)
		want func(*runPlan) // changes to defaultPlan; nil: none
		err  string         // a substring of the usage error; "" for none
	}{
		{name: "defaults"},
		{name: "--agent is required", opts: func(o *runOptions) { o.Agent = "" }, err: "--agent is required"},
		{name: "unknown --agent", opts: func(o *runOptions) { o.Agent = "nope" }, err: `unknown --agent "nope"`},
		{name: "--output jsonl", opts: func(o *runOptions) { o.Output = "jsonl" }, want: func(p *runPlan) { p.output = "jsonl" }},
		{name: "--output json", opts: func(o *runOptions) { o.Output = "json" }, want: func(p *runPlan) { p.output = "json" }},
		{name: "--output xml", opts: func(o *runOptions) { o.Output = "xml" }, err: "--output must be text, jsonl, json or answer"},
		{name: "--output answer", opts: func(o *runOptions) { o.Output = "answer" }, want: func(p *runPlan) { p.output = "answer" }},
		{name: "--schema-retries 0", opts: func(o *runOptions) { o.SchemaRetries = 0 }, want: func(p *runPlan) { p.req.SchemaRetries = -1 }},
		{name: "--schema-retries 3", opts: func(o *runOptions) { o.SchemaRetries = 3 }, want: func(p *runPlan) { p.req.SchemaRetries = 3 }},
		{name: "--schema-retries -1", opts: func(o *runOptions) { o.SchemaRetries = -1 }, err: "--schema-retries must be a count"},
		{name: "--schema", opts: func(o *runOptions) { o.Schema = "s.json" }, want: func(p *runPlan) { p.schemaFile = "s.json" }},
		{name: "--model --resume --cwd --bin pass through",
			opts: func(o *runOptions) { o.Model, o.Resume, o.Cwd, o.Bin = "m", "ses_1", "/tmp", "/bin/oc" },
			want: func(p *runPlan) { p.req.Model, p.req.Resume, p.req.Cwd, p.req.Bin = "m", "ses_1", "/tmp", "/bin/oc" }},
		{name: "prompt words joined with spaces", opts: func(o *runOptions) { o.Args = []string{"two", "words"} },
			want: func(p *runPlan) { p.req.Prompt = "two words" }},
		{name: "- alone is stdin", opts: func(o *runOptions) { o.Args = []string{"-"} },
			want: func(p *runPlan) { p.req.Prompt, p.prompt = "", promptStdin }},
		{name: "- among words is text", opts: func(o *runOptions) { o.Args = []string{"hi", "-"} },
			want: func(p *runPlan) { p.req.Prompt = "hi -" }},
		{name: "--prompt-file", opts: func(o *runOptions) { o.Args, o.PromptFile = nil, "task.md" },
			want: func(p *runPlan) { p.req.Prompt, p.prompt, p.promptFile = "", promptFile, "task.md" }},
		{name: "--prompt-file and words", opts: func(o *runOptions) { o.PromptFile = "task.md" }, err: "not both"},
		{name: "no prompt", opts: func(o *runOptions) { o.Args = nil }, err: "no prompt"},
		{name: "flag after the prompt", opts: func(o *runOptions) { o.Args = []string{"hi", "--timeout", "1s"} }, err: "flag --timeout after the prompt"},
		{name: "flag=value after the prompt", opts: func(o *runOptions) { o.Args = []string{"hi", "--timeout=1s"} }, err: "flag --timeout after the prompt"},
		{name: "one-dash flag after the prompt", opts: func(o *runOptions) { o.Args = []string{"hi", "-env", "K=V"} }, err: "flag --env after the prompt"},
		{name: "help flag after the prompt", opts: func(o *runOptions) { o.Args = []string{"hi", "-h"} }, err: "flag -h after the prompt"},
		{name: "flag after stdin's -", opts: func(o *runOptions) { o.Args = []string{"-", "--grace", "1s"} }, err: "flag --grace after the prompt"},
		{name: "flag after the prompt, before the agent check", opts: func(o *runOptions) { o.Agent, o.Args = "", []string{"hi", "--agent", "claude"} }, err: "flag --agent after the prompt"},
		{name: "unknown option after the prompt", opts: func(o *runOptions) { o.Args = []string{"hi", "-v"} }, err: `"-v" after the prompt is not a hub run flag`},
		{name: "unknown long option after the prompt", opts: func(o *runOptions) { o.Args = []string{"hi", "--verbose=2"} }, err: `"--verbose=2" after the prompt is not a hub run flag`},
		{name: "-- after the prompt", opts: func(o *runOptions) { o.Args = []string{"hi", "--", "there"} }, err: "-- after the prompt's first word"},
		{name: "dash words that are not options are text", opts: func(o *runOptions) { o.Args = []string{"what", "is", "-5", "->", "- x"} },
			want: func(p *runPlan) { p.req.Prompt = "what is -5 -> - x" }},
		{name: "after -- every word is prompt",
			opts: func(o *runOptions) { o.Args, o.DashDash = []string{"hi", "--timeout", "1s", "-v", "--"}, true },
			want: func(p *runPlan) { p.req.Prompt = "hi --timeout 1s -v --" }},
		{name: "--env taken whole",
			opts: func(o *runOptions) { o.Env = []string{`K={"a":1,"b":2}`, "S= a, b ", "E="} },
			want: func(p *runPlan) { p.req.Env = []string{`K={"a":1,"b":2}`, "S= a, b ", "E="} }},
		{name: "--env without =", opts: func(o *runOptions) { o.Env = []string{"NOEQUALS"} }, err: `--env "NOEQUALS": want K=V`},
		{name: "--env without a name", opts: func(o *runOptions) { o.Env = []string{"=V"} }, err: `--env "=V": want K=V`},
		{name: "--timeout", opts: func(o *runOptions) { o.Timeout = time.Minute }, want: func(p *runPlan) { p.req.Limits.Timeout = time.Minute }},
		{name: "--timeout 0 is no limit", opts: func(o *runOptions) { o.Timeout = 0 }},
		{name: "--timeout negative", opts: func(o *runOptions) { o.Timeout = -time.Second }, err: "--timeout must not be negative"},
		{name: "--idle-timeout", opts: func(o *runOptions) { o.IdleTimeout = time.Minute }, want: func(p *runPlan) { p.req.Limits.IdleTimeout = time.Minute }},
		{name: "--idle-timeout negative", opts: func(o *runOptions) { o.IdleTimeout = -1 }, err: "--idle-timeout must not be negative"},
		{name: "--grace", opts: func(o *runOptions) { o.Grace = time.Second }, want: func(p *runPlan) { p.req.Limits.Grace = time.Second }},
		{name: "--grace 0 is none", opts: func(o *runOptions) { o.Grace = 0 }, want: func(p *runPlan) { p.req.Limits.Grace = -1 }},
		{name: "--grace negative", opts: func(o *runOptions) { o.Grace = -1 }, err: "--grace must not be negative"},
		{name: "--linger", opts: func(o *runOptions) { o.Linger = time.Second }, want: func(p *runPlan) { p.req.Limits.Linger = time.Second }},
		{name: "--linger 0 is none", opts: func(o *runOptions) { o.Linger = 0 }, want: func(p *runPlan) { p.req.Limits.Linger = -1 }},
		{name: "--linger negative", opts: func(o *runOptions) { o.Linger = -1 }, err: "--linger must not be negative"},
		{name: "--finalize-timeout", opts: func(o *runOptions) { o.Finalize = time.Second }, want: func(p *runPlan) { p.req.Limits.Finalize = time.Second }},
		{name: "--finalize-timeout 0 is none", opts: func(o *runOptions) { o.Finalize = 0 }, want: func(p *runPlan) { p.req.Limits.Finalize = -1 }},
		{name: "--finalize-timeout negative", opts: func(o *runOptions) { o.Finalize = -1 }, err: "--finalize-timeout must not be negative"},
		{name: "--max-cost", opts: func(o *runOptions) { o.MaxCostUSD = 0.5 }, want: func(p *runPlan) { p.req.Limits.MaxCostUSD = 0.5 }},
		{name: "--max-cost negative", opts: func(o *runOptions) { o.MaxCostUSD = -1 }, err: "--max-cost must be a number"},
		{name: "--max-cost NaN", opts: func(o *runOptions) { o.MaxCostUSD = math.NaN() }, err: "--max-cost must be a number"},
		{name: "--max-cost Inf", opts: func(o *runOptions) { o.MaxCostUSD = math.Inf(1) }, err: "--max-cost must be a number"},
		{name: "--max-tokens --max-turns --max-tool-steps",
			opts: func(o *runOptions) { o.MaxTokens, o.MaxTurns, o.MaxToolSteps = 100, 3, 2 },
			want: func(p *runPlan) { p.req.Limits.MaxTokens, p.req.Limits.MaxTurns, p.req.Limits.MaxToolSteps = 100, 3, 2 }},
		{name: "--max-tokens negative", opts: func(o *runOptions) { o.MaxTokens = -5 }, err: "--max-tokens must not be negative"},
		{name: "--max-turns negative", opts: func(o *runOptions) { o.MaxTurns = -5 }, err: "--max-turns must not be negative"},
		{name: "--max-tool-steps negative", opts: func(o *runOptions) { o.MaxToolSteps = -5 }, err: "--max-tool-steps must not be negative"},
		{name: "--max-line", opts: func(o *runOptions) { o.MaxLine = 4096 }, want: func(p *runPlan) { p.req.MaxLine = 4096 }},
		{name: "--permission", opts: func(o *runOptions) { o.Permission = "workspace-write" }, want: func(p *runPlan) { p.req.Permission = grant.WorkspaceWrite }},
		{name: "--permission empty is the default", opts: func(o *runOptions) { o.Permission = "" }},
		{name: "--permission unknown", opts: func(o *runOptions) { o.Permission = "write" }, err: `--permission "write": want one of none, read-only, workspace-write, full`},
		{name: "--auth login", opts: func(o *runOptions) { o.Auth = "login" }, want: func(p *runPlan) { p.req.Auth = grant.AuthLogin }},
		{name: "--auth unknown", opts: func(o *runOptions) { o.Auth = "key" }, err: `--auth "key": want inherit or login`},
		{name: "--confirm", opts: func(o *runOptions) { o.Confirm = true }, want: func(p *runPlan) { p.approval.confirm = true }},
		{name: "--yes", opts: func(o *runOptions) { o.Yes = true }, want: func(p *runPlan) { p.approval.yes = true }},
		{name: "--confirm and --yes", opts: func(o *runOptions) { o.Confirm, o.Yes = true, true }, err: "give one of them"},
		{name: "--max-line negative", opts: func(o *runOptions) { o.MaxLine = -5 }, err: "--max-line must not be negative"},
		{name: "--agent-retries with a warning", opts: func(o *runOptions) { o.Agent, o.AgentRetries = "pi", 2 },
			want: func(p *runPlan) {
				p.req.Agent, p.req.AgentRetries = "pi", &two
				p.warning = "--agent-retries 2: pi takes its retry counts only from settings.json: hub stops it at retry notice N+1, but the provider SDK's own retries inside each attempt are not seen; set retry.provider.maxRetries in pi's settings.json"
			}},
		{name: "--agent-retries without a warning", opts: func(o *runOptions) { o.Agent, o.AgentRetries = "claude", 2 },
			want: func(p *runPlan) { p.req.Agent, p.req.AgentRetries = "claude", &two }},
		{name: "--agent-retries -2", opts: func(o *runOptions) { o.AgentRetries = -2 }, err: "--agent-retries must be -1"},
		{name: "prices for an agent that reports no cost", opts: func(o *runOptions) { o.Agent = "codex" },
			want: func(p *runPlan) { p.req.Agent, p.loadPrices = "codex", true }},
		{name: "--prices for an agent that reports its cost", opts: func(o *runOptions) { o.Prices, o.PricesSet = "p.json", true },
			want: func(p *runPlan) { p.loadPrices, p.pricesFile = true, "p.json" }},
		{name: "--raw-log", opts: func(o *runOptions) { o.RawLog = "raw.jsonl" }, want: func(p *runPlan) { p.rawLog = "raw.jsonl" }},
		{name: "--no-fail-fast", opts: func(o *runOptions) { o.NoFailFast = true }, want: func(p *runPlan) { p.req.NoFailFast = true }},
		{name: "--color never", opts: func(o *runOptions) { o.Color = "never" }, want: func(p *runPlan) { p.color = "never" }},
		{name: "--color unknown", opts: func(o *runOptions) { o.Color = "yes" }, err: `--color must be auto, always or never, not "yes"`},
		{name: "--acp-command split as a shell would", opts: func(o *runOptions) { o.Agent, o.ACPCommand = "acp", `npx 'my agent' --flag="a b" \x` },
			want: func(p *runPlan) {
				p.req.Agent, p.req.Bin, p.req.Args = "acp", "npx", []string{"my agent", "--flag=a b", "x"}
			}},
		{name: "--agent acp without --acp-command", opts: func(o *runOptions) { o.Agent = "acp" }, err: `--agent acp needs --acp-command "CMD ARGS"`},
		{name: "--acp-command blank", opts: func(o *runOptions) { o.Agent, o.ACPCommand = "acp", "  " }, err: `--agent acp needs --acp-command`},
		{name: "--acp-command unbalanced quote", opts: func(o *runOptions) { o.Agent, o.ACPCommand = "acp", `opencode "acp` }, err: `--acp-command "opencode \"acp"`},
		{name: "--acp-command with --bin", opts: func(o *runOptions) { o.Agent, o.ACPCommand, o.Bin = "acp", "opencode acp", "/bin/x" }, err: "takes its program from --acp-command, not --bin"},
		{name: "--acp-command for another agent", opts: func(o *runOptions) { o.ACPCommand = "opencode acp" }, err: "--acp-command is for --agent acp, not opencode"},
		{name: "--session-in without a prompt", opts: func(o *runOptions) { o.SessionIn, o.Args = "in.jsonl", nil },
			want: func(p *runPlan) { p.session, p.sessionIn, p.prompt, p.req.Prompt = true, "in.jsonl", promptNone, "" }},
		{name: "--session-in with a first prompt and turn limits", opts: func(o *runOptions) { o.SessionIn, o.TurnTimeout, o.SessionIdle = "-", time.Minute, 0 },
			want: func(p *runPlan) { p.session, p.sessionIn, p.turnTimeout, p.sessionIdle = true, "-", time.Minute, 0 }},
		{name: "--session-in - with the prompt on stdin", opts: func(o *runOptions) { o.SessionIn, o.Args = "-", []string{"-"} }, err: "stdin cannot carry both"},
		{name: "--session-in with --schema", opts: func(o *runOptions) { o.SessionIn, o.Schema = "in.jsonl", "s.json" }, err: "--schema is checked per run"},
		{name: "--session-in with --sandbox", opts: func(o *runOptions) { o.SessionIn, o.Sandbox = "in.jsonl", "worktree" }, err: "--sandbox is made and applied per run"},
		{name: "--turn-timeout negative", opts: func(o *runOptions) { o.TurnTimeout = -time.Second }, err: "--turn-timeout must not be negative"},
		{name: "hub chat without a prompt", opts: func(o *runOptions) { o.Chat, o.Args = true, nil },
			want: func(p *runPlan) { p.session, p.prompt, p.req.Prompt = true, promptNone, "" }},
	}
	for _, tt := range tests {
		o := defaultOptions()
		if tt.opts != nil {
			tt.opts(&o)
		}
		got, err := o.plan()
		if tt.err != "" {
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: plan() = %v, want a usage error with %q", tt.name, err, tt.err)
			}
			continue
		}
		want := defaultPlan()
		if tt.want != nil {
			tt.want(&want)
		}
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: plan() = %+v, %v\nwant %+v", tt.name, got, err, want)
		}
	}
}

// TestEndedByDashDash: whether hub run's flags ended with "--", read as Go's
// flag package reads them.
func TestEndedByDashDash(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tail []string
		want bool
	}{
		{[]string{"--agent", "x", "hi", "--timeout", "1s"}, false},
		{[]string{"--agent", "x", "--", "hi", "--timeout", "1s"}, true},
		{[]string{"--agent=x", "--", "hi"}, true},
		{[]string{"--model", "--", "hi", "--timeout", "1s"}, false}, // "--" is --model's value
		{[]string{"--model", "--model", "--", "hi"}, true},
		{[]string{"--no-fail-fast", "--", "hi"}, true}, // a bool flag takes no value
		{[]string{"-no-fail-fast=true", "--", "hi"}, true},
		{[]string{"--agent", "x", "-", "--", "hi"}, false}, // "-" ends the flags
		{[]string{"--", "--"}, true},
		{nil, false},
	}
	for _, tt := range tests {
		if got := endedByDashDash(tt.tail); got != tt.want {
			t.Errorf("endedByDashDash(%q) = %v, want %v", tt.tail, got, tt.want)
		}
	}
}

// parseRun parses `hub run args…` with hub's own app and returns the
// options it gives, running nothing.
func parseRun(t *testing.T, args ...string) (runOptions, int) {
	t.Helper()
	app := newApp(nil, strings.NewReader(""), io.Discard, io.Discard)
	var got runOptions
	for _, c := range app.Commands {
		if c.Name == "run" {
			c.Action = func(c *cli.Context) error { got = newRunOptions(c); return nil }
		}
	}
	err := app.Run(append([]string{"hub", "run"}, args...))
	return got, exitCode(err)
}

// clearHubEnv unsets every HUB_* variable for the test, so that flags show
// their own defaults.
func clearHubEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "HUB_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

// TestNewRunOptions: the flags as newRunOptions reads them: defaults, "0" as
// given, a "--" seen though the flag package swallows it, repeatable values
// whole.
func TestNewRunOptions(t *testing.T) {
	clearHubEnv(t)
	tests := []struct {
		args []string
		want func(*runOptions)
	}{
		{[]string{"--agent", "opencode", "hi"}, nil},
		{[]string{"--agent", "opencode", "--timeout", "0", "--idle-timeout", "0", "--grace", "0", "--linger", "0", "--finalize-timeout", "0", "hi"},
			func(o *runOptions) { o.Grace, o.Linger, o.Finalize = 0, 0, 0 }},
		{[]string{"--agent", "opencode", "--grace", "2s", "--linger=3s", "hi"},
			func(o *runOptions) { o.Grace, o.Linger = 2*time.Second, 3*time.Second }},
		{[]string{"--agent", "opencode", "--", "hi", "--timeout", "1s"},
			func(o *runOptions) { o.Args, o.DashDash = []string{"hi", "--timeout", "1s"}, true }},
		{[]string{"--agent", "opencode", "hi", "--timeout", "1s"},
			func(o *runOptions) { o.Args = []string{"hi", "--timeout", "1s"} }},
		{[]string{"--agent", "opencode", "--model", "--", "hi"},
			func(o *runOptions) { o.Model = "--" }},
		{[]string{"--agent", "opencode", "--env", `K={"a":1,"b":2}`, "--env", "S= a, b ", "hi"},
			func(o *runOptions) { o.Env = []string{`K={"a":1,"b":2}`, "S= a, b "} }},
		{[]string{"--agent", "opencode", "--prices", "", "hi"},
			func(o *runOptions) { o.PricesSet = true }},
		{[]string{"--agent", "opencode", "--no-fail-fast", "--", "-"},
			func(o *runOptions) { o.NoFailFast, o.Args, o.DashDash = true, []string{"-"}, true }},
	}
	for _, tt := range tests {
		got, code := parseRun(t, tt.args...)
		want := defaultOptions()
		if tt.want != nil {
			tt.want(&want)
		}
		if code != 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("hub run %q: exit %d, options %+v\nwant %+v", tt.args, code, got, want)
		}
	}
}
