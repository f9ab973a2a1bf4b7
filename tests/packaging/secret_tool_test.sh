#!/usr/bin/env bash
# llm-rdzv-secret (the configured copy in the build tree): creates a root-only 0600 secret of 64
# hex characters, leaves an existing good one alone, rotates on request, and rejects every bad
# file or argument with a message naming the problem. Needs root (the secret is root-owned).
set -euo pipefail
tool=${1:?usage: secret_tool_test.sh PATH/TO/llm-rdzv-secret}
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root"; exit 77; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
secret="$dir/site.secret"
failures=0

# expect STATUS TEXT -- COMMAND...: the command exits with STATUS and its output contains TEXT.
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

expect 0 "wrote $secret" -- "$tool" --file "$secret"
[ "$(stat -c '%U:%G %a %s' "$secret")" = "root:root 600 65" ] || { echo "FAIL: owner/mode/size $(stat -c '%U:%G %a %s' "$secret")"; failures=$((failures + 1)); }
grep -Eqx '[0-9a-f]{64}' "$secret" || { echo "FAIL: content is not 64 hex characters"; failures=$((failures + 1)); }
first=$(cat "$secret")
expect 0 "already exists and is in order" -- "$tool" --file "$secret"
[ "$(cat "$secret")" = "$first" ] || { echo "FAIL: an existing secret was replaced"; failures=$((failures + 1)); }
expect 0 "is in order" -- "$tool" --file "$secret" --check
expect 0 "wrote $secret" -- "$tool" --file "$secret" --rotate
[ "$(cat "$secret")" != "$first" ] || { echo "FAIL: --rotate kept the old secret"; failures=$((failures + 1)); }
[ -z "$(find "$dir" -name '.site.secret.*')" ] || { echo "FAIL: temporary file left behind"; failures=$((failures + 1)); }

chmod 640 "$secret"
expect 1 "has mode 640, expected 600" -- "$tool" --file "$secret" --check
expect 1 "has mode 640, expected 600" -- "$tool" --file "$secret"
chmod 600 "$secret"; chown nobody "$secret"
expect 1 "is not owned by root" -- "$tool" --file "$secret" --check
chown root "$secret"; : >"$secret"
expect 1 "is empty" -- "$tool" --file "$secret" --check
ln -s "$secret" "$dir/link"
expect 1 "is not a regular file" -- "$tool" --file "$dir/link" --check
expect 1 "does not exist" -- "$tool" --file "$dir/missing" --check
expect 1 "directory $dir/nodir does not exist" -- "$tool" --file "$dir/nodir/site.secret"
expect 1 "is not an absolute path" -- "$tool" --file relative.secret
expect 1 "unknown argument '--bogus'" -- "$tool" --bogus
expect 1 "--file needs a path" -- "$tool" --file
expect 1 "run as root" -- setpriv --reuid=nobody --regid=nogroup --clear-groups "$tool" --file "$dir/other.secret"

[ "$failures" -eq 0 ] || { echo "$failures check(s) failed"; exit 1; }
echo "all checks passed"
