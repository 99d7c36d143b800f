package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"
	"mvdan.cc/sh/v3/shell"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/events"
	"github.com/hubcli/hub/internal/config"
)

// defaultVersionTimeout bounds each agent's `--version` in hub doctor:
// `pi --version` (Node) takes about 3 s on an idle 2-core machine and was
// seen to take over 15 s with both cores busy (adapters.DefaultProbeTimeout
// allows 45 s for a run); a doctor is asked interactively, so it waits less
// and says how to wait longer.
const defaultVersionTimeout = 20 * time.Second

// exitDoctorFailed is hub doctor's exit status when an agent it checks
// cannot run (SPEC §6): the same number as agent_failed, but no run failed.
const exitDoctorFailed = 1

const doctorDescription = `Checks each agent hub supports: is it found (and how to install it), is its version
at least the minimum hub needs and at most the newest hub was tested on, does it start
(its --version, run the way hub runs agents, within --version-timeout: one that hangs is
killed with every process it started), and which configuration applies to it.

Which agents are checked (decide the exit status):
  hub doctor NAME...  the agents named: one not installed is a failure.
  hub doctor          the agent HUB_AGENT names, and every agent that is installed;
                      an agent that is not installed is reported but is no failure
                      (install the ones you use; name one to require it),
                      unless no agent at all can run.
HUB_BIN is the binary of HUB_AGENT's agent, as in hub run.
Exit status: 0 when every checked agent can run, 1 when one cannot (or none can,
HUB_AGENT names no agent, or HUB_BIN is set without HUB_AGENT), 2 for a usage error,
130 when interrupted.`

// doctorOptions are hub doctor's flags and arguments.
type doctorOptions struct {
	Names          []string      // agents named on the command line; none: see doctorDescription
	JSON           bool          // --json
	VersionTimeout time.Duration // --version-timeout: bound of each --version (> 0)
	EnvAgent       string        // HUB_AGENT
	EnvBin         string        // HUB_BIN: the binary of HUB_AGENT's agent
	// Config is the config file (nil: none); ConfigErr is why it could
	// not be read, a problem of the report (every run would refuse it).
	Config    *config.File
	ConfigErr error
}

// doctorAgent is one agent's line of hub doctor: the row of hub agents
// (without the permission grants) and what the doctor adds.
type doctorAgent struct {
	agentStatus
	// Checked says the agent decides the exit status; Because says why:
	// "named", "HUB_AGENT" or "installed".
	Checked bool   `json:"checked"`
	Because string `json:"checked_because,omitempty"`
	// Bin is the binary looked for ("" for the agent's default name in
	// PATH), BinFrom where that came from ("HUB_BIN", or a config file).
	Bin     string `json:"bin,omitempty"`
	BinFrom string `json:"bin_from,omitempty"`
	// VersionCheck is "ok", "too_old", "newer_than_tested" (it still
	// runs) or "unknown" (no version was read).
	VersionCheck string `json:"version_check"`
	// Starts says its version command ran and exited 0 within the limit;
	// StartSeconds is how long it ran (until it was killed, if it hung).
	Starts bool `json:"starts"`
	// callerCommand: an agent whose command the caller gives (acp).
	callerCommand bool
	StartSeconds  float64 `json:"start_seconds"`
	// Config says which configuration applies to the agent, "" for none.
	Config string `json:"config"`
	// Usable says hub can run it (Status is "ok").
	Usable bool `json:"usable"`
}

