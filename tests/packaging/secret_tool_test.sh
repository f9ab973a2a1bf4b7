#!/usr/bin/env bash
# llm-rdzv-secret (the configured copy in the build tree): creates a root-only 0600 secret of 64
# hex characters, leaves an existing good one alone, rotates on request, and rejects every bad
# file or argument with a message naming the problem. Needs root (the secret is root-owned).
set -euo pipefail
tool=${1:?usage: secret_tool_test.sh PATH/TO/llm-rdzv-secret}
[ "$(id -u)" -eq 0 ] || { echo "skipped: needs root"; exit 77; }
dir=$(mktemp -d)
# The "run as root" case runs the tool as nobody, from a copy in a directory nobody can reach: the
# checkout, and the build tree with it, may live under a 0700 home such as root's.
public=$(mktemp -d)
chmod 755 "$public"
install -m 755 "$tool" "$public/llm-rdzv-secret"
trap 'rm -rf "$dir" "$public"' EXIT
secret="$dir/site.secret"
source "$(dirname "$0")/expect.sh"


expect 0 "wrote $secret" -- "$tool" --file "$secret"
check "owner, mode, size: $(stat -c '%U:%G %a %s' "$secret")" test "$(stat -c '%U:%G %a %s' "$secret")" = "root:root 600 65"
check "content is not 64 hex characters" grep -Eqx '[0-9a-f]{64}' "$secret"
first=$(cat "$secret")
expect 0 "already exists and is in order" -- "$tool" --file "$secret"
check "an existing secret was replaced" test "$(cat "$secret")" = "$first"
expect 0 "is in order" -- "$tool" --file "$secret" --check
expect 0 "wrote $secret" -- "$tool" --file "$secret" --rotate
check "--rotate kept the old secret" test "$(cat "$secret")" != "$first"
check "temporary file left behind" test -z "$(find "$dir" -name '.site.secret.*')"

chmod 640 "$secret"
expect 1 "has mode 640: group or others may access it" -- "$tool" --file "$secret" --check
expect 1 "has mode 640: group or others may access it" -- "$tool" --file "$secret"
chmod 604 "$secret"
expect 1 "has mode 604: group or others may access it" -- "$tool" --file "$secret" --check
chmod 400 "$secret"  # read-only for root is as private as 0600: the plugin takes it too
expect 0 "is in order" -- "$tool" --file "$secret" --check
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
expect 1 "run as root" -- setpriv --reuid=nobody --regid=nogroup --clear-groups "$public/llm-rdzv-secret" --file "$dir/other.secret"

finish
