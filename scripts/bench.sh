#!/usr/bin/env bash
# Benchmarks hub against the SDKs' way of reading agent streams and against
# the pipe itself, on this machine, in one run (issue 8; see BENCHMARKS.md).
# Not part of CI. Every ratio it prints is from commands timed back to back.
#
#	bash scripts/bench.sh                       # full sizes (~10 minutes, ~4 GB in $HUB_BENCH_DIR)
#	HUB_BENCH_SIZE=50M HUB_BENCH_RUN_SIZE=20M HUB_BENCH_RSS_BIG=200M \
#	  HUB_BENCH_TRIPS=10 bash scripts/bench.sh  # a quick run
#
# Settings (environment):
#	HUB_BENCH_SIZE      transcript per agent for replay vs node vs cat   (500M)
#	HUB_BENCH_RUN_SIZE  stream the fake agent prints for hub run         (200M)
#	HUB_BENCH_RATE      MiB/s of the paced fake agent                    (50)
#	HUB_BENCH_RSS_SMALL HUB_BENCH_RSS_BIG  streams for peak RSS          (100M, 1G)
#	HUB_BENCH_TRIPS     budget trips timed                               (100)
#	HUB_BENCH_RUNS      timed runs per command (the median is reported)  (5)
#	HUB_BENCH_AGENTS    agents                       (claude codex opencode pi)
#	HUB_BENCH_TEXTS     text in the replayed transcripts (code logs): code
#	                    has a JSON escape every ~14 bytes, logs every ~65
#	HUB_BENCH_DIR       scratch directory, kept      (a new one under /tmp)
#
# Tools: hyperfine when installed (installed from Debian's packages when
# running as root with apt-get), else /usr/bin/time; node; go.
set -euo pipefail

