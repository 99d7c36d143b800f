package hubtemporal

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/hubcli/hub"
	"github.com/hubcli/hub/answer"
	"github.com/hubcli/hub/budget"
	"github.com/hubcli/hub/grant"
	"github.com/hubcli/hub/sandbox"
)

// Request is one hub run as a workflow passes it to the activity: plain
// data that Temporal's JSON converter carries, with the names of hub's
// flags (SPEC §6) where they have one. Only Agent and Prompt are required;
// a zero field means hub's default, as the flag left out does.
type Request struct {
	Agent  string `json:"agent"`
	Prompt string `json:"prompt"`
	Model  string `json:"model,omitempty"`
	Resume string `json:"resume,omitempty"` // session id to resume
	Cwd    string `json:"cwd,omitempty"`    // on the worker's machine
	Bin    string `json:"bin,omitempty"`    // the agent binary: a path or a name in PATH
	// Args are the arguments of an agent whose whole command the caller
	// gives (the acp agent: --acp-command "opencode acp" is Bin "opencode",
	// Args ["acp"]).
	Args []string `json:"args,omitempty"`
	// Env is extra K=V pairs for the agent's environment. They travel in
	// the workflow's history: pass no secret here, give the worker its
	// environment instead.
	Env        []string `json:"env,omitempty"`
	Permission string   `json:"permission,omitempty"` // none, read-only (default), workspace-write, full
	Auth       string   `json:"auth,omitempty"`       // inherit (default) or login
	Limits     Limits   `json:"limits,omitzero"`
	// PricesFile is a price table file on the worker's machine whose rows
	// override hub's own (--prices); "" for hub's table only.
	PricesFile string `json:"prices_file,omitempty"`
	// Schema is a JSON Schema the answer must match (--schema, SPEC §6.2);
	// SchemaRetries as --schema-retries (0 the default, negative none).
	Schema        json.RawMessage `json:"schema,omitempty"`
	SchemaRetries int             `json:"schema_retries,omitempty"`
	// AgentRetries, when not nil, is how many times the agent may retry a
	// failed model call (--agent-retries).
	AgentRetries *int `json:"agent_retries,omitempty"`
	NoFailFast   bool `json:"no_fail_fast,omitempty"`
	MaxLine      int  `json:"max_line,omitempty"` // stdout line cap in bytes; 0 for 64 MiB
	// Sandbox is none (default), copy or worktree (SPEC §6.3), with
	// Protect, Apply and KeepSandbox as their flags.
	Sandbox     string   `json:"sandbox,omitempty"`
	Protect     []string `json:"protect,omitempty"`
	Apply       bool     `json:"apply,omitempty"`
	KeepSandbox bool     `json:"keep_sandbox,omitempty"`
}

// Limits are budget.Limits as JSON: durations are Go durations (in JSON,
// integer nanoseconds), cost in USD. A zero field is unset, as in
// budget.Limits.
type Limits struct {
	Timeout      time.Duration `json:"timeout,omitempty"`
	IdleTimeout  time.Duration `json:"idle_timeout,omitempty"`
	MaxCostUSD   float64       `json:"max_cost_usd,omitempty"`
	MaxTokens    int64         `json:"max_tokens,omitempty"`
	MaxTurns     int64         `json:"max_turns,omitempty"`
	MaxToolSteps int64         `json:"max_tool_steps,omitempty"`
	Grace        time.Duration `json:"grace,omitempty"`
	Linger       time.Duration `json:"linger,omitempty"`
	Finalize     time.Duration `json:"finalize,omitempty"`
}

// Budget returns l as budget.Limits.
func (l Limits) Budget() budget.Limits {
	return budget.Limits{
		Timeout:      l.Timeout,
		IdleTimeout:  l.IdleTimeout,
		MaxCostUSD:   l.MaxCostUSD,
		MaxTokens:    l.MaxTokens,
		MaxTurns:     l.MaxTurns,
		MaxToolSteps: l.MaxToolSteps,
		Grace:        l.Grace,
		Linger:       l.Linger,
		Finalize:     l.Finalize,
	}
}

// Hub returns r as hub's library takes it (a hub.Request). It reads the files r names
// (PricesFile) and so runs on the worker, in the activity. An error says
// which field is wrong; the activity reports it as invalid_input/bad_request.
func (r Request) Hub() (hub.Request, error) {
	perm, err := grant.ParseLevel(orElse(r.Permission, string(grant.ReadOnly)))
	if err != nil {
		return hub.Request{}, err
	}
	auth, err := grant.ParseAuth(r.Auth)
	if err != nil {
		return hub.Request{}, err
	}
	mode, err := sandbox.ParseMode(r.Sandbox)
	if err != nil {
		return hub.Request{}, err
	}
	lim := r.Limits
	if lim.Timeout < 0 || lim.IdleTimeout < 0 || lim.MaxCostUSD < 0 || lim.MaxTokens < 0 ||
		lim.MaxTurns < 0 || lim.MaxToolSteps < 0 || r.MaxLine < 0 {
		return hub.Request{}, fmt.Errorf("limits: a limit may not be negative")
	}
	if r.AgentRetries != nil && *r.AgentRetries < 0 {
		return hub.Request{}, fmt.Errorf("agent_retries %d: may not be negative", *r.AgentRetries)
	}
	req := hub.Request{
		Agent:         r.Agent,
		Prompt:        r.Prompt,
		Model:         r.Model,
		Resume:        r.Resume,
		Cwd:           r.Cwd,
		Bin:           r.Bin,
		Args:          r.Args,
		Env:           r.Env,
		Limits:        lim.Budget(),
		MaxLine:       r.MaxLine,
		AgentRetries:  r.AgentRetries,
		NoFailFast:    r.NoFailFast,
		Permission:    perm,
		Auth:          auth,
		SchemaRetries: r.SchemaRetries,
		Sandbox:       mode,
		Protect:       r.Protect,
		Apply:         r.Apply,
		KeepSandbox:   r.KeepSandbox,
	}
	if r.PricesFile != "" {
		if req.Prices, err = budget.LoadPrices(r.PricesFile); err != nil {
			return hub.Request{}, err
		}
	}
	if len(r.Schema) > 0 {
		if req.Schema, err = answer.Compile(r.Schema); err != nil {
			return hub.Request{}, fmt.Errorf("schema: %w", err)
		}
	}
	return req, nil
}

func orElse(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
