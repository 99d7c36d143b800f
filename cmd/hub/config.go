package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/internal/config"
	"github.com/hubcli/hub/sandbox"
)

// notInFile are hub run's flags that the config file does not take, and
// why: a value that belongs to one run, or an approval that must be given
// for the run it approves. Every other run flag is a top-level key of the
// same name.
var notInFile = map[string]string{
	"resume":       "a session belongs to one run",
	"prompt-file":  "the prompt belongs to one run",
	"file":         "context files belong to one run's prompt: a default would be inlined into every run",
	"session-in":   "a session's input belongs to one session",
	"raw-log":      "one file for every run would be replaced by each",
	"status-file":  "one file for every run would be replaced by each",
	"diff-out":     "one file for every run would be replaced by each",
	"cwd":          "the directory a run works in is the caller's",
	"confirm":      "an approval is asked for the run it approves",
	"yes":          "--yes is the explicit approval of one run",
	"apply":        "applying a change to the original is decided per run",
	"protect":      "needs --sandbox: a default would fail every run without one",
	"keep-sandbox": "needs --sandbox: a default would fail every run without one",
}

// agentKeys are the keys an [agents.NAME] table takes: what differs by
// agent ([agents.acp] may give acp-command).
var agentKeys = []string{"bin", "acp-command", "model", "env", "permission", "prices"}

// pathKeys name files: relative to the config file's directory in it.
var pathKeys = []string{"prices", "schema"}

// configSchema is what the config file may hold, built from hub run's
// flags: each flag's type gives its key's kind; fileChecks refuse what the
// flag (or plan) would refuse.
func configSchema() config.Schema {
	s := config.Schema{Agents: adapters.Names(), Refused: notInFile, NamedBy: "acp-command"}
	for _, f := range runFlags() {
		name := f.Names()[0]
		if _, no := notInFile[name]; no {
			continue
		}
		k := config.Key{Name: name, Agent: slices.Contains(agentKeys, name), Check: fileChecks[name]}
		switch f.(type) {
		case *cli.DurationFlag:
			k.Kind = config.Duration
			if k.Check == nil {
				k.Check = notNegative
			}
		case *cli.Float64Flag:
			k.Kind = config.Float
		case *cli.Int64Flag, *cli.IntFlag:
			k.Kind = config.Int
			if k.Check == nil {
				k.Check = notNegative
			}
		case *cli.BoolFlag:
			k.Kind = config.Bool
		case *cli.StringSliceFlag:
			k.Kind = config.Strings
		default:
			k.Kind = config.String
		}
		switch {
		case slices.Contains(pathKeys, name):
			k.Kind = config.KindPath
		case name == "bin":
			k.Kind = config.Command
		}
		s.Keys = append(s.Keys, k)
	}
	return s
}

// fileChecks are the checks of the file's values beyond their type, with
// the flag's own words.
var fileChecks = map[string]func(config.Value) error{
	// agent: a name of the file's own ACP agents is checked after the
	// whole file is read (checkNamedAgent).
	"permission": func(v config.Value) error { _, err := grant.ParseLevel(v.Any.(string)); return err },
	"auth":       func(v config.Value) error { _, err := grant.ParseAuth(v.Any.(string)); return err },
	"sandbox":    func(v config.Value) error { _, err := sandbox.ParseMode(v.Any.(string)); return err },
	"output": func(v config.Value) error {
		switch v.Any.(string) {
		case "text", "jsonl", "json", "answer":
			return nil
		}
		return fmt.Errorf("must be text, jsonl, json or answer, not %q", v.Any)
	},
	"color": func(v config.Value) error {
		if m := v.Any.(string); m == "" || checkColor(m) != nil {
			return fmt.Errorf("must be auto, always or never, not %q", m)
		}
		return nil
	},
	"env": func(v config.Value) error {
		for _, kv := range v.Any.([]string) {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return fmt.Errorf("%q: want K=V", kv)
			}
		}
		return nil
	},
	"max-cost": func(v config.Value) error {
		if v.Any.(float64) < 0 {
			return errors.New("must be a number of USD ≥ 0")
		}
		return nil
	},
	"agent-retries": func(v config.Value) error {
		if v.Any.(int64) < -1 {
			return errors.New("must be -1 (the agent's default) or a count ≥ 0")
		}
		return nil
	},
}

