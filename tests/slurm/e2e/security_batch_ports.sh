#!/usr/bin/env bash
# A second user squats every other port of the range an `sbatch --llm-rdzv` job uses, on the node
# its batch step runs on (issue 39: batch-step ports derived from job and step id let an attacker
# squat the windows of the next job ids and fail the job in 2 s). The batch step's rdzvd port is now
# drawn at random in slurmstepd, like srun's, and drawn again while MASTER_PORT is taken there: six
# jobs in a row all run their script, their batch steps' rendezvous work, their MASTER_PORTs are
# free ones, and their ports differ.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"
lo=20950 hi=20965
start_squatters raw $(seq $lo 2 $hi)

cat > job.sh <<JOB
#!/bin/bash
#SBATCH -N1 -w lr-node1 --llm-rdzv=port=$lo-$hi
echo "script ran endpoint=\$RDZV_ENDPOINT master_port=\$MASTER_PORT"
exec "$test_client"
JOB
# One after another: six steps at once on one node would crowd the 8 free ports of this small range
# with each other's rdzvds and MASTER_PORTs, which is no attack.
jobs=()
for _ in $(seq 6); do
  jobs+=("$(job_of "$(as_user sbatch --parsable -o "$work/job.%j.out" job.sh)")")
  wait_for_job "${jobs[-1]}" 120
done
ports=()
for job in "${jobs[@]}"; do
  out=$(cat "job.$job.out")
  expect_match "$out" '^script ran endpoint=lr-node1:[0-9]+ master_port=[0-9]+$' "job $job's script"
  expect_match "$out" '^barrier rank=0 ok$' "job $job's batch-step rendezvous"
  ports+=("$(grep -Eo 'master_port=[0-9]+' <<<"$out" | cut -d= -f2)")
done
for port in "${ports[@]}"; do
  [ $(((port - lo) % 2)) -eq 1 ] || fail "a batch step kept the squatted MASTER_PORT $port"
done
distinct=$(printf '%s\n' "${ports[@]}" | sort -u | wc -l)
note "six batch steps drew MASTER_PORTs ${ports[*]}"
[ "$distinct" -ge 2 ] || fail "six batch steps all had MASTER_PORT ${ports[0]}: not drawn at random"
expect_no_rdzvd 5
finish
