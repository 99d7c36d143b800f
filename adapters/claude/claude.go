// Package claude is hub's adapter for Claude Code (npm package
// @anthropic-ai/claude-code): `claude -p --output-format stream-json
// --verbose --include-partial-messages`. Decoding lives in normalize/claude.
package claude

import (
	"fmt"

	"github.com/hubcli/hub/adapters"
	"github.com/hubcli/hub/normalize"
	clnorm "github.com/hubcli/hub/normalize/claude"
)

// Name is the agent's name in hub.
const Name = "claude"

// MinVersion is the oldest Claude Code whose stream-json output hub was
// checked against (2.1.328 was recorded in testdata/claude; 2.1.0 shares its
// format as far as hub reads it).
const MinVersion = "2.1.0"

// MaxPromptBytes is the largest prompt hub sends to Claude Code: 16 MiB.
const MaxPromptBytes = 16 << 20

// Adapter runs Claude Code. Name, Info and Detect come from adapters.Base. Use
// the registered value (adapters.Lookup); the zero Adapter builds commands
// and decoders but has no Info.
type Adapter struct{ adapters.Base }

var _ adapters.Adapter = (*Adapter)(nil)

func init() { adapters.Register(&Adapter{adapters.NewBase(info)}) }

// info describes Claude Code. Detect runs `claude --version`, which prints
// "2.1.328 (Claude Code)".
var info = adapters.Info{
	Name:        Name,
	Binary:      "claude",
	Package:     "@anthropic-ai/claude-code",
	MinVersion:  MinVersion,
	InstallHint: "npm i -g @anthropic-ai/claude-code",
	ReportsCost: true,
}

// Command implements adapters.Adapter. The argv is
//
//	claude -p --output-format stream-json --verbose --include-partial-messages [--model=M] [--resume=S]
//
// and the prompt goes on stdin, which hub then closes: -p reads the prompt
// from stdin when none is given in argv, byte for byte, with no argv length
// limit and no way to be read as a flag. Values use the --flag=value form so
// one starting with "-" stays a value. --include-partial-messages makes text
// stream as text.delta and gives per-call output tokens. A prompt over
// MaxPromptBytes is refused as invalid_input/prompt_too_large.
func (*Adapter) Command(req adapters.Request, inst adapters.Install) (adapters.Command, error) {
	if err := adapters.CheckPrompt(Name, req.Prompt, MaxPromptBytes); err != nil {
		return adapters.Command{}, err
	}
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages"}
	if req.Model != "" {
		args = append(args, "--model="+req.Model)
	}
	if req.Resume != "" {
		args = append(args, "--resume="+req.Resume)
	}
	// A run must not update the binary under hub's feet.
	env := []string{"DISABLE_AUTOUPDATER=1"}
	if req.AgentRetries != nil {
		env = append(env, fmt.Sprintf("CLAUDE_CODE_MAX_RETRIES=%d", *req.AgentRetries))
	}
	return adapters.Command{Path: inst.Path, Args: args, Stdin: []byte(req.Prompt), Env: env}, nil
}

// NewDecoder implements adapters.Adapter.
func (*Adapter) NewDecoder(req adapters.Request) normalize.Decoder {
	return clnorm.New(req.Model, !req.NoFailFast)
}
