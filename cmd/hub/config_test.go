package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/hubcli/hub/hubtest/fakeacp"
	"github.com/hubcli/hub/internal/config"
)

// writeConfig writes a config file and points HUB_CONFIG at it.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.EnvVar, path)
	return path
}

// jsonlRun is what a --output jsonl run says about its limits and end.
type jsonlRun struct {
	argv      []string
	version   string
	timeoutMS int64
	bin       string
	reason    string
	text      string
}

func readJSONL(t *testing.T, out string) jsonlRun {
	t.Helper()
	var r jsonlRun
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev struct {
			Type         string
			Argv         []string
			AgentVersion *string `json:"agent_version"`
			Limits       struct {
				TimeoutMS *int64 `json:"timeout_ms"`
			}
			Text  string
			Error *struct{ Bin, Reason string }
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("bad event line %q: %v", line, err)
		}
		switch ev.Type {
		case "run.started":
			r.argv = ev.Argv
			if ev.AgentVersion != nil {
				r.version = *ev.AgentVersion
			}
			if ev.Limits.TimeoutMS != nil {
				r.timeoutMS = *ev.Limits.TimeoutMS
			}
		case "run.finished":
			r.text = ev.Text
			if ev.Error != nil {
				r.bin, r.reason = ev.Error.Bin, ev.Error.Reason
			}
		}
	}
	return r
}

// A timeout from the file really stops the run, and the agent that ran is
// the bin its [agents.opencode] table names; HUB_TIMEOUT beats the file,
// --timeout beats HUB_TIMEOUT.
func TestConfigTimeoutApplies(t *testing.T) {
	bin := fakeAgent(t, "exec sleep 30")
	tests := []struct {
		name, file, env string
		args            []string
		wantMS          int64
	}{
		// Long enough for the fake's version probe, which counts against
		// --timeout, on a busy machine (250 ms was not); the fake sleeps
		// past each.
		{"file", "timeout = \"4s\"\n", "", nil, 4000},
		{"env beats file", "timeout = \"1h\"\n", "3s", nil, 3000},
		{"flag beats env", "timeout = \"1h\"\n", "1h", []string{"--timeout", "2500ms"}, 2500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeConfig(t, tt.file+"grace = \"200ms\"\n[agents.opencode]\nbin = \""+bin+"\"\n")
			if tt.env != "" {
				t.Setenv("HUB_TIMEOUT", tt.env)
			}
			args := append([]string{"run", "--agent", "opencode", "--output", "jsonl"}, tt.args...)
			code, out, errOut := hubCLI(t, "", append(args, "x")...)
			r := readJSONL(t, out)
			if code != 8 || r.bin != "timeout" || r.reason != "wall" || r.timeoutMS != tt.wantMS {
				t.Errorf("exit %d, run.finished %s/%s, limits.timeout_ms %d; want 8, timeout/wall, %d (stderr %s)", code, r.bin, r.reason, r.timeoutMS, tt.wantMS, errOut)
			}
			// The fake (version 1.18.33) of the table's bin ran.
			if len(r.argv) == 0 || r.argv[0] != bin || r.version != "1.18.33" {
				t.Errorf("run.started argv %q agent_version %q, want the table's bin %s, 1.18.33", r.argv, r.version, bin)
			}
		})
	}
}