func notNegative(v config.Value) error {
	switch x := v.Any.(type) {
	case time.Duration:
		if x < 0 {
			return errors.New("must not be negative (0 means none)")
		}
	case int64:
		if x < 0 {
			return errors.New("must not be negative")
		}
	}
	return nil
}

// loadConfig reads the config file: $HUB_CONFIG (which must exist), else
// config.DefaultName in the user's config directory (no file there is an
// empty File with Found false). A bad file is a usage error naming the
// file, line and key. The read ends with ctx (hub's signals) as a
// cancelledError: HUB_CONFIG may name a FIFO (`HUB_CONFIG=<(…)`) that
// nobody writes, whose read cannot be interrupted; it is left behind,
// blocked, and hub exits.
func loadConfig(ctx context.Context) (*config.File, error) {
	path, required, err := config.Locate(os.Getenv)
	if err != nil {
		return nil, usagef("%v", err)
	}
	type loaded struct {
		f   *config.File
		err error
	}
	done := make(chan loaded, 1)
	go func() {
		f, err := config.Load(path, required, configSchema())
		done <- loaded{f, err}
	}()
	select {
	case l := <-done:
		if l.err != nil {
			return nil, usagef("%v", l.err)
		}
		if err := checkAgentKey(l.f); err != nil {
			return nil, err
		}
		return l.f, nil
	case <-ctx.Done():
		return nil, cancelledError{fmt.Sprintf("stopped while reading the config file %s (%v): nothing was started", path, context.Cause(ctx))}
	}
}

// checkAgentKey refuses a top-level agent that is neither one of hub's
// nor one of the file's own ACP agents ([agents.NAME] with acp-command).
func checkAgentKey(f *config.File) error {
	v, ok := f.Top("agent")
	if !ok {
		return nil
	}
	name := v.Any.(string)
	if _, err := adapters.Lookup(name); err == nil || f.Named(name, "acp-command") {
		return nil
	}
	return usagef("%v", &config.Error{Path: f.Path, Line: v.Line, Key: v.Key,
		Msg: fmt.Sprintf("unknown agent %q (one of: %s, or an [agents.%s] table with acp-command)", name, strings.Join(adapters.Names(), ", "), name)})
}

// setting is one effective setting of a run: its value (as the flag holds
// it, after the file was applied) and where it came from.
type setting struct {
	Name   string
	Value  any // string, time.Duration, float64, int64, int, bool; env: one variable's name
	Origin config.Origin
}

// resolved is what the config file contributed to a run's flags.
type resolved struct {
	settings []setting // the run flags, in the flags' order (one run's flags only if set); env one row per variable
	env      []string  // the file's K=V for the run's agent, to go before --env's
	agent    string
}

