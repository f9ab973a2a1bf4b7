# Shared by the trainer end-to-end tests (sourced after lib.sh): the trainer binary (the test skips
# without it), a small corpus the test user can read, and the tiny model those tests train.
trainer="$LLMRDZV_BUILD_DIR/bin/trainer"
python=${LLMRDZV_PYTHON:-python3}
[ -x "$trainer" ] || { echo "skipped: no trainer at $trainer"; exit 77; }

mkdir corpus
for page in tutorial/introduction tutorial/controlflow tutorial/datastructures tutorial/modules; do
  cp "/usr/share/doc/python3.11/html/_sources/$page.rst.txt" corpus/
done
chown -R "$LLMRDZV_TEST_USER" corpus
# shellcheck disable=SC2034  # used by the sourcing test
tiny_training=(--do_train --train_file "$work/corpus" --validation_split_percentage 0 --token_cache_dir "$work/cache"
  --config_overrides n_layer=2,n_head=2,n_embd=32,n_positions=64,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0
  --block_size 32 --gradient_accumulation_steps 2 --learning_rate 3e-3 --warmup_steps 2
  --logging_steps 1 --threads 1 --seed 4)

# kill_rank3.sh STEP: a task wrapper. Rank 3 runs its command in the background and SIGKILLs it once
# rank 0's $OUT/metrics.jsonl reports step STEP (then exits 0, so Slurm keeps the step going, as a
# node that lost one process would); every other rank execs its command.
cat > kill_rank3.sh <<'RUN'
#!/bin/bash
at_step=$1; shift
if [ "$SLURM_PROCID" = 3 ]; then
  "$@" & pid=$!
  for _ in $(seq 2400); do
    step=$(tail -n1 "$OUT/metrics.jsonl" 2>/dev/null | grep -Eo '"step": ?[0-9]+' | grep -Eo '[0-9]+$' || true)
    [ -n "$step" ] && [ "$step" -ge "$at_step" ] && break
    sleep 0.05
  done
  echo "killing rank 3 at step $step"
  kill -9 $pid
  wait $pid
  exit 0
fi
exec "$@"
RUN
chmod 755 kill_rank3.sh
