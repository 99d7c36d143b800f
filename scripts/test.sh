#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the pinned agent CLIs (and
# the oldest versions hub claims, tools/npm-min), the Go modules and the
# Temporal CLI, checks formatting and vet, then runs every test with -race,
# real-CLI tests included, against hub's own mock model server, offline.
#
# Once everything is installed, three jobs:
#   main      go test -race ./... (its output is shown as it comes)
#   contrib   beside main: the nested modules, contrib/kubernetes and
#             contrib/temporal against a real Temporal dev server
#             (scripts/temporal-test.sh); short, and mostly waiting
#   min       after main: the contract scenarios (TestReal), golden
#             transcripts (TestGolden) and live sessions (TestRealSession)
#             on each agent's minimum version (MinVersion), for every agent
#             whose minimum is not its pin
# The suite is CPU-bound on 2 cores (the agent CLIs' start-up: about 7 s
# of CPU for each OpenCode run), so min does not run beside main: the
# load would only stretch the tests' timing for little gain (measured:
# 15 min all at once, CPU 28 min). The script fails if any job fails, and
# says which.
#
#   bash scripts/test.sh
#
# For day-to-day work, `go test -short ./...` is the fast tier: no CLI
# install, no Temporal server, a minute or so.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/step.sh

logs=$(mktemp -d "${TMPDIR:-/tmp}/hub-test.XXXXXX")
declare -A jobs=()
cleanup() {
  local status=$? pid
  for pid in "${jobs[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null || true
  done
  wait 2>/dev/null || true
  rm -rf "$logs"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME COMMAND… runs COMMAND in the background, in a process group
# of its own (so that cleanup can stop all of it), its output in a log.
start() {
  local name=$1
  shift
  set -m
  "$@" >"$logs/$name.log" 2>&1 &
  set +m
  jobs[$name]=$!
}

# finish NAME waits for job NAME, prints its log and reports whether it
# passed.
finish() {
  local name=$1 status=0
  wait "${jobs[$name]}" || status=$?
  unset "jobs[$name]"
  echo "test: ---- job $name (exit $status) ----"
  cat "$logs/$name.log"
  return "$status"
}

# The Temporal CLI is built from the Go module proxy once (minutes of CPU
# on a cold machine, then cached): beside the npm installs, which wait on
# the network.
start temporal-cli bash scripts/temporal-test.sh --build-only

bash scripts/install-agents.sh
mapfile -t older < <(bash scripts/install-agents.sh --list-min)
if [[ ${#older[@]} -gt 0 ]]; then
  bash scripts/install-agents.sh --min "${older[@]}"
fi
step test "downloading Go modules" go mod download
for mod in contrib/temporal contrib/kubernetes; do
  step test "downloading Go modules ($mod)" bash -c "cd $mod && go mod download"
done

# Debian packages the tests drive for real: tmux (hub in a real terminal,
# a tmux pane), zsh and fish (hub completion's scripts, sourced and used).
missing=()
for tool in tmux zsh fish; do
  command -v "$tool" >/dev/null || missing+=("$tool")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  apt_get=(apt-get)
  [[ $(id -u) -ne 0 ]] && apt_get=(sudo apt-get)
  step test "updating the Debian package lists" "${apt_get[@]}" update -qq
  step test "installing ${missing[*]} (Debian packages)" "${apt_get[@]}" install -y -qq "${missing[@]}" >/dev/null
fi

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.tools/*'))
if [[ -n $unformatted ]]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi
step test "go vet (compiles every package)" go vet ./...
for mod in contrib/temporal contrib/kubernetes; do
  step test "go vet ($mod)" bash -c "cd $mod && go vet ./..."
done
# The decoders' string scan has an AVX2 path on amd64 and a portable one;
# the tests compare both in one build, and this builds the portable one
# alone, as on other architectures.
step test "go vet and the normalize tests with -tags purego (no assembly)" \
  bash -c 'go vet -tags purego ./normalize/... && GOARCH=arm64 go vet ./normalize/... && go test -count=1 -tags purego ./normalize/...'

if ! finish temporal-cli; then
  echo "test: building the Temporal CLI failed" >&2
  exit 1
fi

# Real-CLI tests must not skip here: the binaries were just installed.
export HUB_REQUIRE_REAL_CLIS=1

# min: one go test over the agents' packages, so that they run in
# parallel, each with HUB_<NAME>_BIN pointing at its minimum.
min_tests() {
  local agent pkgs=()
  for agent in "$@"; do
    export "HUB_${agent^^}_BIN=$PWD/.tools/npm-min/node_modules/.bin/$agent"
    pkgs+=("./adapters/$agent")
  done
  echo "test: minimum versions of $*"
  go test -race -count=1 -timeout 30m -run '^(TestReal|TestGolden|TestRealSession)$' "${pkgs[@]}"
}
# contrib: modules of their own (hub's module gains no dependency from
# them), so ./... neither vets nor tests them; gofmt's check above covers
# them (git ls-files lists their files).
contrib_tests() {
  (cd contrib/kubernetes && go test -race -count=1 -timeout 10m ./...)
  bash scripts/temporal-test.sh # against a real Temporal server
}
start contrib contrib_tests

failed=()
echo "test: go test -race ./... (contrib/ runs beside it; its output follows)"
go test -race -count=1 -timeout 30m ./... || failed+=(main)
finish contrib || failed+=(contrib)
if [[ ${#older[@]} -gt 0 ]]; then
  (min_tests "${older[@]}") || failed+=(min)
fi
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "test: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "test: all passed"
