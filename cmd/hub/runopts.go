package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/urfave/cli/v2"
	"mvdan.cc/sh/v3/shell"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/answer"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/sandbox"
	"github.com/hubcli/hub/statusfile"
)

// runOptions are hub run's flags and arguments as given (cli/cli's options
// struct). newRunOptions fills it from the command line; plan checks it and
// turns it into the run's request without touching anything outside it.
//
// Every duration, and every limit but MaxLine (0: the default cap), means
// none at 0; a flag left unset holds its default (Grace, Linger and
// Finalize have one; the other durations and limits default to none).
type runOptions struct {
	Agent      string
	Model      string
	Cwd        string
	Resume     string
	Bin        string
	ACPCommand string // --acp-command "CMD ARGS", for --agent acp
	// ACPName is the name the config file gives an ACP agent of its own
	// ([agents.NAME] with acp-command) when Agent was that name; Agent is
	// then "acp".
	ACPName    string
	Output     string // text, jsonl or json
	Color      string // --color: auto, always or never
	RawLog     string // --raw-log FILE, "" for none
	StatusFile string // --status-file FILE, "" for none
	PromptFile string
	Files      []string // --file PATH…: context files, read by load
	// SessionIn is --session-in FILE (- for stdin): a session's prompts,
	// "" for a one-shot run.
	SessionIn  string
	Prices     string // --prices FILE
	PricesSet  bool   // --prices (or HUB_PRICES) was given, even as ""
	Env        []string
	Permission string // --permission, "" for the default (read-only)
	Auth       string // --auth: inherit or login
	Confirm    bool
	Approve    string // --approve: "", tty, deny, fail, editor (hub acp)
	Yes        bool
	Schema     string // --schema FILE, "" for none
	// SchemaRetries is --schema-retries: repairs of an answer that does
	// not match --schema (0 = none).
	SchemaRetries int
	// SystemPrompt and AppendSystemPrompt are --system-prompt and
	// --append-system-prompt as given: TEXT, or @FILE (read by load).
	SystemPrompt       string
	AppendSystemPrompt string
	Sandbox            string   // --sandbox: none, copy or worktree
	Protect            []string // --protect GLOB…
	Apply              bool
	DiffOut            string // --diff-out FILE, "" for none
	KeepSandbox        bool

	Timeout      time.Duration // 0 = no limit
	IdleTimeout  time.Duration // 0 = none
	Grace        time.Duration // 0 = none: SIGKILL right after SIGTERM
	Linger       time.Duration // 0 = none: stop the agent at its terminal event
	Finalize     time.Duration // 0 = none: no final-answer resume
	TurnTimeout  time.Duration // a session's turns; 0 = none
	SessionIdle  time.Duration // a session's wait for a prompt; 0 = never
	MaxCostUSD   float64
	MaxTokens    int64
	MaxTurns     int64
	MaxToolSteps int64
	AgentRetries int // -1 = the agent's default
	MaxLine      int // 0 = hub.DefaultMaxLine
	NoFailFast   bool
	TTY          bool // the agent on a pseudo-terminal
	// Chat is hub chat: a session whose prompts come from the terminal.
	Chat bool
	// ACP is hub acp: the ACP client sends the prompts.
	ACP bool

	// Args are the words after the flags. DashDash says a "--" ended the
	// flags: then every word is prompt, dashes or not.
	Args     []string
	DashDash bool
}

