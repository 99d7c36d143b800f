#!/usr/bin/env bash
# Smoke test against a REAL provider (costs a little money). Not run in CI.
# Runs only when HUB_SMOKE=1 and credentials are present; otherwise it says
# it skipped and exits 0.
#
#   HUB_SMOKE=1 HUB_SMOKE_MODEL=anthropic/claude-haiku-4-5 bash scripts/smoke.sh
#
# HUB_SMOKE_AGENT picks the agent: opencode (the default), claude, codex or pi.
# For OpenCode and pi, HUB_SMOKE_MODEL is a provider/model and the key comes
# from the environment (ANTHROPIC_API_KEY, OPENAI_API_KEY, …) or the agent's
# saved login; for Claude Code, ANTHROPIC_API_KEY or its saved login; for
# Codex, OPENAI_API_KEY / CODEX_API_KEY or `codex login` (HUB_SMOKE_MODEL
# optional, e.g. gpt-5.4-mini).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

if [[ ${HUB_SMOKE:-} != 1 ]]; then
  echo "smoke: skipped (set HUB_SMOKE=1 to run against a real provider)"
  exit 0
fi
agent=${HUB_SMOKE_AGENT:-opencode}
model_args=()
case $agent in
  opencode)
    auth_file=${XDG_DATA_HOME:-$HOME/.local/share}/opencode/auth.json
    if [[ -z ${ANTHROPIC_API_KEY:-}${OPENAI_API_KEY:-}${OPENROUTER_API_KEY:-}${GEMINI_API_KEY:-} && ! -s $auth_file ]]; then
      echo "smoke: skipped (no provider credentials: set a provider API key or run \`opencode auth login\`)"
      exit 0
    fi
    model=${HUB_SMOKE_MODEL:?smoke: set HUB_SMOKE_MODEL to an OpenCode provider/model, e.g. anthropic/claude-haiku-4-5}
    model_args=(--model "$model")
    ;;
  claude)
    if [[ -z ${ANTHROPIC_API_KEY:-}${CLAUDE_CODE_OAUTH_TOKEN:-} && ! -s $HOME/.claude/.credentials.json ]]; then
      echo "smoke: skipped (no Claude credentials: set ANTHROPIC_API_KEY, or log in with \`claude\` / \`claude setup-token\`)"
      exit 0
    fi
    [[ -n ${HUB_SMOKE_MODEL:-} ]] && model_args=(--model "$HUB_SMOKE_MODEL")
    ;;
  codex)
    if [[ -z ${OPENAI_API_KEY:-}${CODEX_API_KEY:-} && ! -s ${CODEX_HOME:-$HOME/.codex}/auth.json ]]; then
      echo "smoke: skipped (no Codex credentials: set OPENAI_API_KEY or CODEX_API_KEY, or run \`codex login\`)"
      exit 0
    fi
    [[ -n ${HUB_SMOKE_MODEL:-} ]] && model_args=(--model "$HUB_SMOKE_MODEL")
    ;;
  pi)
    if [[ -z ${ANTHROPIC_API_KEY:-}${OPENAI_API_KEY:-}${OPENROUTER_API_KEY:-}${GEMINI_API_KEY:-} && ! -s ${PI_CODING_AGENT_DIR:-$HOME/.pi/agent}/auth.json ]]; then
      echo "smoke: skipped (no provider credentials for pi: set a provider API key or log in with \`pi\`)"
      exit 0
    fi
    model=${HUB_SMOKE_MODEL:?smoke: set HUB_SMOKE_MODEL to a pi provider/model, e.g. anthropic/claude-haiku-4-5}
    model_args=(--model "$model")
    ;;
  *)
    echo "smoke: unknown HUB_SMOKE_AGENT=$agent (opencode, claude, codex or pi)" >&2
    exit 2
    ;;
esac

mkdir -p bin
go build -o bin/hub ./cmd/hub
bash scripts/install-agents.sh "$agent" >/dev/null
export PATH="$root/.tools/npm/node_modules/.bin:$PATH"

out=$(mktemp)
trap 'rm -f "$out"' EXIT
status=0
bin/hub run --agent "$agent" "${model_args[@]}" --timeout 120s --idle-timeout 90s --output json \
  "Reply with exactly the word pong and nothing else." >"$out" || status=$?
cat "$out"
if [[ $status -ne 0 ]]; then
  echo "smoke: FAILED: hub exited $status" >&2
  exit 1
fi
if ! grep -qi '"text":"[^"]*pong' "$out"; then
  echo "smoke: FAILED: answer does not contain pong" >&2
  exit 1
fi
echo "smoke: ok ($agent)"
