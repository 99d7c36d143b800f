#!/usr/bin/env bash
# The main job, offline: builds hub, installs the pinned OpenCode CLI, starts
# hub's mock model server on 127.0.0.1, and runs the real OpenCode through
# `hub run` — for people (text) under the default read-only grant, twice
# under --permission workspace-write (a write inside --cwd lands on the
# disk, one outside it does not), for programs (jsonl), and against a
# provider that rejects the API key, to show an error bin.
#
#   bash scripts/demo.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

mkdir -p bin
go build -o bin/hub ./cmd/hub
go build -o bin/mockllm ./cmd/mockllm
bash scripts/install-agents.sh opencode >/dev/null

work=$(mktemp -d)
mock_pid=
cleanup() {
  [[ -n $mock_pid ]] && kill "$mock_pid" 2>/dev/null && wait "$mock_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# Start the mock model server; it prints MOCKLLM_URL=… once it listens.
coproc MOCK { exec bin/mockllm; }
mock_pid=$MOCK_PID
read -r -t 10 line <&"${MOCK[0]}" || { echo "demo: mock server did not start" >&2; exit 1; }
url=${line#MOCKLLM_URL=}
echo "demo: mock model server at $url"

# A private home for OpenCode, and a config naming the mock provider
# (prices in USD per million tokens, so that cost is reported).
export HOME=$work/home XDG_CONFIG_HOME=$work/xdg/config XDG_DATA_HOME=$work/xdg/data \
  XDG_CACHE_HOME=$work/xdg/cache XDG_STATE_HOME=$work/xdg/state
mkdir -p "$HOME" "$XDG_CONFIG_HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME" "$XDG_STATE_HOME" "$work/project"
cat >"$work/opencode.json" <<JSON
{"autoupdate": false, "share": "disabled",
 "model": "mock/mock-model", "small_model": "mock/mock-model",
 "provider": {"mock": {"npm": "@ai-sdk/openai-compatible",
   "options": {"baseURL": "$url/v1", "apiKey": "x"},
   "models": {"mock-model": {"tool_call": true,
     "cost": {"input": 3, "output": 15, "cache_read": 0.3, "cache_write": 3.75},
     "limit": {"context": 128000, "output": 8192}}}}}}
JSON
export OPENCODE_CONFIG=$work/opencode.json OPENCODE_DISABLE_MODELS_FETCH=1
export PATH="$root/.tools/npm/node_modules/.bin:$PATH"

hub=(bin/hub run --agent opencode --model mock/mock-model --cwd "$work/project" --timeout 2m --idle-timeout 60s)

echo
echo "\$ hub run --agent opencode --output text \"Check the shell works, then report. MOCK_TOOL\""
echo "  (the default --permission read-only: the shell is not offered, and a read outside --cwd is denied)"
"${hub[@]}" --output text "Check the shell works, then report. MOCK_TOOL"

notes=$work/project/notes.txt outside=$work/outside.txt
echo
echo "\$ hub run --agent opencode --permission workspace-write --output text \"… MOCK_CALL write {\\\"filePath\\\":\\\"$notes\\\", …}\""
"${hub[@]}" --permission workspace-write --output text "Write the notes. MOCK_CALL write {\"filePath\":\"$notes\",\"content\":\"written by the agent\"}"
echo "demo: $notes holds: $(cat "$notes")"
echo
echo "\$ hub run --agent opencode --permission workspace-write --output text \"… MOCK_CALL write {\\\"filePath\\\":\\\"$outside\\\", …}\""
status=0
"${hub[@]}" --permission workspace-write --output text "Write outside. MOCK_CALL write {\"filePath\":\"$outside\",\"content\":\"x\"}" || status=$?
if [[ -e $outside ]]; then echo "demo: $outside was written: the grant did not hold" >&2; exit 1; fi
echo "demo: hub exited $status (6 = permission_denied), and $outside was not written"
[[ $status -eq 6 ]]

echo
echo "\$ hub run --agent opencode --sandbox copy --permission workspace-write --diff-out change.diff \"… MOCK_CALL write {\\\"filePath\\\":\\\"plan.md\\\", …}\""
echo "  (the agent works in a copy: the change is reported and saved as a diff, and the original is left as it was)"
diff_file=$work/change.diff
"${hub[@]}" --sandbox copy --permission workspace-write --diff-out "$diff_file" --output text \
  "Write the plan. MOCK_CALL write {\"filePath\":\"plan.md\",\"content\":\"1. read the code\\n2. fix the test\\n\"}"
if [[ -e $work/project/plan.md ]]; then echo "demo: the sandboxed write reached the original" >&2; exit 1; fi
cat "$diff_file"
echo
echo "\$ hub apply --cwd project change.diff"
bin/hub apply --cwd "$work/project" "$diff_file"
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
[[ $answer == '{"verdict":"approve","score":7}' ]]

echo
echo "\$ hub run --agent opencode --output jsonl \"Say hello. MOCK_TEXT\""
"${hub[@]}" --output jsonl "Say hello. MOCK_TEXT"

echo
echo "\$ hub run --agent opencode --output json \"This provider rejects the key. MOCK_401\""
status=0
"${hub[@]}" --output json "This provider rejects the key. MOCK_401" || status=$?
echo "demo: hub exited $status (7 = unavailable: the bin for auth, rate limits and outages)"
[[ $status -eq 7 ]]
