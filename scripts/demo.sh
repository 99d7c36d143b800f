#!/usr/bin/env bash
# The main job, offline: builds hub, installs the pinned agent CLIs, starts
# hub's mock model server on 127.0.0.1, and runs each real CLI (Claude
# Code, Codex, OpenCode, pi) through `hub run`: a plain answer and a tool
# call (a read in --cwd under the default read-only grant). Then OpenCode
# alone: a read outside --cwd denied, two writes under --permission
# workspace-write (one inside --cwd lands on the disk, one outside it does
# not), a sandboxed write kept as a diff and applied with `hub apply`, a
# structured answer repaired, the events for programs (jsonl), and a
# provider that rejects the API key, to show an error bin; and OpenCode once
# more through ACP (--agent acp --acp-command "opencode acp"). It fails (exit
# 1) when a run does not give what it shows. About 2 minutes once the CLIs are
# installed (most of it OpenCode's start-up, 6-10 s a run).
#
#   bash scripts/demo.sh
#
# Each CLI is pointed at the mock server by scripts/mock-env.sh, the same
# settings as the real-CLI tests (adapters/<agent>/real_test.go; its
# TestMockEnvScript keeps the two the same).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/step.sh

step demo "downloading Go modules" go mod download
step demo "building hub and mockllm" go build -o bin/ ./cmd/hub ./cmd/mockllm
bash scripts/install-agents.sh >/dev/null
export PATH="$root/.tools/npm/node_modules/.bin:$PATH"