// applyConfig sets each of c's run flags that neither the command line
// nor a HUB_* variable set from f (the run's agent's table first, then the
// top level; see config.File.Resolve), and returns every setting with its
// origin. The agent is resolved first: it picks the table.
func applyConfig(c *cli.Context, f *config.File) (resolved, error) {
	onCommandLine := commandLineFlags(commandTail(c))
	given := func(fl cli.Flag) config.Given {
		name := fl.Names()[0]
		g := config.Given{Flag: onCommandLine[name]}
		if !g.Flag && c.IsSet(name) {
			// urfave/cli's IsSet is true for a value from an EnvVar too.
			g.Env = setEnvVar(fl)
			g.Flag = g.Env == ""
		}
		return g
	}
	flags := runFlags()
	var r resolved
	origins := map[string]config.Origin{}
	set := func(fl cli.Flag, agent string) error {
		name := fl.Names()[0]
		o := f.Resolve(name, agent, given(fl))
		origins[name] = o
		if o.Value == nil { // env is merged, not set: see below
			return nil
		}
		for _, t := range o.Value.Texts() {
			if err := c.Set(name, t); err != nil {
				return usagef("config %s:%d: %s: %v", f.Path, o.Value.Line, o.Value.Key, err)
			}
		}
		return nil
	}
	for _, fl := range flags {
		if fl.Names()[0] == "agent" {
			if err := set(fl, ""); err != nil {
				return r, err
			}
		}
	}
	r.agent = c.String("agent")
	for _, fl := range flags {
		if name := fl.Names()[0]; name != "agent" && name != "env" {
			if err := set(fl, r.agent); err != nil {
				return r, err
			}
		}
	}
	fileEnv := f.Env("env", r.agent)
	for _, e := range fileEnv {
		r.env = append(r.env, e.KV())
	}
	for _, fl := range flags {
		name := fl.Names()[0]
		if name != "env" {
			// A flag of one run is shown only when it is set.
			if _, perRun := notInFile[name]; !perRun || origins[name].Source != config.FromDefault {
				r.settings = append(r.settings, setting{Name: name, Value: flagValue(c, fl), Origin: origins[name]})
			}
			continue
		}
		// env: the file's variables, each replaced by an --env of the
		// same name; values are not shown (they may be secrets).
		cmdEnv := c.StringSlice("env")
		for _, e := range fileEnv {
			o := e.Origin
			if slices.ContainsFunc(cmdEnv, func(kv string) bool { return strings.HasPrefix(kv, e.Name+"=") }) {
				o = config.Origin{Source: config.FromFlag}
			}
			r.settings = append(r.settings, setting{Name: name, Value: e.Name, Origin: o})
		}
		for _, kv := range cmdEnv {
			k, _, _ := strings.Cut(kv, "=")
			if !slices.ContainsFunc(fileEnv, func(e config.EnvEntry) bool { return e.Name == k }) {
				r.settings = append(r.settings, setting{Name: name, Value: k, Origin: config.Origin{Source: config.FromFlag}})
			}
		}
	}
	return r, nil
}

// configuredRunOptions is newRunOptions with the config file applied: the
// file's values for the flags that neither the command line nor the
// environment set, and its env variables before --env's (a later K=V
// wins, so --env replaces the file's variable of the same name).
func configuredRunOptions(c *cli.Context) (runOptions, error) {
	f, err := loadConfig(c.Context)
	if err != nil {
		return runOptions{}, err
	}
	r, err := applyConfig(c, f)
	if err != nil {
		return runOptions{}, err
	}
	o := withNamedAgent(newRunOptions(c), f)
	o.Env = append(r.env, o.Env...)
	return o, nil
}

// withNamedAgent makes o's agent an ACP one when it is one the file names
// ([agents.NAME] with acp-command) rather than one of hub's.
func withNamedAgent(o runOptions, f *config.File) runOptions {
	if _, err := adapters.Lookup(o.Agent); err != nil && f.Named(o.Agent, "acp-command") {
		o.Agent = "acp"
	}
	return o
}

// commandLineFlags returns the names of the flags at the start of tail
// (the words after the command's name), read as Go's flag package reads
// them (see endedByDashDash): IsSet cannot tell the command line from an
// EnvVar.
func commandLineFlags(tail []string) map[string]bool {
	set := map[string]bool{}
	for i := 0; i < len(tail); i++ {
		w := tail[i]
		if w == "--" || len(w) < 2 || w[0] != '-' {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(w[1:], "-"), "=")
		set[name] = true
		if takes, _ := runFlagTakesValue(name); takes && !hasValue {
			i++
		}
	}
	return set
}

// setEnvVar is the first of fl's HUB_* variables that is set, as urfave/cli
// reads them, or "".
func setEnvVar(fl cli.Flag) string {
	if e, ok := fl.(interface{ GetEnvVars() []string }); ok {
		for _, v := range e.GetEnvVars() {
			if _, ok := os.LookupEnv(strings.TrimSpace(v)); ok {
				return v
			}
		}
	}
	return ""
}