// newRunOptions reads hub run's flags and arguments from c.
func newRunOptions(c *cli.Context) runOptions {
	return runOptions{
		Agent:              c.String("agent"),
		Model:              c.String("model"),
		Cwd:                c.String("cwd"),
		Resume:             c.String("resume"),
		Bin:                c.String("bin"),
		ACPCommand:         c.String("acp-command"),
		Output:             c.String("output"),
		Color:              c.String("color"),
		RawLog:             c.String("raw-log"),
		StatusFile:         c.String("status-file"),
		PromptFile:         c.String("prompt-file"),
		Files:              c.StringSlice("file"),
		SessionIn:          c.String("session-in"),
		Prices:             c.String("prices"),
		PricesSet:          c.IsSet("prices"),
		Env:                c.StringSlice("env"),
		Permission:         c.String("permission"),
		Auth:               c.String("auth"),
		Confirm:            c.Bool("confirm"),
		Approve:            c.String("approve"),
		Yes:                c.Bool("yes"),
		Schema:             c.String("schema"),
		SchemaRetries:      c.Int("schema-retries"),
		SystemPrompt:       c.String("system-prompt"),
		AppendSystemPrompt: c.String("append-system-prompt"),
		Sandbox:            c.String("sandbox"),
		Protect:            c.StringSlice("protect"),
		Apply:              c.Bool("apply"),
		DiffOut:            c.String("diff-out"),
		KeepSandbox:        c.Bool("keep-sandbox"),
		Timeout:            c.Duration("timeout"),
		IdleTimeout:        c.Duration("idle-timeout"),
		Grace:              c.Duration("grace"),
		Linger:             c.Duration("linger"),
		Finalize:           c.Duration("finalize-timeout"),
		TurnTimeout:        c.Duration("turn-timeout"),
		SessionIdle:        c.Duration("session-idle"),
		MaxCostUSD:         c.Float64("max-cost"),
		MaxTokens:          c.Int64("max-tokens"),
		MaxTurns:           c.Int64("max-turns"),
		MaxToolSteps:       c.Int64("max-tool-steps"),
		AgentRetries:       c.Int("agent-retries"),
		MaxLine:            c.Int("max-line"),
		NoFailFast:         c.Bool("no-fail-fast"),
		TTY:                c.Bool("tty"),
		Args:               c.Args().Slice(),
		DashDash:           endedByDashDash(commandTail(c)),
	}
}

// commandTail returns the words after the command's name as given: Go's
// flag package swallows the "--" that ends the flags, so c.Args() cannot
// tell `-- hi --timeout 1s` (a prompt) from `hi --timeout 1s` (a misplaced
// flag). The parent context (the app's) still holds them.
func commandTail(c *cli.Context) []string {
	if l := c.Lineage(); len(l) > 1 && l[1] != nil {
		return l[1].Args().Tail()
	}
	return nil
}

// promptSource is where a run's prompt comes from.
type promptSource int

const (
	promptArgs  promptSource = iota // the arguments, joined with spaces (in the request)
	promptStdin                     // "-": hub's stdin
	promptFile                      // --prompt-file
	promptNone                      // a session without a first prompt (--session-in, hub chat)
)

// runPlan is a checked hub run: its request, and what is left to do before
// it starts (load) and while it runs (execute).
type runPlan struct {
	req        hub.Request
	prompt     promptSource
	promptFile string
	files      []string // --file, read by load into req.Files
	loadPrices bool     // the agent needs hub's price table (pricesFile on top)
	pricesFile string   // --prices
	output     string
	color      string // --color: auto, always or never
	rawLog     string
	schemaFile string // --schema, compiled by load
	// systemPrompt and appendSystemPrompt are the flags' values, TEXT or
	// @FILE, which load reads into the request.
	systemPrompt, appendSystemPrompt string
	diffOut                          string // --diff-out, opened by load
	warning                          string // printed on stderr before the run starts
	approval                         approval
	approve                          string // --approve's mode; "" for none

	// A session (--session-in, hub chat): its prompts come from sessionIn
	// (a file, or - for stdin) or the terminal; req.Prompt, if any, is
	// its first turn.
	session     bool
	sessionIn   string
	turnTimeout time.Duration // 0: none
	sessionIdle time.Duration // 0: never

	statusFile string             // --status-file
	status     *statusfile.Writer // --status-file's, its first state written by load

	rawLogFile  *os.File // --raw-log, opened by load; execute closes it
	diffOutFile *os.File // --diff-out, opened by load; execute closes it
}

