package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/hubtest"
	"github.com/hubcli/hub/internal/proc"
)

// doctorFakes writes fake agents into a new directory, one per entry of
// scripts (agent binary name → the shell script's body, which answers
// --version), and returns the directory. The scripts use absolute paths:
// the tests' PATH holds only the fakes.
func doctorFakes(t *testing.T, scripts map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range scripts {
		if err := hubtest.WriteScript(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n")); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// hubDoctor runs hub doctor --json with PATH set to path, and decodes its
// report.
func hubDoctor(t *testing.T, path string, args ...string) (int, doctorReport, string) {
	t.Helper()
	t.Setenv("PATH", path)
	code, out, errOut := hubCLI(t, "", append([]string{"doctor", "--json"}, args...)...)
	var rep doctorReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("hub doctor --json %q: exit %d, output %q (stderr %q): %v", args, code, out, errOut, err)
	}
	return code, rep, errOut
}

func agentIn(t *testing.T, rep doctorReport, name string) doctorAgent {
	t.Helper()
	for _, a := range rep.Agents {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("report has no agent %s: %+v", name, rep.Agents)
	return doctorAgent{}
}

func tested(name string) string {
	ad, _ := adapters.Lookup(name)
	return ad.Info().TestedVersion
}

// TestDoctorFakeAgents checks hub doctor against one agent of each kind:
// claude works, codex is missing, opencode is too old, and pi's --version
// hangs with a child: it must be killed within the limit with everything
// it started.
func TestDoctorFakeAgents(t *testing.T) {
	t.Setenv("HUB_AGENT", "")
	t.Setenv("HUB_BIN", "")
	pids := filepath.Join(t.TempDir(), "pids")
	dir := doctorFakes(t, map[string]string{
		"claude":   "echo '" + tested("claude") + " (Claude Code)'",
		"opencode": "echo 1.0.0",
		"pi":       "/bin/sleep 300 & echo $! >> " + pids + "; echo $$ >> " + pids + "; wait",
	})
	const limit = 3 * time.Second
	start := time.Now()
	code, rep, errOut := hubDoctor(t, dir, "--version-timeout", limit.String())
	took := time.Since(start)
	if code != exitDoctorFailed || rep.OK {
		t.Errorf("hub doctor = exit %d ok=%v, want %d: opencode and pi are installed but cannot run (stderr %q)", code, rep.OK, exitDoctorFailed, errOut)
	}
	if rep.VersionTimeoutSeconds != limit.Seconds() {
		t.Errorf("version_timeout_seconds = %v, want %v", rep.VersionTimeoutSeconds, limit.Seconds())
	}

	claude := agentIn(t, rep, "claude")
	if !claude.Installed || !claude.Starts || !claude.Usable || !claude.Checked || claude.Because != "installed" ||
		claude.Version != tested("claude") || claude.VersionCheck != "ok" || claude.Path != filepath.Join(dir, "claude") {
		t.Errorf("claude = %+v, want found, starting, usable, checked as installed, version %s", claude, tested("claude"))
	}
	if claude.Config != "" {
		t.Errorf("claude.Config = %q, want none: no config file is wired yet", claude.Config)
	}

	codex := agentIn(t, rep, "codex")
	if codex.Installed || codex.Starts || codex.Usable || codex.Checked || codex.Status != "not_installed" ||
		!strings.Contains(codex.Hint, "npm i -g @openai/codex") {
		t.Errorf("codex = %+v, want not installed, not checked, with the install hint", codex)
	}

	oc := agentIn(t, rep, "opencode")
	if !oc.Installed || !oc.Starts || oc.Usable || !oc.Checked || oc.Version != "1.0.0" || oc.VersionCheck != "too_old" ||
		oc.Status != "unsupported_version" || !strings.Contains(oc.Hint, "opencode-ai@"+tested("opencode")) {
		t.Errorf("opencode = %+v, want found, starting, too old, unusable, checked, with the upgrade hint", oc)
	}

	pi := agentIn(t, rep, "pi")
	if !pi.Installed || pi.Starts || pi.Usable || !pi.Checked || pi.Status != "timeout" || pi.VersionCheck != "unknown" ||
		!strings.Contains(pi.Message, "within "+limit.String()) {
		t.Errorf("pi = %+v, want found, not starting (timeout within %s), checked", pi, limit)
	}
	// Killed at the limit: not before it, and after it no later than a
	// kill takes (the stdout drain and the reaping of the tree).
	if max := limit + proc.PipeDrain + proc.ReapWait; pi.StartSeconds < limit.Seconds() || pi.StartSeconds > max.Seconds() {
		t.Errorf("pi's --version ran %.2fs, want between the limit %s and %s", pi.StartSeconds, limit, max)
	}
	if took < limit {
		t.Errorf("hub doctor took %s, less than pi's limit %s", took, limit)
	}
	b, err := os.ReadFile(pids)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, f := range strings.Fields(string(b)) {
		var pid int
		fmt.Sscan(f, &pid)
		n++
		if proc.Running(pid) {
			t.Errorf("pi's process %d is still running after hub doctor", pid)
		}
	}
	if n != 2 {
		t.Fatalf("pi's fake wrote %d pids (%q), want 2: its own and its child's", n, b)
	}

	// For people: a block per agent and the verdict.
	t.Setenv("PATH", dir)
	code, out, _ := hubCLI(t, "", "doctor", "--version-timeout", limit.String())
	for _, want := range []string{
		"claude: ok\n", "codex: not installed (not checked: name it to require it)\n",
		"opencode: CANNOT RUN\n", "pi: CANNOT RUN\n", "  config:   none\n",
		"  starts:   no: " + pi.Message + "\n",
		"  next:     " + codex.Hint + "\n",
		"hub doctor: opencode, pi cannot run\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("hub doctor printed\n%s\nwant it to contain %q", out, want)
		}
	}
	if code != exitDoctorFailed {
		t.Errorf("hub doctor (text) = exit %d, want %d", code, exitDoctorFailed)
	}
}

// TestDoctorChecked checks which agents decide the exit status: those
// named, else HUB_AGENT's and the installed ones; a missing agent is a
// failure only when asked about, or when none can run.
func TestDoctorChecked(t *testing.T) {
	ok := "echo '" + tested("claude") + " (Claude Code)'"
	onlyClaude := doctorFakes(t, map[string]string{"claude": ok})
	other := doctorFakes(t, map[string]string{"my-claude": ok})
	tests := []struct {
		name    string
		path    string
		env     []string // K=V
		args    []string
		code    int
		checked []string
	}{
		{"installed only", onlyClaude, nil, nil, 0, []string{"claude"}},
		{"named installed", onlyClaude, nil, []string{"claude"}, 0, []string{"claude"}},
		{"named missing", onlyClaude, nil, []string{"codex"}, 1, []string{"codex"}},
		{"named both", onlyClaude, nil, []string{"codex", "claude"}, 1, []string{"claude", "codex"}},
		{"HUB_AGENT missing", onlyClaude, []string{"HUB_AGENT=codex"}, nil, 1, []string{"claude", "codex"}},
		{"HUB_AGENT unknown", onlyClaude, []string{"HUB_AGENT=nope"}, nil, 1, []string{"claude"}},
		{"none installed", t.TempDir(), nil, nil, 1, nil},
		{"HUB_BIN", other, []string{"HUB_AGENT=claude", "HUB_BIN=" + filepath.Join(other, "my-claude")}, nil, 0, []string{"claude"}},
		{"HUB_BIN without HUB_AGENT", onlyClaude, []string{"HUB_BIN=" + filepath.Join(other, "my-claude")}, nil, 1, []string{"claude"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HUB_AGENT", "")
			t.Setenv("HUB_BIN", "")
			for _, kv := range tt.env {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			code, rep, _ := hubDoctor(t, tt.path, tt.args...)
			var checked []string
			for _, a := range rep.Agents {
				if a.Checked {
					checked = append(checked, a.Name)
				}
			}
			if code != tt.code || fmt.Sprint(checked) != fmt.Sprint(tt.checked) {
				t.Errorf("hub doctor %q with %q = exit %d checked %v (problems %q), want %d checked %v",
					tt.args, tt.env, code, checked, rep.Problems, tt.code, tt.checked)
			}
			if tt.name == "HUB_BIN" {
				if a := agentIn(t, rep, "claude"); !a.Usable || a.BinFrom != "HUB_BIN" || a.Path != filepath.Join(other, "my-claude") {
					t.Errorf("claude = %+v, want usable, found through HUB_BIN", a)
				}
			}
		})
	}
}

func TestDoctorUsage(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"doctor", "nope"}, `hub: doctor: unknown agent "nope" (agents: acp, claude, codex, opencode, pi)`},
		{[]string{"doctor", "--version-timeout", "0s"}, "hub: doctor: --version-timeout must be more than 0, not 0s"},
		{[]string{"doctor", "--version-timeout", "5"}, `hub: invalid value "5" for flag --version-timeout: use a unit, e.g. 5s or 5m`},
		{[]string{"doctor", "claude", "--version-timeout", "5s"}, "hub: doctor: flag --version-timeout after the agent names: put flags before them (hub doctor [flags] [AGENT...])"},
	} {
		code, out, errOut := hubCLI(t, "", tt.args...)
		if first, _, _ := strings.Cut(errOut, "\n"); code != exitUsage || first != tt.want || out != "" {
			t.Errorf("hub %q = exit %d, stdout %q, stderr %q; want exit 2 and %q", tt.args, code, out, errOut, tt.want)
		}
	}
}

