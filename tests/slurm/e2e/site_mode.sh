#!/usr/bin/env bash
# Site mode: one rdzvd (as a site would run it as a service) in site mode, and the plugin
# configured with mode=site server=... secret_file=...: tasks get RDZV_ENDPOINT = the site rdzvd
# and RDZV_TOKEN = HMAC-SHA256(secret, "llm-rdzv v1\n<uid>\n<rdzv id>") computed by slurmstepd
# (checked here with openssl), join across 3 nodes, no per-step rdzvd starts, and a token
# re-labelled for another uid is refused.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"
rdzvd="$rdzvd_bin"
require_file "$rdzvd"

conf="$cluster_dir/plugstack.conf"
secret="$cluster_dir/site.secret"
cp "$conf" plugstack.orig
site_pid=
cleanup() {
  cp "$work/plugstack.orig" "$conf"
  rm -f "$secret"
  [ -z "$site_pid" ] || { kill "$site_pid" 2>/dev/null; wait "$site_pid" 2>/dev/null; } || true
}
trap cleanup EXIT

(umask 077 && head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$secret")
"$rdzvd" --mode site --site-secret-file "$secret" --listen 172.30.77.1:0 --port-file "$work/site.port" \
  --exit-with-parent --heartbeat-interval 200 --heartbeat-timeout 2000 > site.log 2>&1 &
site_pid=$!
for _ in $(seq 400); do [ -s site.port ] && break; sleep 0.05; done
[ -s site.port ] || { cat site.log >&2; fail "the site rdzvd did not start"; }
port=$(cat site.port)
sed -i "s|\$| mode=site server=lr-ctl:$port secret_file=$secret|" "$conf"

out=$(as_user srun -N3 -n6 --llm-rdzv sh -c 'echo "env $RDZV_ENDPOINT $RDZV_ID $RDZV_TOKEN"; exec "$0"' "$test_client" 2>&1) ||
  { echo "$out" >&2; fail "srun in site mode failed"; }
[ "$(grep -c '^barrier rank=[0-5] ok$' <<<"$out")" -eq 6 ] || { echo "$out" >&2; fail "site-mode rendezvous"; }
read -r _ endpoint id token <<<"$(grep '^env ' <<<"$out" | sort -u)"
[ "$(grep '^env ' <<<"$out" | sort -u | wc -l)" -eq 1 ] || fail "tasks disagree on endpoint/id/token"
[ "$endpoint" = "lr-ctl:$port" ] || fail "RDZV_ENDPOINT $endpoint is not the site rdzvd"
uid=$(id -u "$LLMRDZV_TEST_USER")
hmac=$(printf 'llm-rdzv v1\n%s\n%s' "$uid" "$id" | openssl dgst -sha256 -hmac "$(cat "$secret")" | awk '{print $NF}')
[ "$token" = "v1.$uid.$hmac" ] || fail "RDZV_TOKEN $token is not the site token for uid $uid and id $id"
expect_no_rdzvd 5

# The same MAC claimed for root: refused.
set +e
out=$(as_user srun -N1 -n1 --llm-rdzv sh -c 'export RDZV_TOKEN="v1.0.${RDZV_TOKEN##*.}"; exec "$0"' "$test_client" 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || { echo "$out" >&2; fail "a token re-labelled for uid 0 was accepted"; }
expect_match "$out" 'rdzv-test-client: .*(PERMISSION_DENIED|permission_denied)' "re-labelled token"
trap - EXIT
cleanup
finish