// flagValue is fl's value in c.
func flagValue(c *cli.Context, fl cli.Flag) any {
	name := fl.Names()[0]
	switch fl.(type) {
	case *cli.DurationFlag:
		return c.Duration(name)
	case *cli.Float64Flag:
		return c.Float64(name)
	case *cli.Int64Flag:
		return c.Int64(name)
	case *cli.IntFlag:
		return c.Int(name)
	case *cli.BoolFlag:
		return c.Bool(name)
	case *cli.StringSliceFlag:
		return c.StringSlice(name)
	}
	return c.String(name)
}

// agentSetting is what applies to one agent from the file and the
// environment: for `hub doctor` and the tables `hub config` prints.
type agentSetting struct {
	Name   string
	Value  any // env: the variable's name (values are not shown)
	Origin config.Origin
}

// agentSettings returns what applies to a run of agent with no flags on
// the command line: bin, model, permission and prices as a HUB_*
// variable, agent's table or the top level sets them, and the file's env
// variables (their names). Settings nobody sets are left out.
func agentSettings(f *config.File, agent string) []agentSetting {
	var out []agentSetting
	for _, fl := range runFlags() {
		name := fl.Names()[0]
		if !slices.Contains(agentKeys, name) {
			continue
		}
		if name == "env" {
			for _, e := range f.Env(name, agent) {
				out = append(out, agentSetting{Name: name, Value: e.Name, Origin: e.Origin})
			}
			continue
		}
		g := config.Given{Env: setEnvVar(fl)}
		o := f.Resolve(name, agent, g)
		switch o.Source {
		case config.FromEnv:
			v, _ := os.LookupEnv(o.Var)
			out = append(out, agentSetting{Name: name, Value: v, Origin: o})
		case config.FromAgentTable, config.FromTopLevel:
			out = append(out, agentSetting{Name: name, Value: o.Value.Any, Origin: o})
		}
	}
	return out
}

func configCommand() *cli.Command {
	where := "$" + config.EnvVar + " if set (it must exist), else " + config.DefaultName + " in the user's config directory"
	if p, _, err := config.Locate(func(string) string { return "" }); err == nil {
		where += " (" + p + ")"
	}
	return &cli.Command{
		Name:  "config",
		Usage: "print every effective setting of a run and where it came from",
		Description: "Takes hub run's flags (no prompt), so that `hub config --agent codex` shows what a run of codex gets.\n" +
			"The file: " + where + ".\n" +
			"Precedence: flag, then the HUB_* variable, then the run's agent's [agents.NAME] table, then the file's\n" +
			"top-level key, then the default. env variables merge by name in the same order; their values are not shown.\n" +
			"Origins: flag, env HUB_X, file PATH:LINE, default. A bad file is a usage error (exit 2) naming file, line and key.",
		Flags:           append(runFlags(), &cli.BoolFlag{Name: "json", Usage: "print one JSON object"}),
		HideHelpCommand: true,
		OnUsageError:    usageErr,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("%s takes no arguments (it takes hub run's flags, and no prompt), got %q", c.Command.Name, c.Args().Slice())
			}
			f, err := loadConfig(c.Context)
			if err != nil {
				return err
			}
			r, err := applyConfig(c, f)
			if err != nil {
				return err
			}
			if err := checkAsRun(c, f); err != nil {
				return err
			}
			if c.Bool("json") {
				return printConfigJSON(c.App.Writer, f, r)
			}
			return printConfig(c.App.Writer, f, r)
		},
	}
}

// checkAsRun refuses what hub run would refuse of the effective settings
// (--output xml, --color blue, an unknown --agent), so that hub config
// never shows as a run's settings what no run takes. Without an agent the
// others are checked as for the first agent hub knows the command of:
// plan's checks do not depend on it.
func checkAsRun(c *cli.Context, f *config.File) error {
	o := withNamedAgent(newRunOptions(c), f)
	if o.Agent == "" {
		for _, name := range adapters.Names() {
			if ad, _ := adapters.Lookup(name); !ad.Info().CallerCommand {
				o.Agent = name
				break
			}
		}
	}
	if o.PromptFile == "" {
		o.Args, o.DashDash = []string{"prompt"}, true
	}
	if _, err := o.plan(); err != nil {
		return usagef("config: a run would refuse these settings: %s", strings.TrimPrefix(err.Error(), "run: "))
	}
	return nil
}

