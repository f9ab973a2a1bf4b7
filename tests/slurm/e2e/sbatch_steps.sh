#!/usr/bin/env bash
# `#SBATCH --llm-rdzv` applies to every step: the batch step and two sequential steps each get
# their own rendezvous id and token; then two concurrent steps on the same nodes both complete
# their rendezvous without meeting each other.
source "$(dirname "$0")/lib.sh"
require_file "$test_client"

cat > job.sh <<JOB
#!/bin/bash
#SBATCH -N3 -n12 --llm-rdzv=timeout=60
#SBATCH -o $work/job.out
echo "batch id=\$RDZV_ID world=\$WORLD_SIZE master=\$MASTER_ADDR token=\${#RDZV_TOKEN}"
for step in a b; do
  srun -N3 -n6 sh -c 'echo "step=\$1 id=\$RDZV_ID token=\$RDZV_TOKEN timeout=\$LLM_RDZV_TIMEOUT"; exec "\$0"' "$test_client" "\$step" || echo "step \$step failed"
done
srun -N3 -n6 sh -c 'echo "step=c id=\$RDZV_ID"; exec "\$0" --hold-ms 1000' "$test_client" > c.out 2>&1 &
srun -N3 -n6 sh -c 'echo "step=d id=\$RDZV_ID"; exec "\$0" --hold-ms 1000' "$test_client" > d.out 2>&1 &
wait
echo done
JOB
job=$(job_of "$(as_user sbatch --parsable job.sh)")
wait_for_job "$job" 120
out=$(cat job.out)
expect_match "$out" "^batch id=$job.batch world=1 master=lr-node1 token=64$" "batch step env"
expect_match "$out" '^done$' "job end"
grep -q 'failed' <<<"$out" && { echo "$out" >&2; fail "a step failed"; }
for step in a b; do
  [ "$(grep -c "^step=$step id=$job\\.[0-9]* token=[0-9a-f]\\{64\\} timeout=60$" <<<"$out")" -eq 6 ] || { echo "$out" >&2; fail "step $step env"; }
done
ids=$(grep -Eo '^step=[ab] id=[^ ]+' <<<"$out" | sort -u | wc -l)
tokens=$(grep -Eo '^step=[ab] .*token=[0-9a-f]+' <<<"$out" | sed 's/.*token=//' | sort -u | wc -l)
[ "$ids" -eq 2 ] && [ "$tokens" -eq 2 ] || fail "steps a and b share an id or token ($ids ids, $tokens tokens)"
[ "$(grep -c '^barrier rank=[0-5] ok$' <<<"$out")" -eq 12 ] || { echo "$out" >&2; fail "sequential steps' barriers"; }

for step in c d; do
  s=$(cat "$step.out")
  ranks=$(grep -Eo '^rank=[0-9]+ world=6 ' <<<"$s" | cut -d' ' -f1 | sort -u | wc -l)
  [ "$ranks" -eq 6 ] || { echo "$s" >&2; fail "concurrent step $step: $ranks distinct ranks in a world of 6"; }
  [ "$(grep -c '^barrier rank=[0-5] ok$' <<<"$s")" -eq 6 ] || { echo "$s" >&2; fail "concurrent step $step barrier"; }
done
[ "$(grep -ho '^step=[cd] id=[^ ]*' c.out d.out | sort -u | wc -l)" -eq 2 ] || fail "concurrent steps share an id"
expect_no_rdzvd 5
finish
