#!/usr/bin/env bash
# bench-run-cost.sh — what `hub run` costs over the agent CLI it runs
# (issue 33; see BENCHMARKS.md). For each real CLI, against the mock model
# server (cmd/mockllm, set up by scripts/mock-env.sh as the real-CLI tests
# do), it times, alternated (hub, CLI, hub, CLI, …):
#
#	hub run --agent A [--model M] --cwd DIR --output jsonl "Say hello. MOCK_TEXT"
#	the CLI alone, as hub runs it: the argv of hub's run.started event, and
#	the environment, working directory and stdin (the prompt, for the CLIs
#	that read it there) its process got under hub, captured once by a
#	wrapper passed as --bin
#
# and, with HUB_BENCH_COLD=1 (the default), a third command in each round:
# hub run with its version cache emptied first (every run probes the CLI's
# --version, as before issue 33). Both hubs' version cache is otherwise
# warm: a hub run before the timed ones fills it. Each command runs once
# before the timing (the CLIs' own caches). Output: a markdown table of
# medians, to paste into BENCHMARKS.md. scripts/run-cost.sh is the other
# half: hub's fixed cost over a fake agent that answers at once.
#
#	bash scripts/bench-run-cost.sh                 # 10 rounds, every agent
#	HUB_BENCH_PAIRS=20 HUB_BENCH_AGENTS="pi opencode" bash scripts/bench-run-cost.sh
#
# Settings (environment):
#	HUB_BENCH_PAIRS   rounds per agent                          (10)
#	HUB_BENCH_AGENTS  agents                    (claude codex opencode pi)
#	HUB_BENCH_COLD    1: also time hub with no version cache    (1)
#	HUB_BENCH_DIR     scratch directory, kept       (a new one, removed)
# The CLIs are the pinned ones in .tools/npm (scripts/install-agents.sh),
# or HUB_<AGENT>_BIN. Exits 1 when a run fails or the CLI's argv under hub
# differs from run.started's.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
pairs=${HUB_BENCH_PAIRS:-10}
read -r -a agents <<<"${HUB_BENCH_AGENTS:-claude codex opencode pi}"
cold=${HUB_BENCH_COLD:-1}
prompt="Say hello. MOCK_TEXT"

# Not under /tmp: Codex warns about a CODEX_HOME there.
if [[ -n ${HUB_BENCH_DIR:-} ]]; then
	work=$HUB_BENCH_DIR
	mkdir -p "$work"
else
	work=$(mktemp -d /var/tmp/hub-run-cost.XXXXXX)
fi
work=$(cd "$work" && pwd)
mock=
cleanup() {
	[[ -n $mock ]] && kill "$mock" 2>/dev/null || true
	[[ -z ${HUB_BENCH_DIR:-} ]] && rm -rf "$work"
	return 0
}
trap cleanup EXIT

go build -o "$work/" ./cmd/hub ./cmd/mockllm
hub=$work/hub
"$work/mockllm" >"$work/mock.out" 2>"$work/mock.err" &
mock=$!
url=
for _ in $(seq 100); do
	url=$(sed -n 's/^MOCKLLM_URL=//p' "$work/mock.out")
	[[ -n $url ]] && break
	sleep 0.1
done
[[ -n $url ]] || { echo "mockllm printed no URL: $(cat "$work/mock.err")" >&2; exit 1; }

now_ns() { date +%s%N; }
# median FILE: the median of the numbers in FILE (one a line).
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
fail() { echo "bench-run-cost: $*" >&2; exit 1; }

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
echo "hub: $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo '+changes'); $pairs rounds per agent, alternated"
echo
printf '| agent | CLI alone | hub run | hub / CLI | hub − CLI (median of pairs) |%s load before → after |\n' "$([[ $cold == 1 ]] && echo ' hub run, no version cache |')"
printf '|---|---|---|---|---|%s---|\n' "$([[ $cold == 1 ]] && echo '---|')"