// plan checks o and builds the run's request. It reads no file and starts
// nothing: a usage error here comes before anything runs. The adapter is
// looked up here, once.
func (o runOptions) plan() (runPlan, error) {
	if err := misplacedFlag(o.Args, o.DashDash); err != nil {
		return runPlan{}, err
	}
	if err := o.swallowedFlag(); err != nil {
		return runPlan{}, err
	}
	names := strings.Join(adapters.Names(), ", ")
	if o.Agent == "" {
		return runPlan{}, usagef("run: --agent is required (one of: %s)", names)
	}
	ad, err := adapters.Lookup(o.Agent)
	if err != nil {
		return runPlan{}, usagef("run: unknown --agent %q (one of: %s)", o.Agent, names)
	}
	bin, args, err := o.command(ad.Info())
	if err != nil {
		return runPlan{}, err
	}
	switch o.Output {
	case "text", "jsonl", "json", "answer":
	default:
		return runPlan{}, usagef("run: --output must be text, jsonl, json or answer, not %q", o.Output)
	}
	if err := checkColor(o.Color); err != nil {
		return runPlan{}, err
	}
	p := runPlan{output: o.Output, color: o.Color, rawLog: o.RawLog, pricesFile: o.Prices, files: o.Files, schemaFile: o.Schema, diffOut: o.DiffOut, statusFile: o.StatusFile,
		session: o.session(), sessionIn: o.SessionIn, turnTimeout: o.TurnTimeout, sessionIdle: o.SessionIdle}
	if p.prompt, err = o.promptSource(); err != nil {
		return runPlan{}, err
	}
	if err := o.check(); err != nil {
		return runPlan{}, err
	}
	if err := o.checkSession(p.prompt); err != nil {
		return runPlan{}, err
	}
	perm, err := grant.ParseLevel(orElse(o.Permission, string(grant.ReadOnly)))
	if err != nil {
		return runPlan{}, usagef("run: --%v", err)
	}
	auth, err := grant.ParseAuth(o.Auth)
	if err != nil {
		return runPlan{}, usagef("run: --%v", err)
	}
	mode, err := sandbox.ParseMode(o.Sandbox)
	if err != nil {
		return runPlan{}, usagef("run: --%v", err)
	}
	if mode == sandbox.None {
		for _, f := range []struct {
			name string
			set  bool
		}{{"protect", len(o.Protect) > 0}, {"apply", o.Apply}, {"diff-out", o.DiffOut != ""}, {"keep-sandbox", o.KeepSandbox}} {
			if f.set {
				return runPlan{}, usagef("run: --%s needs --sandbox copy or --sandbox worktree", f.name)
			}
		}
	}
	if err := sandbox.CheckProtect(o.Protect); err != nil {
		return runPlan{}, usagef("run: %v", strings.TrimPrefix(err.Error(), "sandbox: "))
	}
	if o.Confirm && o.Yes {
		return runPlan{}, usagef("run: --confirm asks on the terminal and --yes approves without asking: give one of them")
	}
	p.approval = approval{confirm: o.Confirm, yes: o.Yes}
	if err := o.checkApprove(); err != nil {
		return runPlan{}, err
	}
	p.approve = o.Approve
	p.systemPrompt, p.appendSystemPrompt = o.SystemPrompt, o.AppendSystemPrompt
	p.req = hub.Request{
		Agent:      o.Agent,
		Model:      o.Model,
		Resume:     o.Resume,
		Cwd:        o.Cwd,
		Bin:        bin,
		Args:       args,
		Env:        o.Env,
		Limits:     o.limits(),
		MaxLine:    o.MaxLine,
		NoFailFast: o.NoFailFast,
		TTY:        o.TTY,
		Permission: perm,
		Auth:       auth,
		// The flag's 0 is no repair; the request's 0 is the default.
		SchemaRetries: cmp.Or(o.SchemaRetries, -1),
		Protect:       o.Protect,
		Apply:         o.Apply,
		KeepSandbox:   o.KeepSandbox,
	}
	if mode != sandbox.None {
		p.req.Sandbox = mode
	}
	switch p.prompt {
	case promptArgs:
		p.req.Prompt = strings.Join(o.Args, " ")
	case promptFile:
		p.promptFile = o.PromptFile
	}
	if o.AgentRetries >= 0 {
		n := o.AgentRetries
		p.req.AgentRetries = &n
		if lim := ad.Info().RetryLimits; lim != "" {
			p.warning = fmt.Sprintf("--agent-retries %d: %s", n, lim)
		}
	}
	// Agents that report their own cost do not use the price table: a broken
	// price file in the config directory must not stop them.
	p.loadPrices = !ad.Info().ReportsCost || o.PricesSet
	return p, nil
}