// TestDoctorRealCLIs runs hub doctor on the pinned real CLIs: all four
// found, at their pinned version, and starting.
func TestDoctorRealCLIs(t *testing.T) {
	// The agents hub knows a binary of: acp runs whatever command it is
	// given (TestDoctorACP).
	var names []string
	for _, name := range adapters.Names() {
		if ad, _ := adapters.Lookup(name); !ad.Info().CallerCommand {
			names = append(names, name)
		}
	}
	var dirs []string
	for _, name := range names {
		dirs = append(dirs, filepath.Dir(hubtest.Bin(t, name)))
	}
	// Their own home: a version command may write its config there.
	_, env := hubtest.Home(t)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	t.Setenv("HUB_AGENT", "")
	t.Setenv("HUB_BIN", "")
	// The CLIs are Node programs: keep node on PATH.
	code, rep, errOut := hubDoctor(t, strings.Join(dirs, ":")+":"+os.Getenv("PATH"), names...)
	if code != 0 || !rep.OK {
		t.Errorf("hub doctor %v = exit %d ok=%v (stderr %q), want 0", names, code, rep.OK, errOut)
	}
	for _, name := range names {
		a := agentIn(t, rep, name)
		if !a.Installed || !a.Starts || !a.Usable || !a.Checked || a.Version != tested(name) {
			t.Errorf("%s = %+v, want found, starting and usable at its pinned version %s", name, a, tested(name))
		}
		t.Logf("%s %s: --version took %.2fs", name, a.Version, a.StartSeconds)
	}
}