// doctorReport is hub doctor's result, as --json prints it.
type doctorReport struct {
	OK                    bool    `json:"ok"` // every checked agent is usable, and no problem
	VersionTimeoutSeconds float64 `json:"version_timeout_seconds"`
	// ConfigFile is the config file hub reads ("" when there is none:
	// ConfigFound false names the default path looked at).
	ConfigFile  string        `json:"config_file"`
	ConfigFound bool          `json:"config_found"`
	Agents      []doctorAgent `json:"agents"` // every agent, in adapters.Names order
	Problems    []string      `json:"problems"`
}

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:        "doctor",
		Usage:       "check that each agent can run here: found, version, starts, config; exit 1 if a checked one cannot",
		ArgsUsage:   "[AGENT...]",
		Description: doctorDescription,
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object: {ok, version_timeout_seconds, agents: [...], problems: [...]}"},
			&cli.DurationFlag{Name: "version-timeout", Value: defaultVersionTimeout, Usage: "how long each agent's --version may run before it counts as not starting and is killed with its processes"},
		},
		OnUsageError: usageErr,
		Action: func(c *cli.Context) error {
			o := doctorOptions{
				Names:          c.Args().Slice(),
				JSON:           c.Bool("json"),
				VersionTimeout: c.Duration("version-timeout"),
				EnvAgent:       os.Getenv("HUB_AGENT"),
				EnvBin:         os.Getenv("HUB_BIN"),
			}
			o.Config, o.ConfigErr = loadConfig(c.Context)
			var ce cancelledError
			if errors.As(o.ConfigErr, &ce) {
				return ce
			}
			if err := o.check(); err != nil {
				return err
			}
			rep := o.diagnose(c.Context)
			if c.Context.Err() != nil {
				return exitError{events.NewError(events.BinCancelled, events.ReasonCaller, "run hub doctor again", "hub doctor was interrupted")}
			}
			if err := rep.print(c.App.Writer, o.JSON); err != nil {
				return err
			}
			if !rep.OK {
				return statusError{exitDoctorFailed}
			}
			return nil
		},
	}
}

// check refuses what is a usage error: an unknown agent name, a limit
// that is not positive.
func (o doctorOptions) check() error {
	for _, n := range o.Names {
		if name, ok := optionName(n); ok {
			return usagef("doctor: flag %s after the agent names: put flags before them (hub doctor [flags] [AGENT...])", dashed(name))
		}
		if _, err := adapters.Lookup(n); err != nil {
			return usagef("doctor: unknown agent %q (agents: %s)", n, strings.Join(adapters.Names(), ", "))
		}
	}
	if o.VersionTimeout <= 0 {
		return usagef("doctor: --version-timeout must be more than 0, not %v", o.VersionTimeout)
	}
	return nil
}

// diagnose probes every agent, one after another (at once, four Node
// programs starting on two cores take twice as long each, and nothing is
// won), each within o.VersionTimeout, and returns the report. It blocks
// until every version command has exited or been killed with its
// processes.
func (o doctorOptions) diagnose(ctx context.Context) doctorReport {
	rep := doctorReport{OK: true, VersionTimeoutSeconds: o.VersionTimeout.Seconds(), Problems: []string{}}
	if o.EnvAgent != "" {
		if _, err := adapters.Lookup(o.EnvAgent); err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("HUB_AGENT=%s names no agent (agents: %s)", o.EnvAgent, strings.Join(adapters.Names(), ", ")))
		}
	} else if o.EnvBin != "" {
		rep.Problems = append(rep.Problems, fmt.Sprintf("HUB_BIN=%s is set but HUB_AGENT is not: hub run would start it as whichever --agent is given; set HUB_AGENT too, or pass --bin to hub run", o.EnvBin))
	}
	if o.Config != nil {
		rep.ConfigFile, rep.ConfigFound = o.Config.Path, o.Config.Found
	}
	if o.ConfigErr != nil {
		rep.Problems = append(rep.Problems, fmt.Sprintf("%v: every hub run refuses it; fix the file (or set HUB_CONFIG to another)", o.ConfigErr))
	}
	names := adapters.Names()
	usable := 0
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		a := o.diagnoseAgent(ctx, name)
		if a.Checked && !a.Usable {
			rep.OK = false
		}
		if a.Usable {
			usable++
		}
		rep.Agents = append(rep.Agents, a)
	}
	if usable == 0 && len(o.Names) == 0 {
		rep.Problems = append(rep.Problems, "no agent can run here: hub has nothing to run; install one (see next: above)")
	}
	if len(rep.Problems) > 0 {
		rep.OK = false
	}
	return rep
}

