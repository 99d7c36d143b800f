#!/usr/bin/env bash
# Benchmarks hub against the SDKs' way of reading agent streams and against
# the pipe itself, on this machine, in one run (issues 8 and 22; see
# BENCHMARKS.md). Not part of CI. Every ratio it prints is from commands
# timed back to back. Its output is markdown, to paste into BENCHMARKS.md.
#
#	bash scripts/bench.sh                       # full sizes (~20 minutes, ~5 GB in $HUB_BENCH_DIR)
#	HUB_BENCH_SIZE=20M HUB_BENCH_RUN_SIZE=20M HUB_BENCH_RSS_SMALL=10M HUB_BENCH_RSS_BIG=50M \
#	  HUB_BENCH_TRIPS=5 HUB_BENCH_RUNS=2 bash scripts/bench.sh  # a quick run
#
# For every agent and text, over the same transcript (made by
# hubtest/benchgen), it times:
#	hub replay --agent A --output jsonl FILE
#	hub run --agent A --bin FAKE ... x     FAKE answers --version as agent A
#	                                       would and otherwise execs cat FILE
#	node scripts/bench-node.mjs parse FILE (node:readline + JSON.parse)
#	python3 scripts/bench-python.py FILE   (for line in file: json.loads)
#	cat FILE
# Then hub run over a Node writer (unpaced and paced), peak RSS of hub run
# and hub replay, and the budget trip latency.
#
# Settings (environment):
#	HUB_BENCH_SIZE      transcript per agent and text for the main table (500M)
#	HUB_BENCH_RUN_SIZE  stream the Node writers print for hub run        (200M)
#	HUB_BENCH_RATE      MiB/s of the paced Node writer                   (50)
#	HUB_BENCH_RSS_SMALL HUB_BENCH_RSS_BIG  streams for peak RSS          (100M, 1G)
#	HUB_BENCH_TRIPS     budget trips timed                               (100)
#	HUB_BENCH_RUNS      timed runs per command (the median is reported)  (5)
#	HUB_BENCH_AGENTS    agents                       (claude codex opencode pi)
#	HUB_BENCH_TEXTS     text in the transcripts (code logs): code has a
#	                    JSON escape every ~14 bytes, logs every ~65
#	HUB_BENCH_NODE_WRITER  0: skip the Node writer section               (1)
#	HUB_BENCH_DIR       scratch directory, kept      (a new one under /tmp)
#
# Tools: hyperfine when installed (installed from Debian's packages when
# running as root with apt-get), else /usr/bin/time; node; python3; go.
# Exits 1 when a hub run or replay did not end ok (each is checked once,
# before it is timed).
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
NODE_WRITER=${HUB_BENCH_NODE_WRITER:-1}
DIR=${HUB_BENCH_DIR:-$(mktemp -d /tmp/hub-bench.XXXXXX)}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$DIR"
cd "$ROOT"

if ! command -v hyperfine >/dev/null && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	apt-get install -y -qq hyperfine >/dev/null 2>&1 || true
fi
TIMER="time"
command -v hyperfine >/dev/null && TIMER=hyperfine

load() { cut -d' ' -f1-3 /proc/loadavg; }

# The command line this run was started with: its HUB_BENCH_* settings.
settings=$(env | grep '^HUB_BENCH_' | sort | sed "/=.* /s/=\(.*\)/='\1'/" | tr '\n' ' ' || true)
echo "## scripts/bench.sh, rev $(git describe --always --dirty 2>/dev/null || echo '?'), $(date -u '+%Y-%m-%d %H:%M') UTC"
echo
echo "- command: \`${settings}bash scripts/bench.sh\`"
echo "- machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB"
echo "- tools: $(go version | cut -d' ' -f3), node $(node --version), $(python3 --version), timer: $(
	if [ "$TIMER" = hyperfine ]; then hyperfine --version; else echo /usr/bin/time; fi
)"
echo "- load before: $(load)"
echo "- scratch: $DIR"
echo

go build -o "$DIR/hub" ./cmd/hub
go build -o "$DIR/benchgen" ./hubtest/benchgen/cmd/benchgen

