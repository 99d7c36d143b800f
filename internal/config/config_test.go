package config_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/internal/config"
)

// schema is a small hub-like schema: the kinds, an agent key, checks.
var schema = config.Schema{
	Agents:  []string{"claude", "codex"},
	Refused: map[string]string{"resume": "a session belongs to one run"},
	Keys: []config.Key{
		{Name: "agent", Kind: config.String},
		{Name: "timeout", Kind: config.Duration, Check: func(v config.Value) error {
			if v.Any.(time.Duration) < 0 {
				return errors.New("must not be negative (0 means none)")
			}
			return nil
		}},
		{Name: "max-cost", Kind: config.Float},
		{Name: "max-turns", Kind: config.Int},
		{Name: "no-fail-fast", Kind: config.Bool},
		{Name: "model", Kind: config.String, Agent: true},
		{Name: "bin", Kind: config.Command, Agent: true},
		{Name: "prices", Kind: config.KindPath, Agent: true},
		{Name: "env", Kind: config.Strings, Agent: true, Check: func(v config.Value) error {
			for _, kv := range v.Any.([]string) {
				if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
					return fmt.Errorf("%q: want K=V", kv)
				}
			}
			return nil
		}},
		{Name: "permission", Kind: config.String, Agent: true, Check: func(v config.Value) error {
			switch v.Any.(string) {
			case "none", "read-only", "workspace-write", "full":
				return nil
			}
			return fmt.Errorf("permission %q: want one of none, read-only, workspace-write, full", v.Any)
		}},
	},
}

const good = `# hub's defaults
timeout = "10m"
max-cost = 0.5
max-turns = 7
no-fail-fast = true
env = ["A=1", "B=top"]
prices = "prices.json"

[agents.codex]
model = "gpt-5.5"
bin = "bin/codex"
env = [
  "B=codex",
  "C=3",
]

[agents.claude]
bin = "claude-beta"
permission = "workspace-write"
prices = "/abs/p.json"
`

func TestParse(t *testing.T) {
	t.Parallel()
	path := "/etc/hub/config.toml"
	f, err := config.Parse([]byte(good), path, schema)
	if err != nil {
		t.Fatal(err)
	}
	top := []struct {
		name string
		line int
		want any
	}{
		{"timeout", 2, 10 * time.Minute},
		{"max-cost", 3, 0.5},
		{"max-turns", 4, int64(7)},
		{"no-fail-fast", 5, true},
		{"env", 6, []string{"A=1", "B=top"}},
		{"prices", 7, "/etc/hub/prices.json"}, // relative to the file
	}
	for _, tt := range top {
		v, ok := f.Top(tt.name)
		if !ok || v.Line != tt.line || !reflect.DeepEqual(v.Any, tt.want) || v.Key != tt.name {
			t.Errorf("Top(%q) = %+v, %v; want line %d value %v", tt.name, v, ok, tt.line, tt.want)
		}
	}
	if got := len(f.TopValues()); got != len(top) {
		t.Errorf("TopValues() has %d values, want %d", got, len(top))
	}
	agents := []struct {
		agent, name string
		line        int
		want        any
	}{
		{"codex", "model", 10, "gpt-5.5"},
		{"codex", "bin", 11, "/etc/hub/bin/codex"}, // a path with a slash: relative to the file
		{"codex", "env", 12, []string{"B=codex", "C=3"}},
		{"claude", "bin", 18, "claude-beta"}, // a bare name: left for PATH
		{"claude", "permission", 19, "workspace-write"},
		{"claude", "prices", 20, "/abs/p.json"},
	}
	for _, tt := range agents {
		a := f.Agent(tt.agent)
		if a == nil {
			t.Fatalf("Agent(%q) = nil", tt.agent)
		}
		v, ok := a.Values[tt.name]
		if !ok || v.Line != tt.line || !reflect.DeepEqual(v.Any, tt.want) || v.Key != "agents."+tt.agent+"."+tt.name {
			t.Errorf("Agent(%q).Values[%q] = %+v, %v; want line %d value %v", tt.agent, tt.name, v, ok, tt.line, tt.want)
		}
	}
	var names []string
	for _, a := range f.Agents() {
		names = append(names, fmt.Sprintf("%s:%d", a.Name, a.Line))
	}
	if want := []string{"codex:9", "claude:17"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Agents() = %v, want %v (file order, header lines)", names, want)
	}
	if f.Agent("pi") != nil {
		t.Errorf("Agent(pi) = %+v, want nil: no table", f.Agent("pi"))
	}
}

