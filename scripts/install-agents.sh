#!/usr/bin/env bash
# Installs the agent CLIs that hub's real-CLI tests and demo run, at pinned
# versions, into .tools/npm (git-ignored) of this checkout; with --min, the
# oldest versions hub claims to support (each adapter's MinVersion) into
# .tools/npm-min instead. Idempotent: an agent already at its version is
# left alone.
#
#   bash scripts/install-agents.sh              # all pinned agents, and the tools
#   bash scripts/install-agents.sh opencode     # only these (an agent or a tool: acpx)
#   bash scripts/install-agents.sh --min        # the minimums that differ from their pins
#   bash scripts/install-agents.sh --min codex  # only these minimums
#   bash scripts/install-agents.sh --list-min   # names of the agents whose minimum differs from its pin
#
# No lock file is written (--no-package-lock): the versions below are the pins.
# The two tables are read by a Go test (adapters/all) that checks them against
# each adapter's TestedVersion (pins) and MinVersion (mins): change them
# together.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/step.sh"

# agent name → npm package@version: the newest version hub's tests run on
# (adapters.Info.TestedVersion). Versions read from the npm registry on
# 2026-11-30; see ../shared/REAL-CLIS.md for how each behaves.
declare -A pins=(
  [claude]="@anthropic-ai/claude-code@2.1.328"
  [codex]="@openai/codex@0.169.0"
  [opencode]="opencode-ai@1.18.33"
  [pi]="@mariozechner/pi-coding-agent@0.73.1"
)

# agent name → npm package@version: the oldest version hub supports
# (adapters.Info.MinVersion), the oldest one the contract scenarios
# (TestReal) passed on; scripts/test.sh runs them on it too. An agent whose
# minimum is its pin has the same entry in both tables.
declare -A mins=(
  [claude]="@anthropic-ai/claude-code@2.1.200"
  [codex]="@openai/codex@0.155.0"
  [opencode]="opencode-ai@1.18.18"
  [pi]="@mariozechner/pi-coding-agent@0.70.6"
)

# Tools the tests run that are not agents, installed with the pinned agents
# into the same prefix (and only there, not with --min): name → npm
# package@version; the name is also the binary it provides. Not read by the
# Go test of the two tables above.
#   acpx: a headless ACP client (nobody here wrote it) that drives `hub acp`
#   (cmd/hub TestACPXReal). Its package asks for Node.js 22, and runs on 20.
#   claude-agent-acp, codex-acp: Zed's ACP agents for Claude Code and Codex,
#   run by `hub run --agent acp` (adapters/claude and adapters/codex
#   TestRealACP; testdata/acp/README.md). No install scripts: npm's
#   registry only. claude-agent-acp bundles its own Claude Code (the tests
#   point it at the pinned one); codex-acp is a Node wrapper of a native
#   binary (an optional dependency for the platform) with Codex built in.
declare -A tools=(
  [acpx]="acpx@0.19.1"
  [claude-agent-acp]="@zed-industries/claude-agent-acp@0.23.1"
  [codex-acp]="@zed-industries/codex-acp@0.16.0"
)

# How to check that a tool runs once installed, for a tool without
# --version: tool name → its arguments, "" for none (the binary is only
# checked to be executable). codex-acp has no --version and prints its
# usage with --help (which the native binary answers); claude-agent-acp
# has no flag that answers and exits (any run starts the ACP server).
declare -A tool_check=(
  [claude-agent-acp]=""
  [codex-acp]="--help"
)

table=pins
prefix="$root/.tools/npm"
case ${1:-} in
  --min)
    table=mins
    prefix="$root/.tools/npm-min"
    shift
    ;;
  --list-min)
    for agent in $(printf '%s\n' "${!mins[@]}" | sort); do
      [[ ${mins[$agent]} == "${pins[$agent]}" ]] || echo "$agent"
    done
    exit 0
    ;;
  -*)
    echo "install-agents: unknown option $1 (known: --min, --list-min)" >&2
    exit 2
    ;;
esac
declare -n table_ref=$table

want=("$@")
if [[ ${#want[@]} -eq 0 ]]; then
  if [[ $table == mins ]]; then
    # A minimum equal to its pin is already installed by the plain run.
    mapfile -t want < <(bash "$0" --list-min)
  else
    want=("${!pins[@]}" "${!tools[@]}")
  fi
fi

command -v npm >/dev/null || { echo "install-agents: npm not found; install Node.js 20+ first" >&2; exit 1; }
mkdir -p "$prefix"

for agent in "${want[@]}"; do
  spec=${table_ref[$agent]:-}
  if [[ -z $spec && $table == pins ]]; then
    spec=${tools[$agent]:-}
  fi
  [[ -n $spec ]] || { echo "install-agents: no $table entry for agent '$agent' (known: ${!table_ref[*]})" >&2; exit 1; }
  pkg=${spec%@*}
  version=${spec##*@}
  have=$(node -p "try{require('$prefix/node_modules/$pkg/package.json').version}catch(e){''}" 2>/dev/null || true)
  if [[ $have == "$version" && -x "$prefix/node_modules/.bin/$agent" ]]; then
    echo "install-agents: $agent $version already in $prefix"
    continue
  fi
  # npm prints nothing but errors, and its spinner when stderr is a
  # terminal: step says what is being installed and how long it took.
  step install-agents "installing ${pkg##*/} $version (npm) into $prefix" \
    npm install --prefix "$prefix" --no-package-lock --save-exact --no-audit --no-fund --loglevel=error --progress "$spec"
  check=--version
  if [[ -v tool_check[$agent] ]]; then
    check=${tool_check[$agent]}
  fi
  if [[ -z $check ]]; then
    [[ -x "$prefix/node_modules/.bin/$agent" ]] || {
      echo "install-agents: $agent installed but $prefix/node_modules/.bin/$agent is not executable" >&2; exit 1; }
    continue
  fi
  "$prefix/node_modules/.bin/$agent" $check </dev/null >/dev/null 2>&1 || {
    echo "install-agents: $agent installed but '$agent $check' fails" >&2; exit 1; }
done
echo "install-agents: binaries in $prefix/node_modules/.bin"
