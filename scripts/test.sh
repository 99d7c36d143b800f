#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs the pinned agent CLIs and Go
# modules, checks formatting and vet, then runs every test with -race.
# Real-CLI tests run against hub's own mock model server, offline.
#
#   bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-agents.sh
go mod download

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.tools/*'))
if [[ -n $unformatted ]]; then
  echo "gofmt would change:" >&2
  echo "$unformatted" >&2
  exit 1
fi
go vet ./...

# Real-CLI tests must not skip here: the binaries were just installed.
export HUB_REQUIRE_REAL_CLIS=1
go test -race -count=1 -timeout 30m ./...