func printConfig(w io.Writer, f *config.File, r resolved) error {
	state := "read"
	if !f.Found {
		state = "no file there"
	}
	fmt.Fprintf(w, "config file: %s (%s)\n", f.Path, state)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tFROM")
	for _, s := range r.settings {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, showValue(s.Value), s.Origin)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, a := range f.Agents() {
		applies := ""
		if a.Name == r.agent {
			applies = " (applied above: the run's agent)"
		}
		fmt.Fprintf(w, "\n[agents.%s] %s:%d%s\n", a.Name, f.Path, a.Line, applies)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, v := range a.Sorted() {
			fmt.Fprintf(tw, "  %s\t%s\t%s:%d\n", v.Name, showFileValue(v), f.Path, v.Line)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// showFileValue shows a value of the file; env as its variables' names.
func showFileValue(v config.Value) string {
	if list, ok := v.Any.([]string); ok && v.Name == "env" {
		names := make([]string, len(list))
		for i, kv := range list {
			names[i], _, _ = strings.Cut(kv, "=")
		}
		return strings.Join(names, ", ")
	}
	return showValue(v.Any)
}

// showValue is v for the terminal: its control characters shown, not
// sent (harmless), as a file's value may hold any ("\u001b[2J").
func showValue(v any) string {
	switch x := v.(type) {
	case string:
		if x == "" {
			return "-"
		}
		return harmless(x)
	case []string:
		if len(x) == 0 {
			return "-"
		}
		return harmless(strings.Join(x, ", "))
	}
	return harmless(fmt.Sprint(v))
}

// configJSON is `hub config --json`.
type configJSON struct {
	File     string            `json:"file"`
	Found    bool              `json:"found"`
	Agent    string            `json:"agent"`
	Settings []settingJSON     `json:"settings"`
	Agents   []configAgentJSON `json:"agents"`
}

type settingJSON struct {
	Name   string `json:"name"`
	Value  any    `json:"value"`          // durations as Go writes them ("10m0s"); env: the variable's name
	Origin string `json:"origin"`         // flag, env, file or default
	Var    string `json:"var,omitempty"`  // env: the variable
	Key    string `json:"key,omitempty"`  // file: the key ("agents.codex.model")
	Line   int    `json:"line,omitempty"` // file: the key's line
}

type configAgentJSON struct {
	Name     string        `json:"name"`
	Line     int           `json:"line"`
	Applied  bool          `json:"applied"` // the run's agent: its values are in settings
	Settings []settingJSON `json:"settings"`
}

func printConfigJSON(w io.Writer, f *config.File, r resolved) error {
	out := configJSON{File: f.Path, Found: f.Found, Agent: r.agent, Settings: []settingJSON{}, Agents: []configAgentJSON{}}
	for _, s := range r.settings {
		out.Settings = append(out.Settings, originJSON(s.Name, jsonValue(s.Value), s.Origin))
	}
	for _, a := range f.Agents() {
		ja := configAgentJSON{Name: a.Name, Line: a.Line, Applied: a.Name == r.agent}
		for _, v := range a.Sorted() {
			val := jsonValue(v.Any)
			if v.Name == "env" {
				val = strings.Split(showFileValue(v), ", ")
			}
			ja.Settings = append(ja.Settings, settingJSON{Name: v.Name, Value: val, Origin: "file", Key: v.Key, Line: v.Line})
		}
		out.Agents = append(out.Agents, ja)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func originJSON(name string, value any, o config.Origin) settingJSON {
	s := settingJSON{Name: name, Value: value}
	switch o.Source {
	case config.FromFlag:
		s.Origin = "flag"
	case config.FromEnv:
		s.Origin, s.Var = "env", o.Var
	case config.FromAgentTable, config.FromTopLevel:
		s.Origin, s.Key, s.Line = "file", o.Value.Key, o.Value.Line
	default:
		s.Origin = "default"
	}
	return s
}

func jsonValue(v any) any {
	if d, ok := v.(time.Duration); ok {
		return d.String()
	}
	return v
}
