#!/usr/bin/env bash
# kill-bench.sh — how fast hub stops an agent's whole process tree at a
# budget crossing, measured from outside hub with strace (not by hub's own
# clocks).
#
# A fake OpenCode agent (a shell script) starts a tree of four more
# processes — a child in its process group, one in a session of its own
# (setsid), a double-forked daemon, and its own `sleep` loop — then writes one
# usage line of 100 tokens. hub runs it with --max-tokens 50 under
# `strace -f -ttt`, which records the agent's write(2) of that line, every
# SIGTERM/SIGKILL delivered in the tree, and every death. Per run:
#
#   first: write of the crossing line → SIGTERM delivered to the first process
#          (the agent's process group is signalled at once)
#   term:  write of the crossing line → SIGTERM delivered to the last process
#          of the tree (every one of them got it; those outside the group are
#          found by a walk of /proc, which strace slows: ~2 ms untraced)
#   gone:  write of the crossing line → the last process of the tree killed.
#          In the second pass the whole tree ignores SIGTERM, so this is
#          --grace plus hub's SIGKILL latency. In the third only the
#          descendants ignore it: the agent exits at once, and each of them
#          is still owed the whole grace period.
#   most SIGTERMs: the most SIGTERMs any one process received (a stop sends
#          each process one).
#
# Usage: bash scripts/kill-bench.sh [RUNS] [GRACE]   (defaults 100, 500ms)
# KB_HUB=PATH measures a hub binary built elsewhere (another revision)
# instead of building this tree's.
# Needs strace. strace slows every traced process (each signal and each
# traced write stops it), so the numbers are upper bounds of hub's own.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-100}
grace=${2:-500ms}
if ! command -v strace >/dev/null; then
	echo "kill-bench: needs strace (apt-get install strace)" >&2
	exit 2
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ -n ${KB_HUB:-} ]]; then
	cp "$KB_HUB" "$work/hub"
else
	go build -o "$work/hub" ./cmd/hub
fi
cat >"$work/agent" <<'AGENT'
#!/bin/sh
if [ "$1" = --version ]; then echo 1.18.33; exit 0; fi
[ -n "$KB_IGNORE" ] && trap '' TERM
ign=
[ -n "$KB_TREE_IGNORES" ] && ign="trap '' TERM;"
sh -c "$ign exec sleep 300" &
setsid sh -c "$ign exec sleep 300" &
( setsid sh -c "$ign exec sleep 300" </dev/null >/dev/null 2>&1 & )
sleep 0.05
printf '%s\n' '{"type":"step_start","sessionID":"ses_kb","part":{}}'
printf '%s\n' '{"type":"step_finish","sessionID":"ses_kb","part":{"reason":"tool-calls","tokens":{"input":60,"output":40,"reasoning":0,"cache":{"read":0,"write":0}},"cost":0.5}}'
while :; do sleep 1; done
AGENT
chmod +x "$work/agent"

# measure: runs the agent $runs times; one "term gone signalled first" line
# per run (ms, ms, processes that got SIGTERM, ms), NA if unparsable.
measure() {
	local i trace
	for ((i = 0; i < runs; i++)); do
		trace="$work/trace.$i"
		env ${KB_IGNORE:+KB_IGNORE=1} ${KB_TREE_IGNORES:+KB_TREE_IGNORES=1} strace -f -ttt --seccomp-bpf -e trace=write -e signal=TERM,KILL -o "$trace" \
			"$work/hub" run --agent opencode --bin "$work/agent" --output json --max-tokens 50 --grace "$grace" x >/dev/null 2>&1 || true
		awk '
			/write\(1, "\{\\"type\\":\\"step_finish/ && !t0 { t0 = $2 }
			/--- SIGTERM/ { if (!($1 in term)) { term[$1] = $2; n++ }; if (++count[$1] > most) most = count[$1] }
			/\+\+\+ killed by/ { if ($2 > gone) gone = $2 }
			END {
				if (!t0 || n == 0) { print "NA NA 0 NA 0"; exit }
				last = 0; first = 0
				for (p in term) { if (term[p] > last) last = term[p]; if (!first || term[p] < first) first = term[p] }
				printf "%.3f %.3f %d %.3f %d\n", (last - t0) * 1000, (gone - t0) * 1000, n, (first - t0) * 1000, most
			}' "$trace"
		rm -f "$trace"
	done
}

# col N FILE: "median max" of column N of FILE's measured lines.
col() {
	awk -v c="$1" '$1 != "NA" { print $c }' "$2" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR) printf "%.2f %.2f", v[int((NR + 1) / 2)], v[NR] }'
}

# stats LABEL: summary of measure's lines on stdin.
stats() {
	local f="$work/stats" n procs tm tx gm gx fm fx
	cat >"$f"
	n=$(awk '$1 != "NA"' "$f" | wc -l)
	if [ "$n" -eq 0 ]; then
		echo "$1: no measurable run"
		return 1
	fi
	procs=$(awk '$1 != "NA" { s += $3; k++ } END { printf "%.1f", s / k }' "$f")
	most=$(awk '$5 > m { m = $5 } END { print m + 0 }' "$f")
	read -r tm tx <<<"$(col 1 "$f")"
	read -r gm gx <<<"$(col 2 "$f")"
	read -r fm fx <<<"$(col 4 "$f")"
	printf '%-30s runs %3d of %3d, %s processes/run, most SIGTERMs to one process %s\n  first: median %6s ms, max %6s ms   term: median %6s ms, max %6s ms   gone: median %7s ms, max %7s ms\n' \
		"$1" "$n" "$(wc -l <"$f")" "$procs" "$most" "$fm" "$fx" "$tm" "$tx" "$gm" "$gx"
}

echo "kill-bench: $runs runs each, --grace $grace, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(strace -V | head -1)"
measure | stats "tree obeys SIGTERM"
KB_IGNORE=1 measure | stats "tree ignores SIGTERM"
KB_TREE_IGNORES=1 measure | stats "only descendants ignore it"