# Not under /tmp: Codex will not make its helper binaries in a CODEX_HOME
# there, and says so in a warning.
work=$(mktemp -d /var/tmp/hub-demo.XXXXXX 2>/dev/null || mktemp -d)
mock_pid=
cleanup() {
  [[ -n $mock_pid ]] && kill "$mock_pid" 2>/dev/null && wait "$mock_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

fail() { echo "demo: FAILED: $*" >&2; exit 1; }

# Start the mock model server; it prints MOCKLLM_URL=… once it listens.
coproc MOCK { exec bin/mockllm; }
mock_pid=$MOCK_PID
read -r -t 10 line <&"${MOCK[0]}" || fail "the mock server did not start"
url=${line#MOCKLLM_URL=}
echo "demo: mock model server at $url"

mkdir -p "$work/project"
echo "the notes of the demo project" >"$work/project/notes.txt"
notes=$work/project/notes.txt
out=$work/stdout

# run AGENT WANT FLAGS… PROMPT: hub run on AGENT, its answer (stdout) and
# its tool calls and summary (stderr) shown as they come and kept in $out;
# fails unless hub exits 0 and the answer contains WANT.
run() {
  local agent=$1 want=$2
  shift 2
  "${hub[@]}" --agent "$agent" "$@" 2>&1 | tee "$out" || fail "hub run --agent $agent exited $?"
  grep -qF -- "$want" "$out" || fail "$agent's answer does not contain '$want'"
  grep -q '^── ok' "$out" || fail "$agent's run did not end ok"
}

# The tool call each CLI's model makes to read the notes: its own read tool
# and argument names (Codex has a shell tool only).
declare -A read_call=(
  [claude]="Read {\"file_path\":\"$notes\"}"
  [codex]="exec_command {\"cmd\":\"cat $notes\"}"
  [opencode]="read {\"filePath\":\"$notes\"}"
  [pi]="read {\"path\":\"$notes\"}"
)

for agent in claude codex opencode pi; do
  # Each agent in a subshell of its own: a private HOME and XDG dirs, and
  # only its own settings.
  (
    eval "$(bash scripts/mock-env.sh "$agent" "$url" "$work/$agent")"
    hub=(bin/hub run --cwd "$work/project" --timeout 2m --idle-timeout 60s)
    [[ $agent == opencode || $agent == pi ]] && hub+=(--model mock/mock-model)
    echo
    echo "\$ hub run --agent $agent --output text \"Say hello. MOCK_TEXT\""
    run "$agent" "Hello from the mock model." --output text "Say hello. MOCK_TEXT"
    echo
    echo "\$ hub run --agent $agent --output text 'Read the notes. MOCK_CALL ${read_call[$agent]//$work\//…/}'"
    run "$agent" "the notes of the demo project" --output text "Read the notes. MOCK_CALL ${read_call[$agent]}"
  )
done

# OpenCode from here on.
eval "$(bash scripts/mock-env.sh opencode "$url" "$work/opencode")"
hub=(bin/hub run --agent opencode --model mock/mock-model --cwd "$work/project" --timeout 2m --idle-timeout 60s)

echo
echo "\$ hub run --agent opencode --output text \"Check the shell works, then report. MOCK_TOOL\""
echo "  (the default --permission read-only: the shell is not offered, and a read outside --cwd is denied)"
"${hub[@]}" --output text "Check the shell works, then report. MOCK_TOOL" 2>&1 | tee "$out"
grep -q "^← read denied" "$out" || fail "the read outside --cwd was not denied"

written=$work/project/written.txt outside=$work/outside.txt
echo
echo "\$ hub run --agent opencode --permission workspace-write --output text \"… MOCK_CALL write {\\\"filePath\\\":\\\"$written\\\", …}\""
"${hub[@]}" --permission workspace-write --output text "Write the notes. MOCK_CALL write {\"filePath\":\"$written\",\"content\":\"written by the agent\"}"
[[ $(cat "$written" 2>/dev/null) == "written by the agent" ]] || fail "$written was not written"
echo "demo: $written holds: $(cat "$written")"
echo
echo "\$ hub run --agent opencode --permission workspace-write --output text \"… MOCK_CALL write {\\\"filePath\\\":\\\"$outside\\\", …}\""
status=0
"${hub[@]}" --permission workspace-write --output text "Write outside. MOCK_CALL write {\"filePath\":\"$outside\",\"content\":\"x\"}" || status=$?
[[ ! -e $outside ]] || fail "$outside was written: the grant did not hold"
echo "demo: hub exited $status (6 = permission_denied), and $outside was not written"
[[ $status -eq 6 ]] || fail "hub exited $status, want 6"

echo
echo "\$ hub run --agent opencode --sandbox copy --permission workspace-write --diff-out change.diff \"… MOCK_CALL write {\\\"filePath\\\":\\\"plan.md\\\", …}\""
echo "  (the agent works in a copy: the change is reported and saved as a diff, and the original is left as it was)"
diff_file=$work/change.diff
"${hub[@]}" --sandbox copy --permission workspace-write --diff-out "$diff_file" --output text \
  "Write the plan. MOCK_CALL write {\"filePath\":\"plan.md\",\"content\":\"1. read the code\\n2. fix the test\\n\"}"
[[ ! -e $work/project/plan.md ]] || fail "the sandboxed write reached the original"
grep -q '^+1. read the code' "$diff_file" || fail "$diff_file does not hold the change"
cat "$diff_file"
echo
echo "\$ hub apply --cwd project change.diff"
bin/hub apply --cwd "$work/project" "$diff_file"
[[ $(head -1 "$work/project/plan.md") == "1. read the code" ]] || fail "hub apply did not write plan.md"
echo "demo: $work/project/plan.md now holds: $(head -1 "$work/project/plan.md") …"

schema=$work/review.json
cat >"$schema" <<'JSON'
{"type": "object", "additionalProperties": false, "required": ["verdict", "score"],
 "properties": {"verdict": {"enum": ["approve", "reject"]}, "score": {"type": "integer", "minimum": 0, "maximum": 10}}}
JSON
echo
echo "\$ hub run --agent opencode --schema review.json --output answer \"Review it. MOCK_ANSWER {\\\"verdict\\\":\\\"approve\\\",\\\"score\\\":11} MOCK_THEN {… 7}\""
echo "  (the first answer is out of range: hub resumes the session once with what is wrong, and prints the corrected value alone)"
answer=$("${hub[@]}" --schema "$schema" --output answer \
  "Review it. MOCK_ANSWER {\"verdict\":\"approve\",\"score\":11} MOCK_THEN {\"verdict\":\"approve\",\"score\":7}")
echo "$answer"
[[ $answer == '{"verdict":"approve","score":7}' ]] || fail "the answer is not the corrected one"

echo
echo "\$ hub run --agent opencode --output jsonl \"Say hello. MOCK_TEXT\""
"${hub[@]}" --output jsonl "Say hello. MOCK_TEXT" | tee "$out"
tail -1 "$out" | grep -q '"type":"run.finished".*"ok":true' || fail "the last event is not an ok run.finished"

echo
echo "\$ hub run --agent acp --acp-command \"opencode acp\" --output text \"Say hello. MOCK_TEXT\""
echo "  (the same OpenCode, driven through the Agent Client Protocol: any ACP agent runs this way)"
acp=(bin/hub run --agent acp --acp-command "opencode acp" --model mock/mock-model --cwd "$work/project" --timeout 2m --idle-timeout 60s)
"${acp[@]}" --output text "Say hello. MOCK_TEXT" 2>&1 | tee "$out"
grep -q "Hello from the mock model" "$out" || fail "the ACP run did not give the mock's answer"

echo
echo "\$ hub run --agent opencode --output json \"This provider rejects the key. MOCK_401\""
status=0
"${hub[@]}" --output json "This provider rejects the key. MOCK_401" || status=$?
echo "demo: hub exited $status (7 = unavailable: the bin for auth, rate limits and outages)"
[[ $status -eq 7 ]] || fail "hub exited $status, want 7"
echo
echo "demo: all runs gave what they show"
