#!/usr/bin/env bash
# A second user holds two of the three ports of a step's range on its first node with raw listeners
# that accept and never answer (issue 39, item 4: with MASTER_PORT squatted, rank 0's c10d TCPStore
# failed with EADDRINUSE and the other ranks of a stock PyTorch program talked to the squatter and
# hung 54-120 s). Whichever ports srun draws, a c10d program's step cannot work; every try must end
# at once, and where the attacker holds MASTER_PORT rank 0 is told so before it starts:
# "llm-rdzv: warning: MASTER_PORT N on lr-node1 is taken by a listening socket of uid U (attacker)".
# srun -K (the docs' advice for c10d programs) ends the other node's rank when rank 0 fails.
source "$(dirname "$0")/lib.sh"
python=${LLMRDZV_PYTHON:-}
[ -x "$python" ] || { echo "no project venv python ($python): skipped" >&2; exit 77; }
attacker=${LLMRDZV_ATTACKER_USER:?the cluster has no attacker user: rerun scripts/slurm/cluster.sh up}

lo=20970 hi=20972
squatted=(20970 20971)
start_squatters raw "${squatted[@]}"
attacker_uid=$(id -u "$attacker")

# srun draws rdzvd's base at random: 2 tries in 3 land MASTER_PORT on a squatted port; in the
# third rdzvd walks past both squatted ports onto the free one, MASTER_PORT (a range this small has
# no other place for it), and rank 0's store fails on its own step's rdzvd, unwarned: no other
# user's doing, but the step still ends at once.
master_cases=0
for attempt in $(seq 10); do
  start=$SECONDS
  set +e
  out=$(as_user srun -K -N2 -n2 "--llm-rdzv=port=$lo-$hi" "$python" "$e2e_dir/allreduce.py" 2>&1)
  rc=$?
  set -e
  took=$((SECONDS - start))
  [ $rc -ne 0 ] || { echo "$out" >&2; fail "a step worked with two of its three ports squatted"; }
  [ $took -lt 20 ] || { echo "$out" >&2; fail "try $attempt took $took s to fail"; }
  expect_match "$out" "EADDRINUSE" "try $attempt: rank 0's store could not listen"
  if ! grep -q 'warning: MASTER_PORT' <<<"$out"; then
    note "try $attempt: the step's rdzvd took MASTER_PORT 20972; the step ended in $took s"
    continue
  fi
  expect_match "$out" "^llm-rdzv: warning: MASTER_PORT 2097[01] on lr-node1 is taken by a listening socket of uid $attacker_uid \\($attacker\\)" \
    "try $attempt: the warning names the port and its holder"
  master_cases=$((master_cases + 1))
  note "try $attempt: MASTER_PORT squatted, rank 0 warned, the step ended in $took s"
  [ $master_cases -ge 2 ] && break
done
[ $master_cases -ge 1 ] || fail "10 tries and srun never drew a squatted MASTER_PORT"
stop_squatters
expect_no_rdzvd 5

# With the squatters gone the same range works.
out=$(as_user srun -N2 -n2 "--llm-rdzv=port=$lo-$hi" "$python" "$e2e_dir/allreduce.py" 2>&1) ||
  { echo "$out" >&2; fail "the step failed once the ports were free"; }
[ "$(grep -c '^allreduce rank=[01] world=2 sum=3$' <<<"$out")" -eq 2 ] || { echo "$out" >&2; fail "all-reduce"; }
finish
