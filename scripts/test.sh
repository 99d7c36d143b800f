#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the pinned agent CLIs and Go
# modules, checks formatting and vet, then runs every test with -race, the
# nested modules contrib/temporal's and contrib/kubernetes' too.
# Real-CLI tests run against hub's own mock model server, offline. Then it
# installs the oldest version hub claims for each agent (MinVersion, pinned
# in tools/npm-min: install-agents.sh --min) and runs the contract scenarios
# (TestReal) and the golden transcripts (TestGolden, which hold the
# minimum's where its output differs) against it, for every agent whose
# minimum is not its pin.
#
#   bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/step.sh

bash scripts/install-agents.sh
step test "downloading Go modules" go mod download

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
# The decoders' string scan has an AVX2 path on amd64 and a portable one;
# the tests compare both in one build, and this builds the portable one
# alone, as on other architectures.
step test "go vet and the normalize tests with -tags purego (no assembly)" \
  bash -c 'go vet -tags purego ./normalize/... && GOARCH=arm64 go vet ./normalize/... && go test -count=1 -tags purego ./normalize/...'

# Real-CLI tests must not skip here: the binaries were just installed.
export HUB_REQUIRE_REAL_CLIS=1
go test -race -count=1 -timeout 30m ./...

# contrib/temporal and contrib/kubernetes are Go modules of their own
# (hub's module gains no dependency from them), so ./... above neither
# vets nor tests them; gofmt's check above covers them (git ls-files lists
# their files).
for mod in contrib/temporal contrib/kubernetes; do
  (
    cd "$mod"
    step test "downloading Go modules ($mod)" go mod download
    step test "go vet ($mod)" go vet ./...
    if [[ $mod == contrib/temporal ]]; then
      bash ../../scripts/temporal-test.sh # against a real Temporal server
    else
      go test -race -count=1 -timeout 10m ./...
    fi
  )
done

# The minimum versions: one go test over the agents' packages, so that they
# run in parallel, each with HUB_<NAME>_BIN pointing at its minimum.
mapfile -t older < <(bash scripts/install-agents.sh --list-min)
if [[ ${#older[@]} -gt 0 ]]; then
  bash scripts/install-agents.sh --min "${older[@]}"
  pkgs=()
  for agent in "${older[@]}"; do
    export "HUB_${agent^^}_BIN=$PWD/.tools/npm-min/node_modules/.bin/$agent"
    pkgs+=("./adapters/$agent")
  done
  echo "test: minimum versions of ${older[*]}"
  go test -race -count=1 -timeout 30m -run '^(TestReal|TestGolden)$' "${pkgs[@]}"
fi