// The agent's table beats the top level; env merges by name, --env on top.
func TestConfigAgentTableApplies(t *testing.T) {
	bin := fakeAgent(t, `m=""
for a in "$@"; do case "$a" in --model=*) m="${a#--model=}";; esac; done
printf '{"type":"text","sessionID":"s","part":{"type":"text","text":"model=%s A=%s B=%s C=%s"}}\n' "$m" "$A" "$B" "$C"
echo '{"type":"step_finish","sessionID":"s","part":{"reason":"stop","tokens":{},"cost":0}}'`)
	writeConfig(t, `model = "top-model"
env = ["A=top", "B=top", "C=top"]
bin = "/nonexistent/top-bin"

[agents.opencode]
model = "agent-model"
bin = "`+bin+`"
env = ["B=agent"]

[agents.codex]
model = "codex-model"
`)
	code, out, errOut := hubCLI(t, "", "run", "--agent", "opencode", "--output", "jsonl", "--env", "A=flag", "x")
	r := readJSONL(t, out)
	if want := "model=agent-model A=flag B=agent C=top"; code != 0 || r.text != want {
		t.Errorf("exit %d text %q, want 0 %q (stderr %s)", code, r.text, want, errOut)
	}
	// HUB_MODEL beats the agent's table.
	t.Setenv("HUB_MODEL", "env-model")
	code, out, errOut = hubCLI(t, "", "run", "--agent", "opencode", "--output", "jsonl", "x")
	if want := "model=env-model A=top B=agent C=top"; code != 0 || readJSONL(t, out).text != want {
		t.Errorf("with HUB_MODEL: exit %d text %q, want 0 %q (stderr %s)", code, readJSONL(t, out).text, want, errOut)
	}
}

// The file's agent key picks the agent, and with it the table.
func TestConfigDefaultAgent(t *testing.T) {
	writeConfig(t, "agent = \"opencode\"\n[agents.opencode]\nbin = \""+fakeAgent(t, okBody)+"\"\n")
	code, out, errOut := hubCLI(t, "", "run", "--output", "jsonl", "x")
	if r := readJSONL(t, out); code != 0 || r.text != "the answer" {
		t.Errorf("run without --agent = exit %d text %q (stderr %s), want 0 and the fake's answer", code, r.text, errOut)
	}
}

// An [agents.NAME] table with acp-command names an ACP agent of the
// user's: --agent NAME (or agent = "NAME") runs that command as --agent acp
// does, with the table's other settings.
func TestConfigNamedACPAgent(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	writeConfig(t, "agent = \"myacp\"\n[agents.myacp]\nacp-command = \""+exe+" --ignored-arg\"\nenv = [\""+fakeacp.EnvScenario+"=text\"]\n")
	for _, args := range [][]string{{"run", "--agent", "myacp"}, {"run"}} {
		code, out, errOut := hubCLI(t, "", append(args, "--output", "jsonl", "hi")...)
		r := readJSONL(t, out)
		if code != 0 || r.text != fakeacp.Answer || len(r.argv) != 2 || r.argv[0] != exe || r.argv[1] != "--ignored-arg" {
			t.Errorf("hub %v = exit %d, text %q, argv %q (stderr %s); want 0, the fake ACP agent's answer, the table's command", args, code, r.text, r.argv, errOut)
		}
	}
}

// A bad file is a usage error naming file, line and key, for hub run and
// hub config alike; HUB_CONFIG naming no file too.
func TestConfigBadFile(t *testing.T) {
	tests := []struct{ file, want string }{
		{"max-turns = 2\ntimeout = \"10\"\n", ":2: timeout: \"10\" has no unit: use a unit, e.g. 10s or 10m"},
		{"[agents.opencode]\npermission = \"bogus\"\n", ":2: agents.opencode.permission: \"bogus\": want one of none, read-only"},
		{"\ntimeuot = \"1m\"\n", ":2: timeuot: unknown key"},
		{"[agents.gemini]\nmodel = \"x\"\n", ":1: agents.gemini: no agent \"gemini\""},
		{"agent = \"gemini\"\n", ":1: agent: unknown agent \"gemini\""},
		{"max-cost = \"0.5\"\n", ":1: max-cost: want a number, got a string"},
		{"output = \"xml\"\n", ":1: output: must be text, jsonl, json or answer"},
		{"color = \"yes\"\n", ":1: color: must be auto, always or never, not \"yes\""},
		{"yes = true\n", ":1: yes: not taken from the config file: --yes is the explicit approval of one run"},
		{"timeout = \n", ":1: timeout: expected value"},
	}
	for _, tt := range tests {
		path := writeConfig(t, tt.file)
		for _, args := range [][]string{{"run", "--agent", "opencode", "x"}, {"config"}} {
			code, out, errOut := hubCLI(t, "", args...)
			if want := "hub: config " + path + tt.want; code != 2 || !strings.HasPrefix(errOut, want) || out != "" {
				t.Errorf("hub %v with %q = exit %d stdout %q stderr %q; want 2 and %q", args, tt.file, code, out, errOut, want)
			}
		}
	}
	missing := filepath.Join(t.TempDir(), "none.toml")
	t.Setenv(config.EnvVar, missing)
	code, _, errOut := hubCLI(t, "", "run", "--agent", "opencode", "x")
	if code != 2 || !strings.Contains(errOut, missing) || !strings.Contains(errOut, "HUB_CONFIG") {
		t.Errorf("HUB_CONFIG naming no file: exit %d stderr %q, want 2 naming it", code, errOut)
	}
}

