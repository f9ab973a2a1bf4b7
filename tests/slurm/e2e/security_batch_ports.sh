#!/usr/bin/env bash
# A second user squats every other port of the range an `sbatch --llm-rdzv` job uses, on the node
# its batch step runs on (issue 39: batch-step ports derived from job and step id let an attacker
# squat the windows of the next job ids and fail the job in 2 s). The batch step's rdzvd port is now
# drawn at random in slurmstepd, like srun's: six jobs in a row all run their script, their batch
# steps' rendezvous work, and their ports differ.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"
impostor="$LLMRDZV_BUILD_DIR/bin/rdzv-impostor"
require_file "$impostor"
attacker=${LLMRDZV_ATTACKER_USER:?the cluster has no attacker user: rerun scripts/slurm/cluster.sh up}

lo=20950 hi=20965
mkdir loot && chown "$attacker" loot && chmod 700 loot
impostors=()
cleanup() { [ ${#impostors[@]} -eq 0 ] || kill "${impostors[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT
for port in $(seq $lo 2 $hi); do
  nsenter --net=/run/netns/lrdzv-n1 setpriv --reuid="$attacker" --regid="$attacker" --init-groups -- \
    "$impostor" --kind raw --listen "0.0.0.0:$port" --loot "loot/raw.$port" > "squat.$port.out" 2>&1 &
  impostors+=($!)
done
for port in $(seq $lo 2 $hi); do
  for _ in $(seq 200); do grep -q '^listening' "squat.$port.out" 2>/dev/null && break; sleep 0.05; done
  grep -q "^listening $port" "squat.$port.out" || { cat "squat.$port.out" >&2; fail "squatter on $port did not start"; }
done

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
distinct=$(printf '%s\n' "${ports[@]}" | sort -u | wc -l)
note "six batch steps drew MASTER_PORTs ${ports[*]}"
[ "$distinct" -ge 2 ] || fail "six batch steps all had MASTER_PORT ${ports[0]}: not drawn at random"
expect_no_rdzvd 5
finish