// diagnoseAgent checks one agent: Detect (through detectAgent, as hub
// agents does) with o.VersionTimeout as its deadline.
func (o doctorOptions) diagnoseAgent(ctx context.Context, name string) doctorAgent {
	ad, _ := adapters.Lookup(name)
	a := doctorAgent{Config: o.agentConfigSummary(name)}
	a.Bin, a.BinFrom = o.agentBin(name)
	switch {
	case slices.Contains(o.Names, name):
		a.Checked, a.Because = true, "named"
	case len(o.Names) == 0 && o.EnvAgent == name:
		a.Checked, a.Because = true, "HUB_AGENT"
	case len(o.Names) == 0 && o.Config.Agent(name) != nil:
		a.Checked, a.Because = true, "config"
	}
	pctx, cancel := context.WithTimeout(ctx, o.VersionTimeout)
	// A fresh probe, not the version cache hub run uses: doctor says
	// whether the agent starts (StartSeconds, a hang, a broken install
	// whose file did not change), which only running it tells. The version
	// it finds refreshes the cache.
	pctx = adapters.WithFreshProbe(pctx)
	start := time.Now()
	a.agentStatus = detectAgent(pctx, ad, a.Bin)
	a.StartSeconds = time.Since(start).Seconds()
	hung := pctx.Err() != nil && ctx.Err() == nil
	cancel()
	a.Permissions = nil // hub agents --permissions has them
	info := ad.Info()
	e := a.err
	// Found: Detect got as far as a file it could try to run.
	a.Installed = a.Path != "" || (e != nil && e.Reason == events.ReasonNotExecutable)
	if a.Installed && len(o.Names) == 0 && !a.Checked {
		a.Checked, a.Because = true, "installed"
	}
	if hung {
		// The deadline was ours: Detect reports it as a cancelled probe.
		a.Status = string(events.BinTimeout)
		a.Message = fmt.Sprintf("%s %s printed no version within %s (--version-timeout); it was killed with every process it started",
			dash(a.Path), strings.Join(versionArgs(info), " "), o.VersionTimeout)
		a.Hint = "run `" + filepath.Base(dash(a.Path)) + " " + strings.Join(versionArgs(info), " ") + "` by hand to see why it hangs; on a busy machine raise --version-timeout"
	}
	a.Usable = a.Status == "ok"
	a.callerCommand = info.CallerCommand
	// It starts when its version command exited 0 in time: it is usable,
	// or only its version is wrong.
	a.Starts = a.Usable || a.Status == string(events.BinUnsupportedVersion)
	switch {
	case a.Version == "":
		a.VersionCheck = "unknown"
	case e != nil && e.Reason == events.ReasonTooOld:
		a.VersionCheck = "too_old"
	case info.NewerThanTested(a.Version):
		a.VersionCheck = "newer_than_tested"
	default:
		a.VersionCheck = "ok"
	}
	return a
}

// agentBin is the binary hub run would start for the agent name when no
// --bin is given, and where that comes from: HUB_BIN when HUB_AGENT is
// name, else the config file's bin (the agent's table, then the top
// level), else "" (the agent's default name in PATH).
func (o doctorOptions) agentBin(name string) (bin, from string) {
	if o.EnvBin != "" && o.EnvAgent == name {
		return o.EnvBin, "HUB_BIN"
	}
	if ad, err := adapters.Lookup(name); err == nil && ad.Info().CallerCommand {
		// An ACP agent's program: the first word of its command.
		cmd, from := os.Getenv("HUB_ACP_COMMAND"), "HUB_ACP_COMMAND"
		for _, s := range agentSettings(o.Config, name) {
			if s.Name == "acp-command" && s.Origin.Source != config.FromEnv && cmd == "" {
				cmd, from = fmt.Sprint(s.Value), s.Origin.String()
			}
		}
		if words, err := shell.Fields(cmd, os.Getenv); err == nil && len(words) > 0 {
			return words[0], from
		}
		return "", ""
	}
	for _, s := range agentSettings(o.Config, name) {
		if s.Name == "bin" && s.Origin.Source != config.FromEnv {
			return fmt.Sprint(s.Value), s.Origin.String()
		}
	}
	return "", ""
}