// No file at the default path is no file; one there is read.
func TestConfigDefaultPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv(config.EnvVar, "")
	c := hubConfigJSON(t)
	if want := filepath.Join(dir, "hub", "config.toml"); c.File != want || c.Found {
		t.Errorf("hub config: file %q found %v, want %q not found", c.File, c.Found, want)
	}
	os.MkdirAll(filepath.Join(dir, "hub"), 0o755)
	os.WriteFile(filepath.Join(dir, "hub", "config.toml"), []byte("max-turns = 3\n"), 0o644)
	c = hubConfigJSON(t)
	if s := c.setting("max-turns"); !c.Found || s.Origin != "file" || s.Line != 1 || s.Value != float64(3) {
		t.Errorf("hub config with a default file: found %v, max-turns %+v; want 3 from the file's line 1", c.Found, s)
	}
}

func hubConfigJSON(t *testing.T, args ...string) configJSON {
	t.Helper()
	code, out, errOut := hubCLI(t, "", append([]string{"config", "--json"}, args...)...)
	var c configJSON
	if err := json.Unmarshal([]byte(out), &c); code != 0 || err != nil {
		t.Fatalf("hub config --json = exit %d (%v) stderr %s", code, err, errOut)
	}
	return c
}

func (c configJSON) setting(name string) settingJSON {
	for _, s := range c.Settings {
		if s.Name == name {
			return s
		}
	}
	return settingJSON{}
}

