#!/usr/bin/env bash
# A token from one step cannot join another step's rendezvous: while step A holds its
# rendezvous, a task of step B presents A's endpoint and id with B's own token and is refused
# (PERMISSION_DENIED); with A's id and A's token on A's endpoint it is not refused for the token.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"

as_user srun -N2 -n2 --llm-rdzv sh -c 'env | grep -E "^(RDZV_|LLM_RDZV_)" > a.env.$SLURM_PROCID; exec "$0" --hold-ms 12000' "$test_client" > a.out 2>&1 &
a_pid=$!
for _ in $(seq 300); do grep -q "^barrier rank=1 ok" a.out 2>/dev/null && break; sleep 0.1; done
grep -q '^barrier rank=1 ok' a.out || { cat a.out >&2; fail "step A did not come up"; }

set +e
out=$(as_user srun -N1 -n1 --llm-rdzv sh -c 'export $(grep -E "^(RDZV_ENDPOINT|RDZV_ID|LLM_RDZV_PORT_RANGE)=" a.env.0 | xargs); export WORLD_SIZE=2 LLM_RDZV_MIN_WORLD=2 LLM_RDZV_MAX_WORLD=2 LLM_RDZV_TIMEOUT=5; exec "$0"' "$test_client" 2>&1)
rc=$?
set -e
[ $rc -ne 0 ] || { echo "$out" >&2; fail "step B joined step A's rendezvous with its own token"; }
expect_match "$out" 'rdzv-test-client: .*(PERMISSION_DENIED|permission_denied)' "step B's refusal"
wait "$a_pid" || { cat a.out >&2; fail "step A failed"; }
[ "$(grep -c '^left rank=[01]$' a.out)" -eq 2 ] || { cat a.out >&2; fail "step A was disturbed"; }
expect_no_rdzvd 5
finish