func TestTexts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    any
		want []string
	}{
		{90 * time.Second, []string{"1m30s"}},
		{0.25, []string{"0.25"}},
		{int64(-1), []string{"-1"}},
		{true, []string{"true"}},
		{"x y", []string{"x y"}},
		{[]string{"A=1", "B=2"}, []string{"A=1", "B=2"}},
	}
	for _, tt := range tests {
		if got := (config.Value{Any: tt.v}).Texts(); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Value{%v}.Texts() = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// Every mistake names the file, the line and the key.
func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, file string
		line       int
		key, msg   string
	}{
		{"syntax", "timeout = \"1m\"\nmodel = \n", 2, "model", "expected value"},
		{"unclosed table", "timeout = \"1m\"\n[agents.codex\n", 2, "", "expected"},
		{"duplicate key", "max-turns = 1\nmax-turns = 2\n", 2, "max-turns", "already been defined"},
		{"unknown key", "timeout = \"1m\"\n\ntimeuot = \"2m\"\n", 3, "timeuot", "unknown key (the top level takes agent, timeout,"},
		{"per-agent key at the top level is fine, an agent-only miss is not", "[agents.codex]\ntimeout = \"1m\"\n", 2, "agents.codex.timeout", "unknown key (an [agents.NAME] table takes model, bin, prices, env, permission)"},
		{"unknown agent", "[agents.codex]\nmodel = \"m\"\n[agents.gemini]\nmodel = \"g\"\n", 3, "agents.gemini", `no agent "gemini": [agents.NAME] names one of: claude, codex`},
		{"agents not a table", "agents = 3\n", 1, "agents", "want tables [agents.NAME]"},
		{"agent not a table", "[agents]\ncodex = \"x\"\n", 2, "agents.codex", "want a table [agents.codex], got a string"},
		{"duration without unit", "max-turns = 1\ntimeout = \"10\"\n", 2, "timeout", `"10" has no unit: use a unit, e.g. 10s or 10m`},
		{"duration not a duration", "timeout = \"soon\"\n", 1, "timeout", `"soon" is not a duration`},
		{"duration as integer", "timeout = 10\n", 1, "timeout", `want a string with a unit, e.g. "10m", got an integer`},
		{"check refuses", "timeout = \"-1s\"\n", 1, "timeout", "must not be negative"},
		{"agent check refuses", "[agents.claude]\n\npermission = \"bogus\"\n", 3, "agents.claude.permission", `"bogus": want one of`},
		{"refused key", "max-turns = 1\nresume = \"s\"\n", 2, "resume", "not taken from the config file: a session belongs to one run"},
		{"string for number", "max-cost = \"0.5\"\n", 1, "max-cost", "want a number, got a string"},
		{"nan", "max-cost = nan\n", 1, "max-cost", "want a finite number, got NaN"},
		{"float for int", "max-turns = 2.5\n", 1, "max-turns", "want an integer, got a float"},
		{"string for bool", "no-fail-fast = \"yes\"\n", 1, "no-fail-fast", "want true or false, got a string"},
		{"string for array", "env = \"A=1\"\n", 1, "env", "want an array of strings, got a string"},
		{"array element", "env = [\"A=1\", 2]\n", 1, "env", "got an integer at index 1"},
		{"env entry", "[agents.codex]\nenv = [\"NOEQUALS\"]\n", 2, "agents.codex.env", `"NOEQUALS": want K=V`},
		{"first mistake in file order", "max-turns = \"x\"\nmax-cost = \"y\"\n", 1, "max-turns", "want an integer"},
		{"inline table key", "[agents.codex]\nprices = { model = \"x\" }\n", 2, "agents.codex.prices", "want a string (a file's path), got a table"},
		{"date", "timeout = 2026-12-02\n", 1, "timeout", "got a date or time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := config.Parse([]byte(tt.file), "/x/config.toml", schema)
			var ce *config.Error
			if !errors.As(err, &ce) {
				t.Fatalf("Parse(%q) = %v, want a *config.Error", tt.file, err)
			}
			if ce.Path != "/x/config.toml" || ce.Line != tt.line || ce.Key != tt.key || !strings.Contains(ce.Msg, tt.msg) {
				t.Errorf("Parse(%q) = %#v, want line %d key %q msg containing %q", tt.file, ce, tt.line, tt.key, tt.msg)
			}
			prefix := fmt.Sprintf("config /x/config.toml:%d: ", tt.line)
			if tt.key != "" {
				prefix += tt.key + ": "
			}
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("Parse(%q).Error() = %q, want it to start %q", tt.file, err, prefix)
			}
		})
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	const path = "/h/config.toml"
	f, err := config.Parse([]byte("max-turns = 3\nmodel = \"top-model\"\n[agents.codex]\nmodel = \"codex-model\"\n"), path, schema)
	if err != nil {
		t.Fatal(err)
	}
	flag := config.Given{Flag: true}
	env := config.Given{Env: "HUB_MODEL"}
	both := config.Given{Flag: true, Env: "HUB_MODEL"}
	tests := []struct {
		name, agent string
		given       config.Given
		want        string
		line        int
	}{
		{"model", "codex", both, "flag", 0},                           // flag beats env
		{"model", "codex", flag, "flag", 0},                           // flag beats the agent's table
		{"model", "codex", env, "env HUB_MODEL", 0},                   // env beats the agent's table
		{"model", "codex", config.Given{}, "file " + path + ":4", 4},  // the agent's table beats the top level
		{"model", "claude", config.Given{}, "file " + path + ":2", 2}, // no table for claude: the top level
		{"model", "", config.Given{}, "file " + path + ":2", 2},       // no agent yet
		{"max-turns", "codex", config.Given{}, "file " + path + ":1", 1},
		{"max-turns", "codex", env, "env HUB_MODEL", 0},
		{"timeout", "codex", config.Given{}, "default", 0}, // the file has none
	}
	for _, tt := range tests {
		o := f.Resolve(tt.name, tt.agent, tt.given)
		line := 0
		if o.Value != nil {
			line = o.Value.Line
		}
		if o.String() != tt.want || line != tt.line {
			t.Errorf("Resolve(%q, %q, %+v) = %v (line %d), want %v (line %d)", tt.name, tt.agent, tt.given, o, line, tt.want, tt.line)
		}
	}
	// The sources in order, and a nil file.
	var none *config.File
	if o := none.Resolve("model", "codex", config.Given{}); o.Source != config.FromDefault {
		t.Errorf("nil File: Resolve = %v, want default", o)
	}
	if o := f.Resolve("model", "codex", config.Given{}); o.Source != config.FromAgentTable || o.Value.Any != "codex-model" {
		t.Errorf("Resolve(model, codex) = %+v, want the agent table's codex-model", o)
	}
	if o := f.Resolve("model", "claude", config.Given{}); o.Source != config.FromTopLevel || o.Value.Any != "top-model" {
		t.Errorf("Resolve(model, claude) = %+v, want the top level's top-model", o)
	}
	if !(config.FromFlag < config.FromEnv && config.FromEnv < config.FromAgentTable && config.FromAgentTable < config.FromTopLevel && config.FromTopLevel < config.FromDefault) {
		t.Error("the Source constants are not in precedence order")
	}
}