// hub config shows every setting's origin: flag, env, file:line, default.
func TestConfigCommand(t *testing.T) {
	path := writeConfig(t, `timeout = "10m"
max-turns = 5
model = "top-model"
env = ["A=1", "B=2"]

[agents.codex]
model = "codex-model"
env = ["B=3"]
permission = "workspace-write"

[agents.claude]
model = "claude-model"
`)
	t.Setenv("HUB_MAX_TURNS", "4")
	c := hubConfigJSON(t, "--agent", "codex", "--env", "A=9", "--grace", "1s")
	tests := []struct {
		name   string
		value  any
		origin string
		line   int
		v      string
	}{
		{"agent", "codex", "flag", 0, ""},
		{"grace", "1s", "flag", 0, ""},
		{"max-turns", float64(4), "env", 0, "HUB_MAX_TURNS"},
		{"timeout", "10m0s", "file", 1, ""},
		{"model", "codex-model", "file", 7, ""},
		{"permission", "workspace-write", "file", 9, ""},
		{"linger", "5s", "default", 0, ""},
		{"output", "text", "default", 0, ""},
	}
	for _, tt := range tests {
		s := c.setting(tt.name)
		if s.Value != tt.value || s.Origin != tt.origin || s.Line != tt.line || s.Var != tt.v {
			t.Errorf("setting %s = %+v, want %v from %s (line %d, var %q)", tt.name, s, tt.value, tt.origin, tt.line, tt.v)
		}
	}
	var env []string
	for _, s := range c.Settings {
		if s.Name == "env" {
			env = append(env, s.Value.(string)+" "+s.Origin+" "+s.Key)
		}
	}
	if want := []string{"A flag ", "B file agents.codex.env"}; !reflect.DeepEqual(env, want) {
		t.Errorf("env = %q, want %q (names only; --env A beats the file's)", env, want)
	}
	for _, s := range c.Settings {
		if s.Name == "resume" || s.Name == "yes" {
			t.Errorf("an unset flag of one run is shown: %+v", s)
		}
	}
	if c.File != path || !c.Found || c.Agent != "codex" || len(c.Agents) != 2 || !c.Agents[0].Applied || c.Agents[1].Applied || c.Agents[1].Name != "claude" {
		t.Errorf("hub config = %+v, want the file, agent codex, both tables, codex's applied", c)
	}

	// The text form: the same origins, the tables below.
	code, out, _ := hubCLI(t, "", "config", "--agent", "claude")
	lines := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		lines[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, want := range []string{
		"config file: " + path + " (read)",
		"model claude-model file " + path + ":12",
		"max-turns 4 env HUB_MAX_TURNS",
		"env B file " + path + ":4",
		"linger 5s default",
		"[agents.codex] " + path + ":6",
		"permission workspace-write " + path + ":9",
		"[agents.claude] " + path + ":11 (applied above: the run's agent)",
	} {
		if code != 0 || !lines[want] {
			t.Errorf("hub config = exit %d\n%s\nwant a line %q", code, out, want)
		}
	}
	if strings.Contains(out, "=1") || strings.Contains(out, "=3") {
		t.Errorf("hub config shows env values:\n%s", out)
	}
}

// urfave/cli's IsSet is true for a value that came from a flag's EnvVar:
// applyConfig relies on it (and on commandLineFlags to tell the two apart).
// A value in the file is shown, not sent: its ESC cannot clear the
// terminal of `hub config` or `hub doctor`.
func TestConfigShowsControlsHarmless(t *testing.T) {
	writeConfig(t, `model = "a\u001b[2Jb"`)
	for _, args := range [][]string{{"config"}, {"doctor", "--version-timeout", "1s", "claude"}} {
		_, out, errOut := hubCLI(t, "", args...)
		if strings.Contains(out+errOut, "\x1b") || !strings.Contains(out, "a␛[2Jb") {
			t.Errorf("hub %s: stdout %q stderr %q; want the model shown as a␛[2Jb, no ESC", strings.Join(args, " "), out, errOut)
		}
	}
}

func TestIsSetFromEnvVar(t *testing.T) {
	t.Setenv("HUB_TEST_ISSET", "5s")
	var fromEnv, unset bool
	app := &cli.App{
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "a", EnvVars: []string{"HUB_TEST_ISSET"}},
			&cli.DurationFlag{Name: "b", EnvVars: []string{"HUB_TEST_UNSET"}},
		},
		Action: func(c *cli.Context) error {
			fromEnv, unset = c.IsSet("a"), c.IsSet("b")
			return nil
		},
	}
	if err := app.Run([]string{"x"}); err != nil {
		t.Fatal(err)
	}
	if !fromEnv || unset {
		t.Errorf("IsSet = %v for an EnvVar's value, %v for none; want true, false", fromEnv, unset)
	}
}

func TestCommandLineFlags(t *testing.T) {
	tests := []struct {
		tail []string
		want []string
	}{
		{[]string{"--agent", "codex", "--timeout=1s", "-yes", "hi", "--model", "m"}, []string{"agent", "timeout", "yes"}},
		{[]string{"--model", "--timeout", "x"}, []string{"model"}}, // --timeout is --model's value
		{[]string{"--json", "--agent", "pi"}, []string{"json", "agent"}},
		{[]string{"--", "--timeout", "1s"}, nil},
		{[]string{"-", "--timeout", "1s"}, nil},
	}
	for _, tt := range tests {
		got := commandLineFlags(tt.tail)
		if len(got) != len(tt.want) {
			t.Errorf("commandLineFlags(%q) = %v, want %v", tt.tail, got, tt.want)
		}
		for _, n := range tt.want {
			if !got[n] {
				t.Errorf("commandLineFlags(%q) = %v, want %v", tt.tail, got, tt.want)
			}
		}
	}
}

