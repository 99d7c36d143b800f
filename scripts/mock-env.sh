#!/usr/bin/env bash
# Points one agent CLI at hub's mock model server (cmd/mockllm), the way the
# real-CLI tests do: makes a private home under DIR (HOME and the XDG
# directories), writes the CLI's config files there, and prints the
# `export` lines that select them, for `eval`:
#
#   eval "$(bash scripts/mock-env.sh AGENT URL DIR)"
#   hub run --agent AGENT [--model MODEL] "Say hello. MOCK_TEXT"
#
# AGENT is claude, codex, opencode or pi; URL is what mockllm printed
# (MOCKLLM_URL=http://127.0.0.1:PORT); DIR is made if missing. The line
# "# model: M" says which --model to pass (none: the CLI's config chooses).
#
# These are the settings of each adapter's hubtest.Agent Configure in
# adapters/<agent>/real_test.go (with RetriesFew: the CLI's own retries as
# few as it can be set to), and adapters/<agent>/mockenv_test.go checks that
# this script writes the same files and variables: change both together.
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: bash scripts/mock-env.sh claude|codex|opencode|pi URL DIR" >&2
  exit 2
fi
agent=$1 url=${2%/} dir=$3
case $url in
  http://127.0.0.1:*) ;;
  *) echo "mock-env: URL must be the mock server's http://127.0.0.1:PORT, not '$url'" >&2; exit 2 ;;
esac
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

# The mock model's prices in USD per million tokens (hubtest.MockPrices).
in=3 out=15 cache_read=0.3 cache_write=3.75

vars=(HOME="$dir/home")
for x in CONFIG DATA CACHE STATE; do
  vars+=("XDG_${x}_HOME=$dir/xdg/$x")
done
for v in "${vars[@]}"; do mkdir -p "${v#*=}"; done

model=
case $agent in
  claude)
    # IS_SANDBOX=1 lets Claude Code take --permission full as root.
    vars+=(ANTHROPIC_BASE_URL="$url" ANTHROPIC_API_KEY=x
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 IS_SANDBOX=1 CLAUDE_CODE_MAX_RETRIES=1)
    ;;
  codex)
    mkdir -p "$dir/codex-home"
    cat >"$dir/codex-home/config.toml" <<TOML
model = "gpt-5.5"
model_provider = "mock"
[analytics]
enabled = false
[features]
plugins = false
remote_plugin = false
apps = false
unbounded_connection_retries = false
[model_providers.mock]
name = "mock"
base_url = "$url/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"
request_max_retries = 1
stream_max_retries = 1
TOML
    vars+=(CODEX_HOME="$dir/codex-home" MOCK_API_KEY=x)
    ;;
  opencode)
    model=mock/mock-model
    cat >"$dir/opencode.json" <<JSON
{"\$schema": "https://opencode.ai/config.json", "autoupdate": false, "share": "disabled",
 "model": "mock/mock-model", "small_model": "mock/mock-model",
 "provider": {"mock": {"npm": "@ai-sdk/openai-compatible",
   "options": {"baseURL": "$url/v1", "apiKey": "x"},
   "models": {"mock-model": {"tool_call": true,
     "cost": {"input": $in, "output": $out, "cache_read": $cache_read, "cache_write": $cache_write},
     "limit": {"context": 128000, "output": 8192}}}}}}
JSON
    vars+=(OPENCODE_CONFIG="$dir/opencode.json" OPENCODE_DISABLE_MODELS_FETCH=1)
    ;;
  pi)
    model=mock/mock-model
    mkdir -p "$dir/agent"
    cat >"$dir/agent/models.json" <<JSON
{"providers": {"mock": {"baseUrl": "$url/v1",
  "api": "openai-completions", "apiKey": "x",
  "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
  "models": [{"id": "mock-model", "contextWindow": 128000, "maxTokens": 8192,
    "cost": {"input": $in, "output": $out, "cacheRead": $cache_read, "cacheWrite": $cache_write}}]}}}
JSON
    # pi's auto-retry and the provider SDK's own retries off.
    echo '{"retry": {"enabled": false, "provider": {"maxRetries": 0}}}' >"$dir/agent/settings.json"
    # No key of the caller's may reach a real provider.
    vars+=(PI_CODING_AGENT_DIR="$dir/agent" PI_OFFLINE=1
      ANTHROPIC_API_KEY= ANTHROPIC_OAUTH_TOKEN= OPENAI_API_KEY= GEMINI_API_KEY=)
    ;;
  *)
    echo "mock-env: unknown agent '$agent' (known: claude, codex, opencode, pi)" >&2
    exit 2
    ;;
esac

for v in "${vars[@]}"; do
  printf 'export %s=%q\n' "${v%%=*}" "${v#*=}"
done
[[ -n $model ]] || model="(none: the CLI's config chooses)"
echo "# model: $model"
