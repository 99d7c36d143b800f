package grant

import (
	"fmt"
	"slices"
	"strings"
)

// Auth is how a run's agent authenticates to its provider (SPEC §6.1).
type Auth string

const (
	// AuthInherit leaves the agent's environment as hub's: an API key
	// there is used, and billed.
	AuthInherit Auth = "inherit"
	// AuthLogin removes the billed API keys (BilledKeys) from the agent's
	// environment, so that the CLI uses its saved login (a subscription)
	// and never silently a billed key. hub reads no credential file.
	AuthLogin Auth = "login"
)

// ParseAuth returns the auth mode named s ("inherit" or "login"); "" is
// AuthInherit.
func ParseAuth(s string) (Auth, error) {
	switch a := Auth(s); a {
	case "", AuthInherit:
		return AuthInherit, nil
	case AuthLogin:
		return a, nil
	}
	return "", fmt.Errorf("auth %q: want inherit or login", s)
}

// BilledKeys are the environment variables through which the agent CLIs
// (or their provider SDKs) take a billed API key or token: what AuthLogin
// removes. One table for every agent: a key one CLI ignores is still not
// needed by it. Login tokens of a subscription (CLAUDE_CODE_OAUTH_TOKEN from
// `claude setup-token`) are not billed keys and stay.
var BilledKeys = []string{
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", // Anthropic: Claude Code, OpenCode, pi
	"OPENAI_API_KEY", "CODEX_API_KEY", "AZURE_OPENAI_API_KEY", // OpenAI: Codex, OpenCode, pi
	"OPENROUTER_API_KEY",
	"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY",
	"AWS_BEARER_TOKEN_BEDROCK",
	// Claude Code's switches to bill a cloud account (Amazon Bedrock,
	// Google Vertex AI) with the cloud's own credentials, which other
	// tools need and so stay.
	"CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
	"GROQ_API_KEY", "MISTRAL_API_KEY", "XAI_API_KEY", "DEEPSEEK_API_KEY",
	"TOGETHER_API_KEY", "FIREWORKS_API_KEY", "CEREBRAS_API_KEY", "PERPLEXITY_API_KEY",
	"OPENCODE_API_KEY",
}

// IsBilledKey reports whether the K=V pair kv sets one of BilledKeys.
func IsBilledKey(kv string) bool {
	k, _, _ := strings.Cut(kv, "=")
	return slices.Contains(BilledKeys, k)
}

// WithoutBilledKeys returns env without the pairs that set a billed key.
func WithoutBilledKeys(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), IsBilledKey)
}
