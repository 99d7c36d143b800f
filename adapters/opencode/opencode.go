// Package opencode is hub's adapter for the OpenCode CLI (npm package
// opencode-ai): `opencode run --format json`. Decoding lives in
// normalize/opencode.
package opencode

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/normalize"
	ocnorm "github.com/hubcli/hub/normalize/opencode"
)

// Name is the agent's name in hub.
const Name = "opencode"

// MinVersion is the oldest OpenCode whose JSON output hub was checked against
// (1.18.33 was recorded in testdata/opencode; 1.18.0 shares its format).
const MinVersion = "1.18.0"

// MaxPromptBytes is the largest prompt hub sends to OpenCode: 16 MiB.
const MaxPromptBytes = 16 << 20

// Adapter runs OpenCode. Name, Info and Detect come from adapters.Base. Use
// the registered value (adapters.Lookup); the zero Adapter builds commands
// and decoders but has no Info.
type Adapter struct{ adapters.Base }

var _ adapters.Adapter = (*Adapter)(nil)

func init() { adapters.Register(&Adapter{adapters.NewBase(info)}) }

// info describes OpenCode. Detect runs `opencode --version`, which prints
// "1.18.33".
var info = adapters.Info{
	Name:        Name,
	Binary:      "opencode",
	Package:     "opencode-ai",
	MinVersion:  MinVersion,
	InstallHint: "npm i -g opencode-ai",
	ReportsCost: true,
	RetryLimits: "opencode has no retry setting and prints nothing while it retries, so --agent-retries cannot bound it; --idle-timeout bounds its silence",
}

// Command implements adapters.Adapter. The argv is
//
//	opencode run --format json --title=T [--model=P/M] [--session=S]
//
// and the prompt goes on stdin, which hub then closes. OpenCode reads stdin
// when it is not a terminal and passes it on byte for byte, while a prompt
// given in argv is rewritten (1.18.33 wraps an argument holding a space in
// double quotes and escapes the quotes inside it); stdin also has no argv
// length limit and can never be read as a flag. Values use the --flag=value
// form for the same reason. --title stops OpenCode from spending an
// unreported model call on generating a session title. A prompt over
// MaxPromptBytes is refused as invalid_input/prompt_too_large; an empty one as
// invalid_input/bad_request.
func (*Adapter) Command(req adapters.Request, inst adapters.Install) (adapters.Command, error) {
	if err := adapters.CheckPrompt(Name, req.Prompt, MaxPromptBytes); err != nil {
		return adapters.Command{}, err
	}
	args := []string{"run", "--format", "json", "--title=" + title(req.Prompt)}
	if req.Model != "" {
		args = append(args, "--model="+req.Model)
	}
	if req.Resume != "" {
		args = append(args, "--session="+req.Resume)
	}
	// A run must not update the binary under hub's feet.
	cmd := adapters.Command{Path: inst.Path, Args: args, Stdin: []byte(req.Prompt), Env: []string{"OPENCODE_DISABLE_AUTOUPDATE=1"}}
	if req.NoTools {
		cmd.Args = append(cmd.Args, "--agent="+finalAgent)
		cmd.EnvLast = []string{"OPENCODE_CONFIG_CONTENT=" + askAll(adapters.Getenv(req.Env, "OPENCODE_CONFIG_CONTENT"))}
	}
	return cmd, nil
}

// finalAgent is the OpenCode agent of hub's final-answer resume (see
// askAll).
const finalAgent = "hub-final-answer"

// askAll returns OpenCode inline config (OPENCODE_CONFIG_CONTENT, the
// config OpenCode merges last) that defines finalAgent with permission
// {"*": "ask"}: its tools stay in the model request, and `opencode run`,
// which cannot ask anyone, rejects every call without running it (measured
// with 1.18.33, also when the user's config allows them). It is merged into
// the inline config the caller set, when that is a JSON object.
func askAll(inline string) string {
	cfg := map[string]any{}
	if err := json.Unmarshal([]byte(inline), &cfg); err != nil || cfg == nil {
		cfg = map[string]any{}
	}
	agents, _ := cfg["agent"].(map[string]any)
	if agents == nil {
		agents = map[string]any{}
	}
	agents[finalAgent] = map[string]any{"mode": "primary", "permission": map[string]string{"*": "ask"},
		"description": "hub's final-answer resume: no tool may run"}
	cfg["agent"] = agents
	b, _ := json.Marshal(cfg) // maps of JSON values always marshal
	return string(b)
}

// title is the session title: the prompt's first line, at most 60 bytes.
func title(prompt string) string {
	t := strings.TrimSpace(prompt)
	if i := strings.IndexAny(t, "\r\n"); i >= 0 {
		t = t[:i]
	}
	t = string(bytes.ToValidUTF8([]byte(normalize.Shorten(t, 60)), nil))
	t = strings.ReplaceAll(t, "\x00", "")
	if t == "" {
		t = "hub run"
	}
	return t
}

// NewDecoder implements adapters.Adapter.
func (*Adapter) NewDecoder(req adapters.Request) normalize.Decoder { return ocnorm.New(req.Model) }