// command returns the agent's program and arguments: --bin for an agent
// hub knows, the words of --acp-command for an ACP agent (info.CallerCommand),
// split as a shell splits a command line (quotes, backslashes; $VARIABLES
// from hub's environment; no globs, no command substitution).
func (o runOptions) command(info adapters.Info) (string, []string, error) {
	if !info.CallerCommand {
		if o.ACPCommand != "" {
			return "", nil, usagef("run: --acp-command is for --agent acp, not %s", o.Agent)
		}
		return o.Bin, nil, nil
	}
	if o.Bin != "" {
		return "", nil, usagef(`run: --agent %s takes its program from --acp-command, not --bin`, o.Agent)
	}
	if strings.TrimSpace(o.ACPCommand) == "" {
		return "", nil, usagef(`run: --agent %s needs --acp-command "CMD ARGS" (for example --acp-command "opencode acp")`, o.Agent)
	}
	words, err := shell.Fields(o.ACPCommand, os.Getenv)
	if err != nil || len(words) == 0 {
		return "", nil, usagef("run: --acp-command %q: %v", o.ACPCommand, cmp.Or(err, errors.New("no program")))
	}
	return words[0], words[1:], nil
}

// promptSource says where the prompt comes from: --prompt-file, stdin ("-"
// alone, not after "--") or the arguments.
func (o runOptions) promptSource() (promptSource, error) {
	switch {
	case o.PromptFile != "" && len(o.Args) > 0:
		return 0, usagef("run: give the prompt as arguments or --prompt-file, not both")
	case o.PromptFile != "":
		return promptFile, nil
	case len(o.Args) == 1 && o.Args[0] == "-" && !o.DashDash:
		// After "--" a "-" is the prompt "-", like every word there: a
		// script's `hub run -- "$PROMPT"` never waits on its stdin.
		return promptStdin, nil
	case len(o.Args) == 0 && o.session():
		return promptNone, nil
	case len(o.Args) == 0:
		return 0, usagef("run: no prompt (pass it as an argument, - for stdin, or --prompt-file; or a session's prompts with --session-in)")
	}
	return promptArgs, nil
}

// check refuses values no flag takes: a malformed --env, negative
// durations and limits, a cost that is not a number.
func (o runOptions) check() error {
	for _, kv := range o.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return usagef("run: --env %q: want K=V", kv)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"timeout", o.Timeout}, {"idle-timeout", o.IdleTimeout}, {"grace", o.Grace}, {"linger", o.Linger}, {"finalize-timeout", o.Finalize},
		{"turn-timeout", o.TurnTimeout}, {"session-idle", o.SessionIdle}} {
		if d.v < 0 {
			return usagef("run: --%s must not be negative (0 means none)", d.name)
		}
	}
	if v := o.MaxCostUSD; v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return usagef("run: --max-cost must be a number of USD ≥ 0")
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"max-tokens", o.MaxTokens}, {"max-turns", o.MaxTurns}, {"max-tool-steps", o.MaxToolSteps}} {
		if n.v < 0 {
			return usagef("run: --%s must not be negative", n.name)
		}
	}
	if o.MaxLine < 0 {
		return usagef("run: --max-line must not be negative")
	}
	if o.SchemaRetries < 0 {
		return usagef("run: --schema-retries must be a count ≥ 0 (0: no repair)")
	}
	if o.AgentRetries < -1 {
		return usagef("run: --agent-retries must be -1 (the agent's default) or a count ≥ 0")
	}
	return nil
}

// session reports whether o runs a session of many turns (--session-in,
// hub chat) rather than one prompt.
func (o runOptions) session() bool { return o.SessionIn != "" || o.Chat }

