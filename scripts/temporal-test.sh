#!/usr/bin/env bash
# contrib/temporal's tests against a real Temporal server, as CI runs them:
# builds the Temporal CLI at a pinned version (once: it is cached), starts
# its development server (in memory, no UI) on a free local port, runs
# `go test -race` in contrib/temporal with HUB_TEMPORAL_ADDRESS naming it
# and HUB_REQUIRE_TEMPORAL=1 (the end-to-end tests then fail, not skip,
# should the server be missing), and stops the server on every way out.
#
#   bash scripts/temporal-test.sh [go test flags…]    e.g. -run EndToEnd -v
#   bash scripts/temporal-test.sh --build-only        only build (or find) the CLI
#
# Environment:
#   HUB_TEMPORAL_CLI   the temporal binary (default: the cache below); built
#                      there when missing. It must be version 1.5.1 (its
#                      --version, or the Go build information of a build).
#   HUB_TEMPORAL_NAMESPACE  the namespace the tests use (default "default";
#                      the dev server creates any other at start).
# The cache: ${XDG_CACHE_HOME:-$HOME/.cache}/hub-tools/temporal-v1.5.1/temporal.
# Building it from the Go module proxy takes about 5½ minutes on 2 cores and
# 241 MiB on disk. (A later CLI, v1.9.1, refuses `go install` because its
# go.mod has a replace directive.)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/step.sh

version=1.5.1
cli=${HUB_TEMPORAL_CLI:-${XDG_CACHE_HOME:-$HOME/.cache}/hub-tools/temporal-v$version/temporal}
ns=${HUB_TEMPORAL_NAMESPACE:-default}

# Everything of this run: the server's log, a build's temporary directory.
work=$(mktemp -d "${TMPDIR:-/tmp}/hub-temporal.XXXXXX")
log=$work/server.log
server_pid=
build_tmp=
keep_work=

