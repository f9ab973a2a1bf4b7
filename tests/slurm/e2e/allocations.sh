#!/usr/bin/env bash
# A bare option on an allocation: `#SBATCH --llm-rdzv` and `salloc --llm-rdzv` (which Slurm hands
# to the steps as "(null)") turn it on with defaults for the batch step, salloc's interactive
# step (LaunchParameters=use_interactive_step) and the steps inside.
source "$(dirname "$0")/lib.sh"

cat > job.sh <<'JOB'
#!/bin/bash
#SBATCH -N2 -n2 --llm-rdzv
echo "batch id=$RDZV_ID world=$WORLD_SIZE timeout=$LLM_RDZV_TIMEOUT"
srun sh -c 'echo "step id=$RDZV_ID world=$WORLD_SIZE rank=$RANK"'
JOB
job=$(job_of "$(as_user sbatch --parsable -o "$work/job.out" job.sh)")
wait_for_job "$job"
out=$(cat job.out)
expect_match "$out" "^batch id=$job.batch world=1 timeout=300$" "bare #SBATCH --llm-rdzv, batch step"
[ "$(grep -c "^step id=$job.0 world=2 rank=[01]$" <<<"$out")" -eq 2 ] || { echo "$out" >&2; fail "bare #SBATCH --llm-rdzv, step 0"; }

# salloc without a command runs the interactive step ($SHELL on a pty; `script` provides one).
# Lines carry the shell's prompt in front; srun gets /dev/null so the shell keeps its "exit".
printf '%s\n' 'echo "inter id=$RDZV_ID world=$WORLD_SIZE tok=${#RDZV_TOKEN}"' \
  'srun sh -c "echo step id=\$RDZV_ID world=\$WORLD_SIZE" < /dev/null' 'exit' > session.txt
out=$(as_user env SHELL=/bin/sh timeout 60 script -qec 'salloc -N2 --llm-rdzv' /dev/null < session.txt 2>&1 | tr -d '\r') || true
expect_match "$out" '(^|\$ )inter id=[0-9]+\.interactive world=1 tok=64$' "salloc interactive step"
[ "$(grep -Ec '(^|\$ )step id=[0-9]+\.0 world=2$' <<<"$out")" -eq 2 ] || { echo "$out" >&2; fail "step inside salloc"; }
expect_no_rdzvd 5
finish
