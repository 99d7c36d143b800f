#!/usr/bin/env bash
# run-cost.sh — the fixed cost of one `hub run`, on a quiet machine and with
# 1,000 unrelated idle processes, for the working tree's hub and for any git
# revisions given (built from a temporary worktree).
#
# The agent is a shell script that answers at once in OpenCode's dialect, so
# what is timed is hub: its start, the version probe, the run under its
# guard, the stop of what is left and the exit. Each pass runs hub RUNS
# times back to back and prints the median and the 90th percentile wall time
# of one run, in milliseconds (date +%s%N around each run).
#
# Usage: bash scripts/run-cost.sh [RUNS] [REV...]   (RUNS defaults to 50)
# e.g.   bash scripts/run-cost.sh 50 53338d6
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-50}
shift || true
work=$(mktemp -d)
idle=()
cleanup() {
	((${#idle[@]})) && kill "${idle[@]}" 2>/dev/null || true
	for d in "$work"/tree-*; do
		[[ -d $d ]] && git worktree remove --force "$d" >/dev/null 2>&1 || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/hub-HEAD" ./cmd/hub
names=(HEAD)
for rev in "$@"; do
	git worktree add -q --detach "$work/tree-$rev" "$rev"
	(cd "$work/tree-$rev" && go build -o "$work/hub-$rev" ./cmd/hub)
	names+=("$rev")
done

cat >"$work/agent" <<'AGENT'
#!/bin/sh
if [ "$1" = --version ]; then echo 1.18.33; exit 0; fi
printf '%s\n' '{"type":"step_start","sessionID":"ses_rc","part":{}}'
printf '%s\n' '{"type":"text","sessionID":"ses_rc","part":{"type":"text","text":"ok"}}'
printf '%s\n' '{"type":"step_finish","sessionID":"ses_rc","part":{"reason":"stop","tokens":{"input":1,"output":1,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0}}'
AGENT
chmod +x "$work/agent"

# pass LABEL: one line per hub binary.
pass() {
	local name i t0 t1
	for name in "${names[@]}"; do
		"$work/hub-$name" run --agent opencode --bin "$work/agent" --output json x >/dev/null # warm-up
		: >"$work/times"
		for ((i = 0; i < runs; i++)); do
			t0=$(date +%s%N)
			"$work/hub-$name" run --agent opencode --bin "$work/agent" --output json x >/dev/null
			t1=$(date +%s%N)
			echo $(((t1 - t0) / 1000)) >>"$work/times"
		done
		sort -n "$work/times" | awk -v label="$1" -v name="$name" '
			{ v[NR] = $1 }
			END { printf "%-8s %-26s median %7.2f ms   p90 %7.2f ms   (%d runs)\n", name, label, v[int((NR + 1) / 2)] / 1000, v[int(NR * 0.9)] / 1000, NR }'
	done
}

echo "processes on the machine: $(ls -d /proc/[0-9]* | wc -l)"
pass quiet
for ((i = 0; i < 1000; i++)); do
	sleep 3600 &
	idle+=($!)
done
echo "processes on the machine: $(ls -d /proc/[0-9]* | wc -l)"
pass "1,000 idle processes"
