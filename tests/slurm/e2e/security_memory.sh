#!/usr/bin/env bash
# A second user floods a victim step's rdzvd from another node with 48 concurrent 63 MiB Set calls
# carrying a forged ticket (issue 39: they took rdzvd from 20 MB to 1.89 GB). rdzvd refuses them
# from their headers: its RSS stays within 32 MiB of where it was, and the victim's step forms its
# rendezvous afterwards. The same user's tokenless `rdzvctl ping` learns the daemon's version and
# mode but no rendezvous id or member count, and a tokenless `rdzvctl list` is refused. Then the
# same user holds 600 idle connections from the daemon's node (told apart by uid) and 600 from the
# victim's other node (told apart only by address, which the victim's rank there shares, joined and
# waiting): rdzvd keeps 256 of each (max_unauthenticated_per_peer) and shuts the older ones down,
# and the rank's authenticated connection survives the flood from its own address.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"
impostor="$LLMRDZV_BUILD_DIR/bin/rdzv-impostor"
rdzvctl="$LLMRDZV_BUILD_DIR/bin/rdzvctl"
require_file "$impostor"
require_file "$rdzvctl"
attacker=${LLMRDZV_ATTACKER_USER:?the cluster has no attacker user: rerun scripts/slurm/cluster.sh up}
as_attacker_on() { local node=$1; shift; nsenter --net="/run/netns/lrdzv-n$node" setpriv --reuid="$attacker" --regid="$attacker" --init-groups -- "$@"; }

# The victim's tasks say where their rdzvd is; rank 1 (node 2) joins at once and waits in the
# rendezvous, rank 0 waits for the floods to end before it joins.
as_user srun -N2 -n2 -w lr-node1,lr-node2 --llm-rdzv sh -c \
  'echo "$RDZV_ENDPOINT $RDZV_ID $SLURM_JOB_ID" > "ep.$SLURM_PROCID"
   [ "$SLURM_PROCID" = 0 ] && while [ ! -e go ]; do sleep 0.1; done; exec "$0"' \
  "$test_client" > victim.out 2>&1 &
victim=$!
for _ in $(seq 300); do [ -s ep.0 ] && break; sleep 0.1; done
[ -s ep.0 ] || { kill $victim; cat victim.out >&2; fail "the victim step did not start"; }
read -r endpoint rdzv_id job < ep.0
trap 'scancel "$job" 2>/dev/null || true' EXIT
pid=$(cluster_rdzvd_pids)
[ "$(wc -w <<<"$pid")" -eq 1 ] || fail "not one rdzvd in the cluster but '$pid'"
rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }
# Rank 1 in the rendezvous before any flood (its Join creates it): on a loaded machine its process
# can start late, and a connection that has made no call yet counts as one more of node 2's.
for _ in $(seq 300); do
  grep -qs "rdzv=$rdzv_id created" "$cluster_dir"/rdzvd-logs/rdzvd-"$job".0-*.log && break
  sleep 0.1
done
grep -qs "rdzv=$rdzv_id created" "$cluster_dir"/rdzvd-logs/rdzvd-"$job".0-*.log || fail "rank 1 did not join"
idle=$(rss)

# Tokenless, as the attacker: the daemon answers, and says nothing about its rendezvous.
ping=$(as_attacker_on 2 "$rdzvctl" --endpoint "$endpoint" ping 2>&1) || { echo "$ping" >&2; fail "tokenless ping"; }
expect_match "$ping" "^rdzvd $endpoint answers: version=[^ ]+ mode=step \\(without --id and --token" "tokenless ping"
# The id as a whole ("1.0" must not match inside "version=0.1.0").
names_id() { grep -Eq "(^|[^0-9.])${rdzv_id//./\\.}([^0-9.]|\$)" <<<"$1"; }
if names_id "$ping" || grep -q 'members=' <<<"$ping"; then fail "a tokenless ping revealed the rendezvous: $ping"; fi
set +e
list=$(as_attacker_on 2 "$rdzvctl" --endpoint "$endpoint" list 2>&1)
rc=$?
set -e
[ $rc -eq 2 ] || { echo "$list" >&2; fail "a tokenless list exited $rc, not 2"; }
expect_match "$list" "list needs a rendezvous id and its token" "tokenless list refused"
if names_id "$list"; then fail "a tokenless list revealed the rendezvous id"; fi

peak=$idle
( while kill -0 "$pid" 2>/dev/null; do rss; sleep 0.01; done ) > rss.samples &
sampler=$!
for metadata in no yes; do
  flood=$(as_attacker_on 2 "$impostor" --kind flood --target "$endpoint" --id "$rdzv_id" --calls 48 --mib 63 \
            --forged-metadata "$metadata" 2>&1) || { echo "$flood" >&2; fail "the flood did not run"; }
  note "flood (forged metadata: $metadata): $flood"
  # gRPC's PERMISSION_DENIED is 7: every call, refused by the gate.
  expect_match "$flood" "^code 7 count 48 first: rdzvd-gate version=" "all 48 forged calls refused from their headers"
done
kill "$sampler" 2>/dev/null || true
wait "$sampler" 2>/dev/null || true
peak=$(sort -n rss.samples | tail -n1)
note "rdzvd RSS: idle ${idle} KiB, peak under 96 forged 63 MiB Set calls ${peak} KiB"
[ "$peak" -lt $((idle + 32768)) ] || fail "rdzvd grew from ${idle} KiB to ${peak} KiB under the flood"

idlers=()
trap 'kill "${idlers[@]}" 2>/dev/null || true; scancel "$job" 2>/dev/null || true' EXIT
before_idle=$(rss)
for node in 1 2; do
  as_attacker_on "$node" "$impostor" --kind idle --target "$endpoint" --count 600 > "idle.$node" 2> "idle.$node.err" &
  idlers+=($!)
  for _ in $(seq 300); do [ -s "idle.$node" ] && break; sleep 0.1; done
  [ -s "idle.$node" ] || { cat "idle.$node.err" >&2; fail "the idle flood from node $node did not report"; }
  grep -Eq "^held 256 closed 344 \\(the oldest 344 in a row\\)$" "idle.$node" || {
    cat "idle.$node" "$cluster_dir"/rdzvd-logs/rdzvd-"$job".0-*.log >&2
    fail "node $node: not 256 idle connections kept and the older 344 shut down"
  }
done
held_idle=$(rss)
note "rdzvd RSS: ${before_idle} KiB before, ${held_idle} KiB holding 2 x 256 idle connections of another user"
[ "$held_idle" -lt $((before_idle + 32768)) ] || fail "rdzvd grew from ${before_idle} KiB to ${held_idle} KiB under idle connections"

touch go
wait "$victim" || { cat victim.out >&2; fail "the victim step failed after the flood"; }
kill "${idlers[@]}" 2>/dev/null || true
trap - EXIT
[ "$(grep -c '^barrier rank=[01] ok$' victim.out)" -eq 2 ] || { cat victim.out >&2; fail "victim barrier"; }
expect_no_rdzvd 5
finish