// checkSession refuses what a session cannot take, before anything
// starts: what hub.NewSession would refuse (--schema, --sandbox and its
// flags: a structured answer and a sandbox are per run), and stdin asked
// to carry both the first prompt and the session's input.
func (o runOptions) checkSession(prompt promptSource) error {
	switch {
	case !o.session():
		return nil
	case o.Schema != "":
		return usagef("run: --schema is checked per run, not per turn of a session: run each structured question with hub run")
	case o.Sandbox != "" && o.Sandbox != string(sandbox.None):
		return usagef("run: --sandbox is made and applied per run, not per session: run sandboxed work with hub run")
	case o.SessionIn == "-" && prompt == promptStdin:
		return usagef("run: stdin cannot carry both the first prompt (-) and the session's input (--session-in -): give the first prompt as an argument, or as the input's first line")
	}
	return nil
}

// limits maps the flags, where 0 means none for every duration, onto
// budget.Limits, where 0 is the default for Grace, Linger and Finalize and
// a negative value none. An unset flag holds its default value, so it
// never reaches Limits as 0.
func (o runOptions) limits() budget.Limits {
	none := func(d time.Duration) time.Duration {
		if d == 0 {
			return -1
		}
		return d
	}
	return budget.Limits{
		Timeout:      o.Timeout,
		IdleTimeout:  o.IdleTimeout,
		Grace:        none(o.Grace),
		Linger:       none(o.Linger),
		Finalize:     none(o.Finalize),
		MaxCostUSD:   o.MaxCostUSD,
		MaxTokens:    o.MaxTokens,
		MaxTurns:     o.MaxTurns,
		MaxToolSteps: o.MaxToolSteps,
	}
}

// misplacedFlag refuses a flag, or a word shaped like one, among the
// prompt's words. Go's flag package stops at the prompt's first word and
// hands the rest over as prompt: `hub run --agent claude hi --timeout 1s`
// would send "hi --timeout 1s" to the model and run without a timeout.
// After "--" (dashDash) every word is prompt. Refused: hub run's flags in
// any form (-timeout, --timeout=1s), other option-shaped words (-v,
// --verbose: a mistyped flag, or a flag of the agent's) and a second "--".
// A lone "-" and dash-words that are not option-shaped ("-5", "->") are
// prompt text.
func misplacedFlag(args []string, dashDash bool) error {
	if dashDash {
		return nil
	}
	for _, w := range args {
		if w == "--" {
			return usagef("run: -- after the prompt's first word: put -- before the whole prompt (hub run [flags] -- PROMPT)")
		}
		name, ok := optionName(w)
		if !ok {
			continue
		}
		if _, known := runFlagTakesValue(name); known {
			return usagef("run: flag %s after the prompt: move it before the prompt, or put the prompt after -- to send %q to the agent as text", dashed(name), w)
		}
		return usagef("run: %q after the prompt is not a hub run flag: put the prompt after -- to send it to the agent as text (hub run [flags] -- PROMPT)", w)
	}
	return nil
}

// swallowedFlag refuses a flag whose value is another hub run flag
// (`--model --timeout 1s`): Go's flag parsing takes the next word as the
// value, so the limit the user typed would silently not apply.
func (o runOptions) swallowedFlag() error {
	values := []struct{ flag, value string }{
		{"agent", o.Agent}, {"model", o.Model}, {"cwd", o.Cwd}, {"resume", o.Resume}, {"bin", o.Bin},
		{"output", o.Output}, {"color", o.Color}, {"raw-log", o.RawLog}, {"prompt-file", o.PromptFile}, {"session-in", o.SessionIn}, {"prices", o.Prices},
		{"permission", o.Permission}, {"auth", o.Auth}, {"schema", o.Schema}, {"sandbox", o.Sandbox}, {"diff-out", o.DiffOut},
	}
	for _, g := range o.Protect {
		values = append(values, struct{ flag, value string }{"protect", g})
	}
	for _, f := range o.Files {
		values = append(values, struct{ flag, value string }{"file", f})
	}
	for _, e := range o.Env {
		values = append(values, struct{ flag, value string }{"env", e})
	}
	for _, v := range values {
		if name, ok := optionName(v.value); ok {
			if _, known := runFlagTakesValue(name); known {
				return usagef("run: --%s took %q as its value, which is a hub run flag: give --%s a value (--%s=VALUE if it starts with -)", v.flag, v.value, v.flag, v.flag)
			}
		}
	}
	return nil
}

