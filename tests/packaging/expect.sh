# Shared by the packaging test scripts (sourced): `expect` runs a command and checks its exit
# status and output; `check` records a failed condition; `finish` reports and sets the exit status.
failures=0

# expect STATUS TEXT -- COMMAND...: COMMAND exits with STATUS and its output contains TEXT.
expect() {
  local status=$1 text=$2 out rc=0
  shift 3
  out=$("$@" 2>&1) || rc=$?
  if [ "$rc" -ne "$status" ] || [[ "$out" != *"$text"* ]]; then
    printf 'FAIL: %s\n  expected exit %s and "%s", got exit %s: %s\n' "$*" "$status" "$text" "$rc" "$out"
    failures=$((failures + 1))
  else
    printf 'ok: %s -> %s\n' "$*" "$text"
  fi
}

# check MESSAGE COMMAND...: COMMAND succeeds, else MESSAGE counts as a failure.
check() {
  local message=$1
  shift
  "$@" || { printf 'FAIL: %s\n' "$message"; failures=$((failures + 1)); }
}

finish() {
  [ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
  echo "all checks passed"
}