for agent in "${agents[@]}"; do
	var=HUB_${agent^^}_BIN
	real=${!var:-$root/.tools/npm/node_modules/.bin/$agent}
	[[ -x $real ]] || fail "$agent: no CLI at $real (bash scripts/install-agents.sh $agent, or set $var)"
	d=$work/$agent
	mkdir -p "$d/cwd" "$d/capture"
	setup=$(bash scripts/mock-env.sh "$agent" "$url" "$d/env")
	model=$(sed -n 's/^# model: \([^ (][^ ]*\)$/\1/p' <<<"$setup")
	# hub's environment: the mock's settings, the CLIs in PATH.
	mapfile -d '' -t hubenv < <(
		eval "$setup"
		for v in $(sed -n 's/^export \([A-Za-z_0-9]*\)=.*/\1/p' <<<"$setup"); do printf '%s=%s\0' "$v" "${!v}"; done
	)
	hubenv+=("PATH=$(dirname "$real"):$PATH")
	hubargs=(run --agent "$agent" ${model:+--model "$model"} --cwd "$d/cwd" --output jsonl)
	runhub() { env "${hubenv[@]}" "$hub" "${hubargs[@]}" "$@" "$prompt"; }

	# What hub runs: argv from run.started; the rest from a wrapper that
	# records what it was given, then runs the CLI.
	runhub >"$d/started.jsonl" 2>"$d/hub.err" || fail "$agent: hub run failed: $(tail -3 "$d/hub.err")"
	jq -j 'select(.type == "run.started") | .argv[] | ., "\u0000"' "$d/started.jsonl" >"$d/argv.started"
	grep -q 'REDACTED' "$d/argv.started" && fail "$agent: run.started's argv is redacted"
	cat >"$d/capture/$agent" <<SH
#!/bin/sh
if [ "\$1" = --version ]; then exec "$real" "\$@"; fi
printf '%s\0' "\$@" >"$d/argv.captured"
env -0 >"$d/env.captured"
pwd >"$d/cwd.captured"
cat >"$d/stdin.captured"
exec "$real" "\$@" <"$d/stdin.captured"
SH
	chmod +x "$d/capture/$agent"
	runhub --bin "$d/capture/$agent" >"$d/capture.jsonl" 2>>"$d/hub.err" || fail "$agent: hub run --bin wrapper failed"
	mapfile -d '' -t argv <"$d/argv.started"
	mapfile -d '' -t captured <"$d/argv.captured"
	[[ ${argv[*]:1} == "${captured[*]}" ]] || fail "$agent: argv under hub (${captured[*]}) is not run.started's (${argv[*]:1})"
	mapfile -d '' -t cliEnv < <(grep -zv '^PWD=' "$d/env.captured"; printf 'PWD=%s\0' "$(cat "$d/cwd.captured")")
	cwd=$(cat "$d/cwd.captured")
	runcli() { (cd "$cwd" && env -i "${cliEnv[@]}" "$real" "${argv[@]:1}" <"$d/stdin.captured"); }
	runcli >"$d/cli.out" 2>"$d/cli.err" || fail "$agent: the CLI alone failed: $(tail -3 "$d/cli.err")"
	runhub >/dev/null 2>>"$d/hub.err" || fail "$agent: hub run failed"
	printf '%s\n' "$agent: $real ${argv[*]:1}" >&2

	load0=$(cut -d' ' -f1 /proc/loadavg)
	: >"$d/t.hub"
	: >"$d/t.cli"
	: >"$d/t.diff"
	: >"$d/t.cold"
	for ((i = 0; i < pairs; i++)); do
		t0=$(now_ns)
		runhub >/dev/null 2>>"$d/hub.err" || fail "$agent: hub run failed"
		t1=$(now_ns)
		runcli >/dev/null 2>>"$d/cli.err" || fail "$agent: the CLI alone failed"
		t2=$(now_ns)
		echo $(((t1 - t0) / 1000000)) >>"$d/t.hub"
		echo $(((t2 - t1) / 1000000)) >>"$d/t.cli"
		echo $((((t1 - t0) - (t2 - t1)) / 1000000)) >>"$d/t.diff"
		if [[ $cold == 1 ]]; then
			rm -f "$d"/env/xdg/CACHE/hub/version-*.json
			t0=$(now_ns)
			runhub >/dev/null 2>>"$d/hub.err" || fail "$agent: hub run failed"
			t1=$(now_ns)
			echo $(((t1 - t0) / 1000000)) >>"$d/t.cold" # and the cache is warm again
		fi
	done
	load1=$(cut -d' ' -f1 /proc/loadavg)
	h=$(median "$d/t.hub") c=$(median "$d/t.cli")
	coldcell=
	[[ $cold == 1 ]] && coldcell=" $(median "$d/t.cold") ms |"
	printf '| %s | %s ms | %s ms | %s× | %s ms |%s %s → %s |\n' "$agent" "$c" "$h" \
		"$(awk -v h="$h" -v c="$c" 'BEGIN { printf "%.3f", h / c }')" "$(median "$d/t.diff")" "$coldcell" "$load0" "$load1"
done