// optionName returns the name of an option-shaped word: "-" or "--", then a
// letter, then anything up to an "=" ("--timeout=1s" is "timeout").
func optionName(w string) (string, bool) {
	rest, ok := strings.CutPrefix(w, "-")
	if !ok {
		return "", false
	}
	rest = strings.TrimPrefix(rest, "-")
	name, _, _ := strings.Cut(rest, "=")
	r := []rune(name)
	if len(r) == 0 || !unicode.IsLetter(r[0]) {
		return "", false
	}
	return name, true
}

// dashed spells a flag's name as the help does: -h, --timeout.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// endedByDashDash reports whether hub run's flags at the start of tail (the
// words after "run") ended with "--", reading them as Go's
// flag package does: a word that is not a flag ("-" included) ends them
// and stays; "--" ends them and is swallowed; a flag that takes a value
// and has no "=" takes the next word, even "--".
func endedByDashDash(tail []string) bool {
	for i := 0; i < len(tail); i++ {
		w := tail[i]
		if w == "--" {
			return true
		}
		if len(w) < 2 || w[0] != '-' {
			return false
		}
		name := strings.TrimPrefix(w[1:], "-")
		if strings.Contains(name, "=") {
			continue
		}
		if takes, _ := runFlagTakesValue(name); takes {
			i++
		}
	}
	return false
}

// runFlagTakesValue reports whether name is one of hub run's flags (help
// included), and whether it takes a value (every one but the booleans).
func runFlagTakesValue(name string) (takesValue, known bool) {
	for _, f := range append(runFlags(), cli.HelpFlag) {
		for _, n := range f.Names() {
			if n == name {
				v, ok := f.(interface{ TakesValue() bool })
				return ok && v.TakesValue(), true
			}
		}
	}
	return false, false
}

// load does what plan left: it loads the price table, checks --cwd, reads
// the --file files (hub.ReadFile), opens --raw-log (see openRawLog) and
// reads the prompt (--prompt-file, or stdin; see readPrompt), in that
// order, so that a mistake in the command line is reported before hub
// takes its stdin. Errors are usage errors, but for a --file hub does not
// send and a prompt read that ctx, --timeout or the size cap stopped: that
// is a stopBeforeStart, and the run is still reported (see runAction). On a
// usage error nothing is left open.
func (p *runPlan) load(ctx context.Context, stdin io.Reader) error {
	if p.loadPrices {
		prices, err := loadPrices(p.pricesFile)
		if err != nil {
			return usagef("run: %v", err)
		}
		p.req.Prices = prices
	}
	if p.schemaFile != "" {
		sch, err := answer.Load(p.schemaFile)
		if err != nil {
			return usagef("run: %v", err)
		}
		p.req.Schema = sch
	}
	if cwd := p.req.Cwd; cwd != "" {
		if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
			return usagef("run: --cwd %s is not a directory", cwd)
		}
	}
	// --file: a file hub does not send ends the run before it starts
	// (invalid_input/bad_request), and before the prompt is read.
	var fileErr error
	for _, path := range p.files {
		f, err := hub.ReadFile(path)
		if err != nil {
			fileErr = err
			break
		}
		p.req.Files = append(p.req.Files, f)
	}
	var err error
	if p.req.SystemPrompt, err = systemPromptText("system-prompt", p.systemPrompt); err != nil {
		return err
	}
	if p.req.AppendSystemPrompt, err = systemPromptText("append-system-prompt", p.appendSystemPrompt); err != nil {
		return err
	}
	if p.prompt == promptFile {
		// Checked before --raw-log replaces its file; read below.
		if _, err := os.Stat(p.promptFile); err != nil {
			return usagef("run: --prompt-file: %v", err)
		}
	}
	if in := p.sessionIn; in != "" && in != "-" {
		// Opened when the session starts (a FIFO's open waits for its
		// writer); a file that is not there is a mistake of the command line.
		if fi, err := os.Stat(in); err != nil || fi.IsDir() {
			return usagef("run: --session-in: %v", cmp.Or(err, error(fmt.Errorf("%s is a directory", in))))
		}
	}
	if p.statusFile != "" {
		p.status = statusfile.New(p.statusFile, "")
		if err := p.status.Start(); err != nil {
			return usagef("run: --status-file: %v", strings.TrimPrefix(err.Error(), "statusfile: "))
		}
	}
	if p.rawLog != "" {
		f, err := openRawLog(p.rawLog)
		if err != nil {
			return err
		}
		p.rawLogFile = f
	}
	if p.diffOut != "" {
		f, err := openPrivate("--diff-out", p.diffOut)
		if err != nil {
			if p.rawLogFile != nil {
				p.rawLogFile.Close()
				p.rawLogFile = nil
			}
			return err
		}
		p.diffOutFile = f
	}
	if fileErr != nil {
		return stopBeforeStart{fileErr}
	}
	if p.prompt == promptArgs || p.prompt == promptNone {
		return nil
	}
	prompt, err := p.readPrompt(ctx, stdin)
	var stop stopBeforeStart
	if err != nil && !errors.As(err, &stop) {
		for _, f := range []**os.File{&p.rawLogFile, &p.diffOutFile} {
			if *f != nil {
				(*f).Close()
				*f = nil
			}
		}
	}
	p.req.Prompt = prompt
	return err
}

