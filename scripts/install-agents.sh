#!/usr/bin/env bash
# Installs the agent CLIs that hub's real-CLI tests and demo run, at pinned
# versions, and the tools the tests run, into .tools/npm (git-ignored) of
# this checkout; with --min, the oldest versions hub claims to support (each
# adapter's MinVersion) into .tools/npm-min instead.
#
#   bash scripts/install-agents.sh              # all pinned agents, and the tools
#   bash scripts/install-agents.sh opencode     # these (an agent or a tool: acpx), and those already there
#   bash scripts/install-agents.sh --min        # the minimums that differ from their pins
#   bash scripts/install-agents.sh --min codex  # these minimums, and those already there
#   bash scripts/install-agents.sh --list-min   # names of the agents whose minimum differs from its pin
#
# The versions are not written here. tools/npm (the pins and the tools) and
# tools/npm-min (the minimums that are not the pin) are npm projects,
# committed with their package-lock.json: one workspace each per agent or
# tool, its directory named after the binary it provides
# (tools/npm/codex/package.json depends on @openai/codex at an exact
# version). The script copies a project into its .tools directory and runs
# npm ci there, which installs every package, the transitive ones too, at
# the version the lock records and checks it against the lock's integrity
# hash: a clean clone installs the tree the tests ran on, whatever was
# published since. The locks record no tarball addresses (the projects'
# .npmrc: omit-lockfile-registry-resolved), so npm fetches from the registry
# it is configured with. A Go test (adapters/all TestInstallPins) checks the
# projects and their locks against each adapter's TestedVersion and
# MinVersion; docs/agents.md ("Agent CLI versions") says how to change a pin.
#
# npm ci replaces node_modules as a whole. With names it installs those
# workspaces only (npm ci --workspace) together with the ones an earlier run
# installed, so that `install-agents.sh opencode` after a full install takes
# nothing away. Idempotent and quick: after an install whose binaries all
# run, a stamp in node_modules records a hash of the project's files and the
# names installed; a run that asks for no more than that is a no-op. Runs
# into the same directory take turns (flock, where there is one).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/step.sh"

# How to check that a binary runs once installed, for one without
# --version: name → its arguments, "" for none (the binary is only checked
# to be executable). codex-acp has no --version and prints its usage with
# --help (which the native binary answers); claude-agent-acp has no flag
# that answers and exits (any run starts the ACP server).
declare -A tool_check=(
  [claude-agent-acp]=""
  [codex-acp]="--help"
)

project="$root/tools/npm"
prefix="$root/.tools/npm"
case ${1:-} in
  --min)
    project="$root/tools/npm-min"
    prefix="$root/.tools/npm-min"
    shift
    ;;
  --list-min)
    project="$root/tools/npm-min"
    ;;
  -*)
    echo "install-agents: unknown option $1 (known: --min, --list-min)" >&2
    exit 2
    ;;
esac
lock="${project#"$root"/}/package-lock.json"

command -v npm >/dev/null || { echo "install-agents: npm not found; install Node.js 20+ first" >&2; exit 1; }
[[ -f $project/package-lock.json ]] || { echo "install-agents: no $lock" >&2; exit 1; }
# The project's workspaces, one a line, in its package.json's order.
mapfile -t all < <(node -e 'for (const w of require(process.argv[1]).workspaces) console.log(w)' "$project/package.json")
if [[ ${1:-} == --list-min ]]; then
  printf '%s\n' "${all[@]}"
  exit 0
fi

want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=("${all[@]}")
for name in "${want[@]}"; do
  if [[ " ${all[*]} " != *" $name "* ]]; then
    echo "install-agents: $lock has no workspace $name (known: ${all[*]})" >&2
    [[ $prefix == */npm-min ]] && echo "install-agents: a tool, or an agent whose minimum is its pin, is only in tools/npm: the plain run installs it into .tools/npm" >&2
    exit 1
  fi
done

# One install at a time into a prefix: a second run waits, then finds the
# first one's stamp.
mkdir -p "$prefix"
if command -v flock >/dev/null; then
  exec 9>"$prefix/.install-agents.lock"
  flock -n 9 || { echo "install-agents: waiting for another install into $prefix" >&2; flock 9; }
fi

# What npm ci reads: any change to it makes the stamp stale.
files=(package.json package-lock.json .npmrc)
for w in "${all[@]}"; do
  files+=("$w/package.json")
done
hash=$(cd "$project" && sha256sum "${files[@]}" | sha256sum)
hash=${hash%% *}
stamp="$prefix/node_modules/.install-agents"

# The names installed before, from this lock or an earlier one.
have=()
[[ -f $stamp ]] && mapfile -t have < <(tail -n +2 "$stamp")
if [[ -f $stamp && $(head -n 1 "$stamp") == "$hash" ]]; then
  done=yes
  for name in "${want[@]}"; do
    if [[ " ${have[*]} " != *" $name "* || ! -x $prefix/node_modules/.bin/$name ]]; then
      done=no
    fi
  done
  if [[ $done == yes ]]; then
    echo "install-agents: ${want[*]} already in $prefix from $lock"
    exit 0
  fi
fi

# Install the names asked for and those already there that the project
# still has, in the project's order; all of them without --workspace.
install=()
for name in "${all[@]}"; do
  if [[ " ${want[*]} ${have[*]} " == *" $name "* ]]; then
    install+=("$name")
  fi
done
workspaces=()
if [[ ${#install[@]} -lt ${#all[@]} ]]; then
  for name in "${install[@]}"; do
    workspaces+=("--workspace=$name")
  done
fi

rm -f "$stamp"
for f in "${files[@]}"; do
  mkdir -p "$(dirname "$prefix/$f")"
  cp "$project/$f" "$prefix/$f"
done
# npm prints nothing but errors, and its spinner when stderr is a terminal:
# step says what is being installed and how long it took. Install scripts
# run as npm's configuration allows (Claude Code's and OpenCode's copy their
# native binary into place).
step install-agents "installing ${install[*]} from $lock (npm ci) into $prefix" \
  npm ci --prefix "$prefix" "${workspaces[@]}" --no-audit --no-fund --loglevel=error --progress

for name in "${install[@]}"; do
  bin="$prefix/node_modules/.bin/$name"
  check=--version
  if [[ -v tool_check[$name] ]]; then
    check=${tool_check[$name]}
  fi
  if [[ -z $check ]]; then
    [[ -x $bin ]] || { echo "install-agents: $name installed but $bin is not executable" >&2; exit 1; }
    continue
  fi
  "$bin" $check </dev/null >/dev/null 2>&1 || {
    echo "install-agents: $name installed but '$name $check' fails" >&2; exit 1; }
done
printf '%s\n' "$hash" "${install[@]}" >"$stamp"
echo "install-agents: binaries in $prefix/node_modules/.bin"