// agentConfigSummary says which settings of the config file apply to a
// run of the agent name — "model=gpt-5 (file /x/config.toml:4),
// env OPENAI_BASE_URL (file /x/config.toml:5)" — or "" for none.
// Variables' values are not shown (they may be secrets).
func (o doctorOptions) agentConfigSummary(name string) string {
	var parts []string
	for _, s := range agentSettings(o.Config, name) {
		if s.Origin.Source == config.FromEnv {
			continue
		}
		if s.Name == "env" {
			parts = append(parts, fmt.Sprintf("env %v (%s)", s.Value, s.Origin))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%v (%s)", s.Name, s.Value, s.Origin))
	}
	return harmless(strings.Join(parts, ", ")) // a file's value may hold any control character
}

func versionArgs(info adapters.Info) []string {
	if len(info.VersionArgs) > 0 {
		return info.VersionArgs
	}
	return []string{"--version"}
}

// print writes the report: one JSON object with asJSON, else a block per
// agent and a closing verdict, for people.
func (r doctorReport) print(w io.Writer, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	var b strings.Builder
	switch {
	case r.ConfigFound:
		fmt.Fprintf(&b, "config file: %s\n", r.ConfigFile)
	case r.ConfigFile != "":
		fmt.Fprintf(&b, "config file: none (%s does not exist)\n", r.ConfigFile)
	}
	var failed []string
	for _, a := range r.Agents {
		verdict := "ok"
		switch {
		case !a.Usable && a.Checked:
			verdict = "CANNOT RUN"
			failed = append(failed, a.Name)
		case a.callerCommand && a.Bin == "":
			verdict = "any ACP agent (not checked: set HUB_ACP_COMMAND, or acp-command in the config file, to check one)"
		case !a.Usable && !a.Installed:
			verdict = "not installed (not checked: name it to require it)"
		case !a.Usable:
			verdict = "cannot run (not checked)"
		}
		fmt.Fprintf(&b, "%s: %s\n", a.Name, verdict)
		if a.Path != "" {
			fmt.Fprintf(&b, "  found:    %s", a.Path)
		} else if a.Installed { // there is a file, it is not executable
			fmt.Fprintf(&b, "  found:    %s", a.Message)
		} else {
			fmt.Fprintf(&b, "  found:    no: %s", a.Message)
		}
		if a.BinFrom != "" {
			fmt.Fprintf(&b, " (%s=%s)", a.BinFrom, a.Bin)
		}
		b.WriteString("\n")
		if a.Installed && a.callerCommand {
			b.WriteString("  starts:   not checked (an ACP agent has no common --version; a run checks it)\n")
		} else if a.Installed {
			fmt.Fprintf(&b, "  version:  %s (%s; needs %s or newer, tested up to %s)\n",
				dash(a.Version), strings.ReplaceAll(a.VersionCheck, "_", " "), a.MinVersion, dash(a.TestedVersion))
			if a.Starts {
				fmt.Fprintf(&b, "  starts:   yes (%.1fs; limit %s)\n", a.StartSeconds, time.Duration(r.VersionTimeoutSeconds*float64(time.Second)))
			} else {
				fmt.Fprintf(&b, "  starts:   no: %s\n", a.Message)
			}
		}
		fmt.Fprintf(&b, "  config:   %s\n", orElse(a.Config, "none"))
		if !a.Usable && a.Hint != "" {
			if a.Starts { // the version is the problem
				fmt.Fprintf(&b, "  problem:  %s\n", a.Message)
			}
			fmt.Fprintf(&b, "  next:     %s\n", a.Hint)
		}
		if a.Warning != "" {
			fmt.Fprintf(&b, "  warning:  %s\n", a.Warning)
		}
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "problem: %s\n", p)
	}
	switch {
	case r.OK:
		b.WriteString("hub doctor: every checked agent can run\n")
	case len(failed) > 0:
		fmt.Fprintf(&b, "hub doctor: %s cannot run\n", strings.Join(failed, ", "))
	default:
		b.WriteString("hub doctor: see the problems above\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// statusError is a command's own exit status, its reason already printed
// on its output (hub doctor's 1).
type statusError struct{ code int }

func (e statusError) Error() string { return fmt.Sprintf("exit status %d", e.code) }