// MaxSystemPromptBytes is the largest file --system-prompt @FILE and
// --append-system-prompt @FILE read: 1 MiB.
const MaxSystemPromptBytes = 1 << 20

// systemPromptText is the text of --flag's value v: v itself, or for
// "@FILE" the file's text, which must be UTF-8 and at most
// MaxSystemPromptBytes ("" stays "": no system prompt). A file that cannot
// be read, is too large or is not UTF-8 is invalid_input/bad_request,
// reported as a run that did not start (stopBeforeStart), naming the file.
// "@@TEXT" is the text "@TEXT".
func systemPromptText(flag, v string) (string, error) {
	if t, ok := strings.CutPrefix(v, "@@"); ok {
		return "@" + t, nil
	}
	path, ok := strings.CutPrefix(v, "@")
	if !ok {
		return v, nil
	}
	refuse := func(format string, args ...any) (string, error) {
		return "", stopBeforeStart{events.NewError(events.BinInvalidInput, events.ReasonBadRequest,
			fmt.Sprintf("give --%s a UTF-8 text file of at most %d bytes, or the text itself (@@ for a text starting with @)", flag, MaxSystemPromptBytes),
			"--%s @%s: %s", flag, path, fmt.Sprintf(format, args...))}
	}
	if path == "" {
		return refuse("no file named after @")
	}
	f, err := os.Open(path)
	if err != nil {
		return refuse("%v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return refuse("is a directory")
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSystemPromptBytes+1))
	switch {
	case err != nil:
		return refuse("%v", err)
	case len(b) > MaxSystemPromptBytes:
		return refuse("over %d bytes", MaxSystemPromptBytes)
	case !utf8.Valid(b):
		return refuse("not UTF-8 text")
	}
	return string(b), nil
}

// MaxPromptBytes is the largest prompt hub reads from --prompt-file or
// stdin: 16 MiB, the most any agent takes through hub (each adapter's
// MaxPromptBytes). A longer one is invalid_input/prompt_too_large, and hub
// reads no more of it than the cap and one byte.
const MaxPromptBytes = 16 << 20

// stopBeforeStart is a run that ends before its agent starts, with cause as
// its outcome: a signal or --timeout while hub read the prompt, or a prompt
// over MaxPromptBytes. It is no mistake in the command line, so it is
// reported as any run is: run.started, run.finished with cause's bin, and
// that bin's exit status.
type stopBeforeStart struct{ cause error }

func (s stopBeforeStart) Error() string { return s.cause.Error() }