SIZE=${HUB_BENCH_SIZE:-500M}
RUN_SIZE=${HUB_BENCH_RUN_SIZE:-200M}
RATE=${HUB_BENCH_RATE:-50}
RSS_SMALL=${HUB_BENCH_RSS_SMALL:-100M}
RSS_BIG=${HUB_BENCH_RSS_BIG:-1G}
TRIPS=${HUB_BENCH_TRIPS:-100}
RUNS=${HUB_BENCH_RUNS:-5}
AGENTS=${HUB_BENCH_AGENTS:-claude codex opencode pi}
TEXTS=${HUB_BENCH_TEXTS:-code logs}
DIR=${HUB_BENCH_DIR:-$(mktemp -d /tmp/hub-bench.XXXXXX)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$DIR"
cd "$ROOT"

if ! command -v hyperfine >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	apt-get install -y -qq hyperfine >/dev/null 2>&1 || true
fi
TIMER=time
command -v hyperfine >/dev/null && TIMER=hyperfine

echo "# hub benchmarks, $(date -u +%Y-%m-%dT%H:%MZ)"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB"
echo "tools: $(go version | cut -d' ' -f3), node $(node --version), timer: $TIMER"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "scratch: $DIR"
echo

go build -o "$DIR/hub" ./cmd/hub
go build -o "$DIR/benchgen" ./adapters/adaptertest/benchgen/cmd/benchgen

# median_s NAME CMD: times CMD (a shell command line) $RUNS times and
# prints the median wall time in seconds.
median_s() {
	local name=$1 cmd=$2
	if [ "$TIMER" = hyperfine ]; then
		hyperfine --runs "$RUNS" --warmup 1 --style none --export-json "$DIR/$name.json" "$cmd" >/dev/null 2>&1
		node -e 'const r=require(process.argv[1]).results[0]; console.log(r.median.toFixed(4))' "$DIR/$name.json"
	else
		local ts=()
		sh -c "$cmd" >/dev/null 2>&1 # warm-up
		for _ in $(seq "$RUNS"); do
			ts+=("$(/usr/bin/time -f %e sh -c "$cmd" 2>&1 >/dev/null | tail -1)")
		done
		printf '%s\n' "${ts[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'
	fi
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{if (b > 0) printf "%.2f", a/b; else printf "-"}'; }
mbs() { awk -v n="$1" -v s="$2" 'BEGIN{if (s > 0) printf "%.0f", n/1048576/s; else printf "-"}'; }
bytes() { stat -c %s "$1"; }

echo "## replay: hub vs Node readline+JSON.parse vs cat ($SIZE per agent, median of $RUNS)"
printf '%-9s %-5s %6s %9s %9s %9s | %9s %9s %9s\n' agent text MiB hub_s node_s cat_s hub_MiB/s node/hub hub/cat
for text in $TEXTS; do
	for a in $AGENTS; do
		f="$DIR/$a-$text-$SIZE.jsonl"
		[ -s "$f" ] || "$DIR/benchgen" -agent "$a" -text "$text" -size "$SIZE" -o "$f"
		n=$(bytes "$f")
		cat "$f" >/dev/null # into the page cache
		h=$(median_s "replay-$a-$text" "'$DIR/hub' replay --agent $a --output jsonl '$f' >/dev/null")
		j=$(median_s "node-$a-$text" "node '$ROOT/scripts/bench-node.mjs' parse '$f' 2>/dev/null")
		c=$(median_s "cat-$a-$text" "cat '$f' >/dev/null")
		printf '%-9s %-5s %6.0f %9s %9s %9s | %9s %9s %9s\n' "$a" "$text" "$(awk -v n="$n" 'BEGIN{print n/1048576}')" \
			"$h" "$j" "$c" "$(mbs "$n" "$h")" "$(ratio "$j" "$h")" "$(ratio "$h" "$c")"
	done
done
echo

# The fake agent answers --version as Claude Code and prints
# $HUB_BENCH_STREAM: with cat (as fast as the pipe takes it) or, with
# HUB_BENCH_NODE set, one write per line from Node (as a Node CLI prints),
# at most $HUB_BENCH_NODE MiB/s unless it is 0.
fake="$DIR/fake-claude"
cat >"$fake" <<EOF
#!/bin/sh
case "\$1" in --version) echo "2.1.99 (Claude Code)"; exit 0;; esac
[ -n "\$HUB_BENCH_NODE" ] && exec node '$ROOT/scripts/bench-node.mjs' write "\$HUB_BENCH_STREAM" "\$HUB_BENCH_NODE"
exec cat "\$HUB_BENCH_STREAM"
EOF
chmod +x "$fake"

echo "## hub run over a fake agent printing $RUN_SIZE (claude-shaped, code text), output jsonl to /dev/null, median of $RUNS"
f="$DIR/claude-code-$RUN_SIZE.jsonl"
[ -s "$f" ] || "$DIR/benchgen" -agent claude -size "$RUN_SIZE" -o "$f"
cat "$f" >/dev/null
export HUB_BENCH_STREAM="$f"
printf '%-26s %9s %9s %9s\n' agent agent_s hub_run_s hub/agent
for writer in cat node "node-$RATE"; do
	case $writer in
	cat) unset HUB_BENCH_NODE ;;
	node) export HUB_BENCH_NODE=0 ;;
	*) export HUB_BENCH_NODE=$RATE ;;
	esac
	alone=$(median_s "alone-$writer" "'$fake' -p x >/dev/null")
	run=$(median_s "run-$writer" "'$DIR/hub' run --agent claude --bin '$fake' --output jsonl x >/dev/null")
	name="$writer writer"
	[ "$writer" = "node-$RATE" ] && name="node writer, $RATE MiB/s"
	printf '%-26s %9s %9s %9s\n' "$name" "$alone" "$run" "$(ratio "$run" "$alone")"
done
unset HUB_BENCH_NODE
echo

echo "## peak RSS of hub run (claude-shaped stream, code text, cat writer)"
printf '%-8s %12s\n' stream max_RSS_KiB
rss=()
for s in "$RSS_SMALL" "$RSS_BIG"; do
	f="$DIR/claude-code-$s.jsonl"
	[ -s "$f" ] || "$DIR/benchgen" -agent claude -size "$s" -o "$f"
	export HUB_BENCH_STREAM="$f"
	k=$(/usr/bin/time -f %M "$DIR/hub" run --agent claude --bin "$fake" --output jsonl x 2>&1 >/dev/null | tail -1)
	rss+=("$k")
	printf '%-8s %12s\n' "$s" "$k"
done
echo "ratio $RSS_BIG/$RSS_SMALL: $(ratio "${rss[1]}" "${rss[0]}")"
echo

echo "## budget trip to SIGTERM in the agent ($TRIPS runs)"
HUB_TRIPS=$TRIPS go test -count=1 -run 'TestBudgetTripLatency$' -v ./adapters 2>&1 | grep -E 'budget trip|FAIL|^ok' || true
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