// TestDoctorCancelled checks that an interrupted hub doctor exits as
// cancelled (130), having stopped what it started.
func TestDoctorCancelled(t *testing.T) {
	dir := doctorFakes(t, map[string]string{"claude": "echo '" + tested("claude") + " (Claude Code)'"})
	t.Setenv("PATH", dir)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	var out, errOut strings.Builder
	if code := run(ctx, nil, []string{"hub", "doctor"}, strings.NewReader(""), &out, &errOut); code != 130 {
		t.Errorf("hub doctor, cancelled = exit %d (stdout %q, stderr %q), want 130", code, out.String(), errOut.String())
	}
}

// TestDoctorConfig: the config file's [agents.NAME] table makes that agent
// checked, its bin is the one probed, the settings it applies are named
// with their file and line, and a broken file is a problem of the report.
func TestDoctorConfig(t *testing.T) {
	// Unset, not empty: an empty HUB_BIN is set, and beats the file, for
	// hub run too.
	for _, k := range []string{"HUB_AGENT", "HUB_BIN", "HUB_MODEL"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	dir := doctorFakes(t, map[string]string{"claude": "echo 2.1.328 '(Claude Code)'"})
	path := writeConfig(t, "[agents.codex]\nmodel = \"gpt-5\"\nbin = \"/nonexistent/codex\"\nenv = [\"OPENAI_BASE_URL=http://x\"]\n")
	code, rep, _ := hubDoctor(t, dir)
	codex := agentIn(t, rep, "codex")
	if code != exitDoctorFailed || rep.OK || !codex.Checked || codex.Because != "config" || codex.Usable {
		t.Errorf("codex configured in the file with a missing bin: exit %d ok %v, codex %+v; want exit 1, codex checked (config) and unusable", code, rep.OK, codex)
	}
	if codex.Bin != "/nonexistent/codex" || codex.BinFrom != "file "+path+":3" {
		t.Errorf("codex bin = %q from %q, want the file's, line 3", codex.Bin, codex.BinFrom)
	}
	for _, want := range []string{"model=gpt-5 (file " + path + ":2)", "env OPENAI_BASE_URL (file " + path + ":4)"} {
		if !strings.Contains(codex.Config, want) {
			t.Errorf("codex config = %q, want it to name %q", codex.Config, want)
		}
	}
	if strings.Contains(codex.Config, "http://x") {
		t.Errorf("codex config shows an env value: %q", codex.Config)
	}
	if !rep.ConfigFound || rep.ConfigFile != path {
		t.Errorf("report config file = %q found %v, want %q", rep.ConfigFile, rep.ConfigFound, path)
	}
	if claude := agentIn(t, rep, "claude"); !claude.Usable || claude.Config != "" {
		t.Errorf("claude = %+v, want usable with no config", claude)
	}

	writeConfig(t, "timeout = \"10\"\n")
	code, rep, _ = hubDoctor(t, dir)
	if code != exitDoctorFailed || len(rep.Problems) == 0 || !strings.Contains(rep.Problems[0], "timeout") {
		t.Errorf("broken config: exit %d problems %q, want exit 1 and the file's error", code, rep.Problems)
	}
}

// TestDoctorACP: the acp agent is checked by its command's program
// (HUB_ACP_COMMAND here), found but not started (ACP agents have no common
// --version); named without a command it cannot run.
func TestDoctorACP(t *testing.T) {
	dir := doctorFakes(t, map[string]string{"claude": "echo '" + tested("claude") + " (Claude Code)'"})
	t.Setenv("HUB_AGENT", "")
	t.Setenv("HUB_BIN", "")
	t.Setenv("HUB_ACP_COMMAND", "claude --some-acp-mode")
	code, rep, errOut := hubDoctor(t, dir, "acp")
	a := agentIn(t, rep, "acp")
	if code != 0 || !a.Usable || a.Path != filepath.Join(dir, "claude") || a.Bin != "claude" || a.BinFrom != "HUB_ACP_COMMAND" {
		t.Errorf("hub doctor acp with HUB_ACP_COMMAND = exit %d, %+v (stderr %q); want 0, the command's program found", code, a, errOut)
	}
	t.Setenv("HUB_ACP_COMMAND", "")
	if code, rep, _ := hubDoctor(t, dir, "acp"); code != 1 || agentIn(t, rep, "acp").Usable {
		t.Errorf("hub doctor acp without a command = exit %d, want 1 (it cannot run)", code)
	}
}