# median_s NAME CMD: times CMD (a shell command line) $RUNS times and
# prints the median wall time in seconds, or "-" when it could not.
median_s() {
	local name=$1 cmd=$2
	if [ "$TIMER" = hyperfine ]; then
		if hyperfine --runs "$RUNS" --warmup 1 --style none --export-json "$DIR/$name.json" "$cmd" >/dev/null 2>&1; then
			node -e 'const r=require(process.argv[1]).results[0]; console.log(r.median.toFixed(4))' "$DIR/$name.json"
		else
			echo "bench: hyperfine failed: $cmd" >&2
			echo -
		fi
	else
		local ts=()
		sh -c "$cmd" >/dev/null 2>&1 || true # warm-up
		for _ in $(seq "$RUNS"); do
			ts+=("$(/usr/bin/time -f %e sh -c "$cmd" 2>&1 >/dev/null | tail -1)")
		done
		printf '%s\n' "${ts[@]}" | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'
	fi
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{if (a+0 > 0 && b+0 > 0) printf "%.2f", a/b; else printf "-"}'; }
mbs() { awk -v n="$1" -v s="$2" 'BEGIN{if (s+0 > 0) printf "%.0f", n/1048576/s; else printf "-"}'; }
mib() { awk -v n="$1" 'BEGIN{printf "%.0f", n/1048576}'; }
bytes() { stat -c %s "$1"; }

# gen AGENT TEXT SIZE: the transcript's path, made if missing.
gen() {
	local f="$DIR/$1-$2-$3.jsonl"
	[ -s "$f" ] || "$DIR/benchgen" -agent "$1" -text "$2" -size "$3" -o "$f"
	echo "$f"
}

# A fake agent: it answers --version as the agent prints it (the version
# the adapter is tested on, read from its source, so the probe accepts it)
# and otherwise, whatever its arguments, execs cat FILE, or with a rate,
# Node writing FILE one line per write (at most RATE MiB/s unless 0).
tested_version() {
	sed -n 's/^const TestedVersion = "\(.*\)"$/\1/p' "$ROOT/adapters/$1/$1.go"
}
# fake AGENT FILE [RATE]: the fake's path.
fake() {
	local a=$1 f=$2 rate=${3:-} v line out=""
	v=$(tested_version "$a")
	[ -n "$v" ] || { echo "bench: no TestedVersion in adapters/$a/$a.go" >&2; exit 1; }
	case $a in
	claude) line="$v (Claude Code)" ;;
	codex) line="codex-cli $v" ;;
	pi) line=$v out=" >&2" ;; # pi prints its version on stderr
	*) line=$v ;;
	esac
	local p
	p="$DIR/fake-$a-$(basename "$f" .jsonl)${rate:+-node$rate}"
	{
		echo '#!/bin/sh'
		echo 'for arg in "$@"; do'
		echo "	[ \"\$arg\" = --version ] && { echo '$line'$out; exit 0; }"
		echo 'done'
		if [ -n "$rate" ]; then
			echo "exec node '$ROOT/scripts/bench-node.mjs' write '$f' $rate"
		else
			echo "exec cat '$f'"
		fi
	} >"$p"
	chmod +x "$p"
	echo "$p"
}

# hub run flags: the transcripts call shell tools, which the default
# --permission read-only does not grant (hub would stop the run at the
# first call, permission_denied/effect_not_granted, exit status 6).
RUNFLAGS="--permission full --yes --output jsonl"

# check WHAT CMD...: runs a hub command once and says whether it exited 0
# with a last event run.finished with ok true; failures go to stderr and
# make the script exit 1 at the end.
failed=0
check() {
	local what=$1 last rc
	shift
	# with pipefail, the status is hub's unless tail fails
	last=$("$@" 2>"$DIR/check.err" | tail -n 1) && rc=0 || rc=$?
	if [ "$rc" != 0 ] || ! printf '%s' "$last" | grep -q '"type":"run.finished","ok":true'; then
		echo "bench: ERROR: $what: exit status $rc, last event: $(printf '%s' "$last" | cut -c1-400)" >&2
		sed 's/^/bench:   stderr: /' "$DIR/check.err" | head -5 >&2
		failed=1
		return 1
	fi
}

