# Sourced by the scripts: step WHO WHAT COMMAND… prints "WHO: WHAT…" on
# stderr, runs COMMAND, and then "WHO: WHAT: done in Ns", so that a long
# download or build is not a silence. A failing COMMAND fails the caller
# (set -e) with its own status.
step() {
  local who=$1 what=$2 start=$SECONDS
  shift 2
  echo "$who: $what…" >&2
  "$@"
  echo "$who: $what: done in $((SECONDS - start))s" >&2
}