// Every run flag is a file key, refused with a reason, or gone from
// notInFile by mistake; [agents.NAME] keys are file keys.
func TestConfigSchemaCoversRunFlags(t *testing.T) {
	s := configSchema()
	keys := map[string]config.Key{}
	for _, k := range s.Keys {
		keys[k.Name] = k
	}
	for _, f := range runFlags() {
		name := f.Names()[0]
		_, inFile := keys[name]
		_, refused := notInFile[name]
		if inFile == refused {
			t.Errorf("run flag --%s: a file key %v, refused %v; want exactly one", name, inFile, refused)
		}
	}
	for _, name := range agentKeys {
		if !keys[name].Agent {
			t.Errorf("[agents.NAME] key %s is not in the schema as an agent key", name)
		}
	}
}

// agentSettings (for hub doctor): what applies to each agent without
// flags, HUB_BIN beating the file.
func TestAgentSettings(t *testing.T) {
	writeConfig(t, "model = \"top\"\nenv = [\"A=1\"]\n[agents.codex]\nbin = \"/opt/codex\"\nmodel = \"m\"\nenv = [\"K=secret\"]\n")
	f, err := loadConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	show := func(agent string) []string {
		var out []string
		for _, s := range agentSettings(f, agent) {
			out = append(out, s.Name+"="+showValue(s.Value)+" "+s.Origin.Source.String())
		}
		return out
	}
	if got, want := show("codex"), []string{"model=m agent table", "bin=/opt/codex agent table", "env=A top level", "env=K agent table"}; !reflect.DeepEqual(got, want) {
		t.Errorf("agentSettings(codex) = %q, want %q", got, want)
	}
	t.Setenv("HUB_BIN", "/env/bin")
	if got, want := show("pi"), []string{"model=top top level", "bin=/env/bin env", "env=A top level"}; !reflect.DeepEqual(got, want) {
		t.Errorf("agentSettings(pi) with HUB_BIN = %q, want %q", got, want)
	}
}

// TestConfigFIFOSignal: HUB_CONFIG naming a FIFO that nobody writes does
// not hold hub: a SIGTERM while it reads ends it, exit 130, saying so.
func TestConfigFIFOSignal(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "config.toml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(config.EnvVar, fifo)
	bin, marker := notRun(t)
	h := startHub(t, nil, "run", "--agent", "opencode", "--bin", bin, "x")
	// Opening the writing end returns once hub has opened the FIFO to read
	// it: hub is then waiting for a config that never comes.
	w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	h.wait(t, time.Minute)
	if code := h.cmd.ProcessState.ExitCode(); code != 130 || !strings.Contains(h.stderr.String(), "stopped while reading the config file "+fifo) {
		t.Errorf("exit %d, stderr %q; want 130 naming the config file", code, h.stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the agent ran")
	}
}

// TestConfigRefusesWhatRunRefuses: hub config does not show as a run's
// settings what hub run would refuse, from a flag, a variable or the file.
func TestConfigRefusesWhatRunRefuses(t *testing.T) {
	writeConfig(t, "color = \"auto\"\n")
	for _, tt := range []struct {
		env  string
		args []string
		want string
	}{
		{"", []string{"config", "--output", "xml"}, `--output must be text, jsonl, json or answer, not "xml"`},
		{"", []string{"config", "--agent", "bogus"}, `unknown --agent "bogus"`},
		{"HUB_COLOR=blue", []string{"config"}, `--color must be auto, always or never, not "blue"`},
		{"", []string{"config", "--confirm", "--yes"}, "give one of them"},
	} {
		if k, v, ok := strings.Cut(tt.env, "="); ok {
			t.Setenv(k, v)
		}
		code, out, errOut := hubCLI(t, "", tt.args...)
		if want := "hub: config: a run would refuse these settings: "; code != 2 || out != "" || !strings.HasPrefix(errOut, want) || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s hub %q = exit %d, stdout %q, stderr %q; want 2 and %q", tt.env, tt.args, code, out, errOut, tt.want)
		}
		if k, _, ok := strings.Cut(tt.env, "="); ok {
			os.Unsetenv(k)
		}
	}
	if code, _, errOut := hubCLI(t, "", "config", "--agent", "pi", "--prompt-file", "p.txt"); code != 0 {
		t.Errorf("hub config with valid settings = exit %d (%s), want 0", code, errOut)
	}
}
