#!/usr/bin/env bash
# A second user holds every port of a step's range on its first node with raw listeners that
# accept connections and never answer. The step cannot work; it must fail at once, with the reason
# on both nodes: node 1's tasks get rdzvd's own "could not bind ... on any of the ports" (carried over
# the port pipe, not "rdzvd exited with status 2"), node 2's rank names the mute ports instead of
# waiting out the 30 s connect timeout.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"
lo=20940 hi=20947
start_squatters raw $(seq $lo $hi)

start=$SECONDS
set +e
out=$(as_user srun -N2 -n2 "--llm-rdzv=port=$lo-$hi" "$test_client" 2>&1)
rc=$?
set -e
took=$((SECONDS - start))
note "the step failed in $took s"
[ $rc -ne 0 ] || { echo "$out" >&2; fail "the step worked with every port squatted"; }
expect_match "$out" "rdzvd could not start: --listen: could not bind 0\\.0\\.0\\.0 on any of the ports" "node 1: rdzvd's reason"
if grep -q 'exited with status' <<<"$out"; then echo "$out" >&2; fail "a bare exit status instead of rdzvd's reason"; fi
[ $took -lt 15 ] || { echo "$out" >&2; fail "the failure took $took s"; }

# A rank on node 2 looking for rdzvd in node 1's squatted range (as the step's other ranks do, when
# Slurm lets them run) names the mute ports at once instead of waiting out the 30 s connect timeout.
start=$SECONDS
set +e
out=$(as_user srun -N1 -n1 -w lr-node2 --llm-rdzv=port=20930-20937 sh -c \
  "export RDZV_ENDPOINT=lr-node1:$lo LLM_RDZV_PORT_RANGE=$lo-$hi; exec \"\$0\"" "$test_client" 2>&1)
rc=$?
set -e
took=$((SECONDS - start))
note "the rank gave up in $took s"
[ $rc -ne 0 ] || { echo "$out" >&2; fail "a rank found an rdzvd among the squatters"; }
expect_match "$out" "lr-node1:$lo: accepts TCP connections but never speaks HTTP/2" "node 2: the mute ports named"
[ $took -lt 15 ] || { echo "$out" >&2; fail "giving up took $took s (the connect timeout is 30 s)"; }
expect_no_rdzvd 5
finish