// readPrompt reads the prompt from --prompt-file or stdin: at most
// MaxPromptBytes, and for no longer than ctx (hub's signals) and
// --timeout allow, which end it as a stopBeforeStart. It blocks until one
// of them ends it. The read itself (and the open of --prompt-file, which a
// FIFO without a writer blocks) runs in a goroutine of its own, which a
// stop leaves behind blocked: a read of a pipe cannot be interrupted, and
// hub exits once the run is reported, without the agent having started.
func (p *runPlan) readPrompt(ctx context.Context, stdin io.Reader) (string, error) {
	from := "stdin"
	open := func() (io.ReadCloser, error) { return io.NopCloser(stdin), nil }
	if p.prompt == promptFile {
		from = "--prompt-file " + p.promptFile
		open = func() (io.ReadCloser, error) { return os.Open(p.promptFile) }
	}
	if ctx.Err() != nil { // a signal came first: do not take stdin
		return "", stopBeforeStart{context.Cause(ctx)}
	}
	type read struct {
		b   []byte
		err error
	}
	done := make(chan read, 1)
	go func() {
		f, err := open()
		if err != nil {
			done <- read{err: usagef("run: --prompt-file: %v", err)}
			return
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, MaxPromptBytes+1))
		if err != nil {
			err = usagef("run: reading the prompt from %s: %v", from, err)
		}
		done <- read{b, err}
	}()
	var wall <-chan time.Time
	timeout := p.req.Limits.Timeout
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		wall = t.C
	}
	select {
	case r := <-done:
		if r.err != nil {
			return "", r.err
		}
		if len(r.b) > MaxPromptBytes {
			return "", stopBeforeStart{events.NewError(events.BinInvalidInput, events.ReasonPromptTooLarge,
				"put the material in files in the working directory and refer to them in a short prompt",
				"the prompt from %s is over %d bytes (16 MiB), the most hub reads; nothing was sent to the agent", from, MaxPromptBytes)}
		}
		return string(r.b), nil
	case <-ctx.Done():
		return "", stopBeforeStart{context.Cause(ctx)}
	case <-wall:
		return "", stopBeforeStart{events.NewError(events.BinTimeout, events.ReasonWall,
			"close the prompt's input once it is written (or use --prompt-file with a file), or raise --timeout",
			"--timeout %s ran out while hub read the prompt from %s (still open, no end of file); the agent was not started", timeout, from)}
	}
}

// checkApprove refuses an --approve the run cannot honour, before anything
// starts: an unknown mode, editor outside hub acp and tty inside it (no
// terminal), tty without a terminal, an agent whose CLI cannot ask hub (never run
// unasked), and --schema.
func (o runOptions) checkApprove() error {
	switch o.Approve {
	case "":
		return nil
	case "tty", "deny", "fail", "editor":
	default:
		return usagef("run: --approve must be tty, deny or fail (hub acp: editor), not %q", o.Approve)
	}
	switch {
	case o.Approve == "editor" && !o.ACP:
		return usagef("run: --approve editor is hub acp's (the ACP client is asked); use tty, deny or fail")
	case o.Approve == "tty" && o.ACP:
		return usagef("run: --approve tty: hub acp has no terminal to ask on; use --approve editor (the ACP client is asked)")
	case !hub.CanApprove(o.Agent):
		return usagef("run: --approve: %s cannot ask hub before its tool calls (claude, codex, opencode, pi and ACP agents can); run it without --approve, held to --permission", o.Agent)
	case o.Schema != "":
		return usagef("run: --approve with --schema: a run with an approver is not repaired to a schema; ask for the structured answer in a run of its own")
	case o.Approve == "tty":
		tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
		if err != nil {
			return usagef("run: --approve tty needs a terminal to ask on, and there is none (%v); use --approve deny or fail", err)
		}
		_ = tty.Close()
	}
	return nil
}

// toldBeforeStart is err for a command that reports no run of its own
// (hub chat, hub acp): a stopBeforeStart with an *events.Error (a --file
// hub does not send) is told on stderr and exits with its bin's status.
func toldBeforeStart(err error, stderr io.Writer) error {
	var stop stopBeforeStart
	var e *events.Error
	if !errors.As(err, &stop) || !errors.As(stop.cause, &e) {
		return err
	}
	fmt.Fprintf(stderr, "hub: %s/%s: %s\n", e.Bin, e.Reason, e.Message)
	if e.Hint != "" {
		fmt.Fprintf(stderr, "hub: hint: %s\n", e.Hint)
	}
	return statusError{e.Bin.ExitCode()}
}
