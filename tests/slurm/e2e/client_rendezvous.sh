#!/usr/bin/env bash
# `srun -N3 -n6 --llm-rdzv` of the client test program: each task joins the step's rdzvd through
# the client library, gets a distinct rank 0..5 in a world of 6 with one master, and passes a
# store barrier. rdzvd ran as the job's user (its log file is created by it, after the switch)
# and is gone after the step, but not before the ranks of every node have left. An elastic
# nodes=MIN:MAX step forms its round with the tasks it has.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"

out=$(as_user srun -N3 -n6 --llm-rdzv sh -c 'echo "job=$SLURM_JOB_ID.$SLURM_STEP_ID"; exec "$0"' "$test_client" 2>&1) ||
  { echo "$out" >&2; fail "srun failed"; }
ranks=$(grep -Eo '^rank=[0-9]+ world=6 ' <<<"$out" | cut -d' ' -f1 | sort -t= -k2 -n | tr '\n' ' ')
[ "$ranks" = "rank=0 rank=1 rank=2 rank=3 rank=4 rank=5 " ] || { echo "$out" >&2; fail "ranks: $ranks"; }
[ "$(grep -Eo 'master=[^ ]+' <<<"$out" | sort -u | wc -l)" -eq 1 ] || fail "more than one master"
[ "$(grep -c '^barrier rank=[0-5] ok$' <<<"$out")" -eq 6 ] || { echo "$out" >&2; fail "barrier"; }
step=$(grep -Eo '^job=[0-9]+\.[0-9]+' <<<"$out" | sort -u | cut -d= -f2)
logs=("$cluster_dir"/rdzvd-logs/rdzvd-"$step"-*.log)
[ ${#logs[@]} -eq 1 ] && [ -f "${logs[0]}" ] || fail "no single rdzvd log rdzvd-$step-<pid>-<rand>.log: ${logs[*]}"
log=${logs[0]}
[ "$(stat -c %U "$log")" = "$LLMRDZV_TEST_USER" ] || fail "rdzvd log owned by $(stat -c %U "$log"), not the job's user"
expect_no_rdzvd 5

# rdzvd lives as long as the step's ranks on every node, not just its own node's: the first
# node's ranks leave at once, the second node's hold their session 5 s (longer than a heartbeat
# timeout plus the old 2 s grace) and then leave cleanly. Slurm kills the step's processes on a
# node right after its last task, so rdzvd must be kept alive before that, not in the step's exit.
out=$(as_user srun -N2 -n2 --llm-rdzv sh -c 'if [ "$SLURM_NODEID" = 1 ]; then exec "$0" --hold-ms 5000; fi; exec "$0"' \
  "$test_client" 2>&1) || { echo "$out" >&2; fail "a rank on the second node lost rdzvd after the first node's ranks ended"; }
[ "$(grep -c '^left rank=[01]$' <<<"$out")" -eq 2 ] || { echo "$out" >&2; fail "not every rank left cleanly"; }
expect_no_rdzvd 5

# Elastic: nodes=1:3 with 2 tasks per node lets 2..6 participants form a round; the 4 tasks of
# this step complete it after rdzvd's last call, as a world of 4.
out=$(as_user srun -N2 -n4 --ntasks-per-node=2 --llm-rdzv=nodes=1:3 "$test_client" 2>&1) || { echo "$out" >&2; fail "elastic srun failed"; }
ranks=$(grep -Eo '^rank=[0-9]+ world=4 ' <<<"$out" | cut -d' ' -f1 | sort -t= -k2 -n | tr '\n' ' ')
[ "$ranks" = "rank=0 rank=1 rank=2 rank=3 " ] || { echo "$out" >&2; fail "elastic ranks: $ranks"; }
expect_no_rdzvd 5
finish