echo "### Throughput ($SIZE per agent and text, median of $RUNS, file in the page cache, output to /dev/null)"
echo
echo '```'
echo "hub replay --agent A --output jsonl FILE"
echo "hub run --agent A --bin FAKE $RUNFLAGS x   # FAKE: --version as A, else exec cat FILE"
echo "node scripts/bench-node.mjs parse FILE      # node:readline + JSON.parse"
echo "python3 scripts/bench-python.py FILE        # for line in open(FILE, 'rb'): json.loads(line)"
echo "cat FILE"
echo '```'
echo
echo "load before the table: $(load)"
echo
echo "| agent | text | MiB | replay s | run s | node s | python s | cat s | replay MiB/s | run MiB/s | node MiB/s | python MiB/s | node/hub | python/hub | run/replay | hub/cat |"
echo "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
for text in $TEXTS; do
	for a in $AGENTS; do
		f=$(gen "$a" "$text" "$SIZE")
		n=$(bytes "$f")
		fk=$(fake "$a" "$f")
		cat "$f" >/dev/null # into the page cache
		h=- r=-
		check "hub replay $a $text" "$DIR/hub" replay --agent "$a" --output jsonl "$f" &&
			h=$(median_s "replay-$a-$text" "'$DIR/hub' replay --agent $a --output jsonl '$f' >/dev/null")
		# shellcheck disable=SC2086 # RUNFLAGS is split on purpose
		check "hub run $a $text" "$DIR/hub" run --agent "$a" --bin "$fk" $RUNFLAGS x &&
			r=$(median_s "run-$a-$text" "'$DIR/hub' run --agent $a --bin '$fk' $RUNFLAGS x >/dev/null")
		j=$(median_s "node-$a-$text" "node '$ROOT/scripts/bench-node.mjs' parse '$f' 2>/dev/null")
		p=$(median_s "python-$a-$text" "python3 '$ROOT/scripts/bench-python.py' '$f' 2>/dev/null")
		c=$(median_s "cat-$a-$text" "cat '$f' >/dev/null")
		# node/hub, python/hub, hub/cat: times over hub replay's time;
		# run/replay: hub run's speed over hub replay's (replay s / run s).
		echo "| $a | $text | $(mib "$n") | $h | $r | $j | $p | $c | $(mbs "$n" "$h") | $(mbs "$n" "$r") | $(mbs "$n" "$j") | $(mbs "$n" "$p") | $(ratio "$j" "$h") | $(ratio "$p" "$h") | $(ratio "$h" "$r") | $(ratio "$h" "$c") |"
	done
done
echo
echo "load after the table: $(load)"
echo
echo "MiB = 2^20 bytes. node/hub, python/hub: how many times longer than hub replay they took. run/replay: hub run's speed over hub replay's (replay s / run s; the target is ≥ 0.9). hub/cat: hub replay's time over cat's."
echo

if [ "$NODE_WRITER" != 0 ]; then
	f=$(gen claude code "$RUN_SIZE")
	cat "$f" >/dev/null
	echo "### hub run over a Node writer (claude, code text, $RUN_SIZE, one write per line, median of $RUNS)"
	echo
	echo "| writer | writer alone s | hub run s | hub run/writer |"
	echo "|---|--:|--:|--:|"
	for rate in 0 "$RATE"; do
		fk=$(fake claude "$f" "$rate")
		name="node"
		[ "$rate" = 0 ] || name="node, $rate MiB/s"
		alone=$(median_s "alone-node$rate" "'$fk' -p x >/dev/null")
		run=-
		# shellcheck disable=SC2086
		check "hub run over $name writer" "$DIR/hub" run --agent claude --bin "$fk" $RUNFLAGS x &&
			run=$(median_s "run-node$rate" "'$DIR/hub' run --agent claude --bin '$fk' $RUNFLAGS x >/dev/null")
		echo "| $name | $alone | $run | $(ratio "$run" "$alone") |"
	done
	echo
fi

echo "### Peak RSS (claude, code text; hub run with the cat writer)"
echo
echo "| stream | hub run max RSS KiB | hub replay max RSS KiB |"
echo "|---|--:|--:|"
run_rss=() replay_rss=()
for s in "$RSS_SMALL" "$RSS_BIG"; do
	f=$(gen claude code "$s")
	fk=$(fake claude "$f")
	k=- K=-
	# shellcheck disable=SC2086
	check "hub run rss $s" /usr/bin/time -o "$DIR/rss-run" -f %M "$DIR/hub" run --agent claude --bin "$fk" $RUNFLAGS x &&
		k=$(tail -1 "$DIR/rss-run")
	check "hub replay rss $s" /usr/bin/time -o "$DIR/rss-replay" -f %M "$DIR/hub" replay --agent claude --output jsonl "$f" &&
		K=$(tail -1 "$DIR/rss-replay")
	run_rss+=("$k") replay_rss+=("$K")
	echo "| $s | $k | $K |"
done
echo "| ratio $RSS_BIG/$RSS_SMALL | $(ratio "${run_rss[1]}" "${run_rss[0]}") | $(ratio "${replay_rss[1]}" "${replay_rss[0]}") |"
echo

echo "### Budget trip to SIGTERM in the agent ($TRIPS runs)"
echo
echo '```'
HUB_TRIPS=$TRIPS go test -count=1 -run 'TestBudgetTripLatency$' -v . 2>&1 | grep -E 'budget trip|FAIL|^ok' || true
echo '```'
echo
echo "load after: $(load)"
if [ "$failed" != 0 ]; then
	echo "bench: ERROR: some hub runs did not end ok (see above)" >&2
	exit 1
fi
