#!/usr/bin/env bash
# Installs the agent CLIs that hub's real-CLI tests and demo run, at pinned
# versions, into .tools/npm (git-ignored) of this checkout. Idempotent: an
# agent already at its pinned version is left alone.
#
#   bash scripts/install-agents.sh          # all pinned agents
#   bash scripts/install-agents.sh opencode # only these
#
# No lock file is written (--no-package-lock): the versions below are the pins.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
prefix="$root/.tools/npm"

# agent name → npm package@version (versions read from the npm registry on
# 2026-11-30; see ../shared/REAL-CLIS.md for how each behaves).
declare -A pins=(
  [claude]="@anthropic-ai/claude-code@2.1.328"
  [codex]="@openai/codex@0.169.0"
  [opencode]="opencode-ai@1.18.33"
  [pi]="@mariozechner/pi-coding-agent@0.73.1"
)

want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=("${!pins[@]}")

command -v npm >/dev/null || { echo "install-agents: npm not found; install Node.js 20+ first" >&2; exit 1; }
mkdir -p "$prefix"

for agent in "${want[@]}"; do
  spec=${pins[$agent]:-}
  [[ -n $spec ]] || { echo "install-agents: no pin for agent '$agent' (known: ${!pins[*]})" >&2; exit 1; }
  pkg=${spec%@*}
  version=${spec##*@}
  have=$(node -p "try{require('$prefix/node_modules/$pkg/package.json').version}catch(e){''}" 2>/dev/null || true)
  if [[ $have == "$version" && -x "$prefix/node_modules/.bin/$agent" ]]; then
    echo "install-agents: $agent $version already in $prefix"
    continue
  fi
  echo "install-agents: installing $spec into $prefix"
  npm install --prefix "$prefix" --no-package-lock --save-exact --no-audit --no-fund --loglevel=error "$spec"
  "$prefix/node_modules/.bin/$agent" --version >/dev/null 2>&1 || {
    echo "install-agents: $agent installed but '$agent --version' fails" >&2; exit 1; }
done
echo "install-agents: binaries in $prefix/node_modules/.bin"