# stop_server stops the server by its pid: SIGTERM, up to 10 s for it to
# exit, then SIGKILL; and SIGKILLs any process it started (it starts none
# today) so that nothing of it is left.
stop_server() {
  [[ -n $server_pid ]] || return 0
  local pid=$server_pid kids i
  server_pid=
  kids=$(cat /proc/"$pid"/task/*/children 2>/dev/null || true)
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    exited "$pid" && break
    sleep 0.1
  done
  if ! exited "$pid"; then
    echo "temporal-test: the server (pid $pid) did not exit 10 s after SIGTERM: SIGKILL" >&2
    kill -KILL "$pid" 2>/dev/null || true
  fi
  wait "$pid" 2>/dev/null || true
  for k in $kids; do kill -KILL "$k" 2>/dev/null || true; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "temporal-test: the server (pid $pid) is still there" >&2
    return 1
  fi
}

# exited reports whether pid has exited (gone, or a zombie not reaped yet).
exited() {
  local stat
  stat=$(cat /proc/"$1"/stat 2>/dev/null) || return 0
  stat=${stat##*) }
  [[ ${stat:0:1} == Z ]]
}

cleanup() {
  local status=$?
  [[ -z $build_tmp ]] || rm -rf "$build_tmp"
  stop_server || status=1
  if [[ -n $keep_work ]]; then
    echo "temporal-test: the server's log is kept in $log" >&2
  else
    rm -rf "$work"
  fi
  exit "$status"
}
# A Ctrl-C (SIGINT to the process group) stops go test and this script at
# once; a signal to this script alone takes effect when go test returns
# (bash runs a trap once the foreground command is done).
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

build_only=
if [[ ${1:-} == --build-only ]]; then
  build_only=1
  shift
fi
# The CLI: reused when present, else built into a temporary directory
# beside it and renamed into place, so that an interrupted build leaves no
# half binary.
if [[ ! -x $cli ]]; then
  dir=$(dirname "$cli")
  mkdir -p "$dir"
  build_tmp=$(mktemp -d "$dir/.build.XXXXXX")
  # GOFLAGS cleared: a caller's -mod or -tags is for hub's module, not this.
  step temporal-test "building the Temporal CLI $version into $dir (about 5 minutes)" \
    env GOBIN="$build_tmp" GOFLAGS= go install -ldflags="-X=github.com/temporalio/cli/temporalcli.Version=$version" \
    "github.com/temporalio/cli/cmd/temporal@v$version"
  mv -f "$build_tmp/temporal" "$cli"
  rm -rf "$build_tmp"
  build_tmp=
fi
# Its version: what `temporal --version` says ("temporal version 1.5.1
# (Server …)"), or, from a plain `go install` (which says 0.0.0-DEV), the
# module's version in the binary's build information.
got=$("$cli" --version 2>&1 || true)
if [[ $got != *"version $version "* ]] &&
  ! go version -m "$cli" 2>/dev/null | awk -v v="v$version" '$1 == "mod" && $2 == "github.com/temporalio/cli" && $3 == v { found = 1 } END { exit !found }'; then
  echo "temporal-test: $cli says '$got' and is no build of github.com/temporalio/cli v$version (remove it to build $version there)" >&2
  exit 1
fi

if [[ -n $build_only ]]; then
  echo "temporal-test: $cli is the Temporal CLI $version" >&2
  exit 0
fi

# A port below the ephemeral range (where connections' own ports come
# from), chosen at random; the server refuses a port in use at start
# ("can't set frontend port"), and then another is tried.
read -r ephemeral_low _ </proc/sys/net/ipv4/ip_local_port_range
span=$((ephemeral_low - 10000))
((span >= 1000)) || span=20000
ns_args=()
[[ $ns == default ]] || ns_args=(--namespace "$ns")
start=$SECONDS
for attempt in 1 2 3 4 5; do
  port=$((10000 + RANDOM % span))
  "$cli" server start-dev --headless --ip 127.0.0.1 --port "$port" \
    "${ns_args[@]}" </dev/null >"$log" 2>&1 &
  server_pid=$!
  # Up to a minute (on an idle machine it accepts in 0.3 s) for the
  # frontend to accept a connection, and then for the namespace to exist.
  ready=
  deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    if exited "$server_pid"; then
      break
    fi
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null &&
      timeout 10 "$cli" operator namespace describe --namespace "$ns" --address "127.0.0.1:$port" >/dev/null 2>&1; then
      ready=1
      break
    fi
    sleep 0.1
  done
  [[ -n $ready ]] && break
  if exited "$server_pid" && grep -q "can't set frontend port" "$log"; then
    wait "$server_pid" 2>/dev/null || true
    server_pid=
    echo "temporal-test: port $port is taken; another" >&2
    continue
  fi
  echo "temporal-test: the Temporal server did not get ready on 127.0.0.1:$port within a minute, or exited; the end of its log:" >&2
  tail -n 40 "$log" >&2
  exit 1
done
if [[ -z $ready ]]; then
  echo "temporal-test: no free port after $attempt tries" >&2
  exit 1
fi
echo "temporal-test: Temporal server $version on 127.0.0.1:$port (pid $server_pid), ready in $((SECONDS - start))s" >&2

export HUB_TEMPORAL_ADDRESS=127.0.0.1:$port HUB_TEMPORAL_NAMESPACE=$ns HUB_REQUIRE_TEMPORAL=1
cd contrib/temporal
# -v into a file: the log then names every test that ran and passed (the
# end-to-end ones among them: proof they did not skip), and holds all of
# go test's output should one fail.
out=$work/go-test.log
if ! go test -race -count=1 -timeout 15m -v ./... "$@" >"$out" 2>&1; then
  keep_work=1
  cat "$out"
  echo "temporal-test: the end of the server's log:" >&2
  tail -n 20 "$log" >&2
  exit 1
fi
grep -E '^(--- |ok|PASS)' "$out"