func TestEnv(t *testing.T) {
	t.Parallel()
	f, err := config.Parse([]byte(good), "/h/config.toml", schema)
	if err != nil {
		t.Fatal(err)
	}
	show := func(es []config.EnvEntry) []string {
		var out []string
		for _, e := range es {
			out = append(out, fmt.Sprintf("%s@%d", e.KV(), e.Origin.Value.Line))
		}
		return out
	}
	// codex's table replaces B in its place and adds C.
	if got, want := show(f.Env("env", "codex")), []string{"A=1@6", "B=codex@12", "C=3@12"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Env(env, codex) = %v, want %v", got, want)
	}
	if got, want := show(f.Env("env", "claude")), []string{"A=1@6", "B=top@6"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Env(env, claude) = %v, want %v", got, want)
	}
	dup, err := config.Parse([]byte(`env = ["A=1", "A=2", "B="]`), "/h/c.toml", schema)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := show(dup.Env("env", "")), []string{"A=2@1", "B=@1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Env with a repeated name = %v, want %v (the later wins, as on the command line)", got, want)
	}
}

func TestLocateAndLoad(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	getenv := func(v string) string { return map[string]string{}[v] }
	path, required, err := config.Locate(getenv)
	if want := filepath.Join(dir, "hub", "config.toml"); err != nil || path != want || required {
		t.Fatalf("Locate() = %q, %v, %v; want %q, not required", path, required, err, want)
	}
	// No file at the default path: no values, no error.
	f, err := config.Load(path, required, schema)
	if err != nil || f.Found || f.Path != path || len(f.TopValues()) != 0 {
		t.Fatalf("Load(missing default) = %+v, %v; want an empty File", f, err)
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte("timeout = \"5m\"\n"), 0o644)
	if f, err = config.Load(path, required, schema); err != nil || !f.Found {
		t.Fatalf("Load(default) = %+v, %v", f, err)
	}
	if v, _ := f.Top("timeout"); v.Any != 5*time.Minute {
		t.Errorf("Load(default): timeout = %v, want 5m", v.Any)
	}

	other := filepath.Join(dir, "other.toml")
	getenv = func(v string) string { return map[string]string{config.EnvVar: other}[v] }
	path, required, err = config.Locate(getenv)
	if err != nil || path != other || !required {
		t.Fatalf("Locate(HUB_CONFIG) = %q, %v, %v; want %q, required", path, required, err, other)
	}
	// HUB_CONFIG naming a missing file is an error that names it.
	_, err = config.Load(path, required, schema)
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Path != other || !strings.Contains(err.Error(), "HUB_CONFIG") {
		t.Errorf("Load(missing HUB_CONFIG) = %v, want a *config.Error naming %s and HUB_CONFIG", err, other)
	}
	// A directory is not a file, at the default path too.
	os.Mkdir(other, 0o755)
	if _, err := config.Load(other, false, schema); !errors.As(err, &ce) || ce.Path != other {
		t.Errorf("Load(a directory) = %v, want a *config.Error naming it", err)
	}
	// A file longer than MaxFileBytes, or one that never ends, is an
	// error, read no further than the cap.
	big := filepath.Join(dir, "big.toml")
	os.WriteFile(big, []byte("# "+strings.Repeat("x", config.MaxFileBytes)+"\n"), 0o644)
	for _, p := range []string{big, "/dev/zero"} {
		if _, err := config.Load(p, true, schema); !errors.As(err, &ce) || ce.Path != p || !strings.Contains(err.Error(), "longer than") {
			t.Errorf("Load(%s) = %v, want a *config.Error saying it is too long", p, err)
		}
	}
	// /dev/null is an empty file: the way to run without one.
	if f, err := config.Load(os.DevNull, true, schema); err != nil || !f.Found || len(f.TopValues()) != 0 {
		t.Errorf("Load(/dev/null) = %+v, %v; want an empty file", f, err)
	}
}

// An integer is a number; "~/" is the home directory; "0" is a duration.
func TestParseForms(t *testing.T) {
	t.Parallel()
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home directory")
	}
	f, err := config.Parse([]byte("max-cost = 1\ntimeout = \"0\"\nprices = \"~/p.json\"\n[agents.codex]\nbin = \"~/bin/codex\"\n"), "/h/c.toml", schema)
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		got, want any
	}{
		{must(f.Top("max-cost")).Any, 1.0},
		{must(f.Top("timeout")).Any, time.Duration(0)},
		{must(f.Top("prices")).Any, filepath.Join(home, "p.json")},
		{f.Agent("codex").Values["bin"].Any, filepath.Join(home, "bin/codex")},
	}
	for i, c := range checks {
		if c.got != c.want {
			t.Errorf("value %d = %v (%T), want %v (%T)", i, c.got, c.got, c.want, c.want)
		}
	}
}

func must(v config.Value, ok bool) config.Value {
	if !ok {
		panic("no value")
	}
	return v
}
