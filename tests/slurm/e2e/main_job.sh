#!/usr/bin/env bash
# The README's main job (scripts/main-job.sh) on the test cluster, shortened: it trains a BPE
# tokenizer on the Python documentation (trainer tokenizer), then srun --llm-rdzv trains the
# embedded default (etc/trainer/default.yaml on the same text) on it for a few steps on 2 nodes,
# prints progress, eval loss, perplexity, bits per byte and a sample, ends with the TensorBoard command
# line for the event files it wrote, and leaves an HF model directory owned by root (the job's user
# goes with the cluster), with the cluster left up.
source "$(dirname "$0")/lib.sh"
root=$(cd "$e2e_dir/../../.." && pwd)
[ -x "$LLMRDZV_BUILD_DIR/bin/trainer" ] || { echo "skipped: no trainer"; exit 77; }
[ "$LLMRDZV_BUILD_DIR" -ef "$root/build" ] || { echo "skipped: main-job.sh runs build/, not $LLMRDZV_BUILD_DIR"; exit 77; }
out="$work/main-job"
log=$("$root/scripts/main-job.sh" --prepared --max_steps 6 --output_dir "$out" -- \
  --max_eval_samples 64 --logging_steps 2 2>&1) || { echo "$log" >&2; fail "main-job.sh failed"; }
expect_match "$log" 'a byte-level BPE tokenizer \(4096 tokens\) trained on the Python docs' "the tokenizer step"
expect_match "$log" 'trainer tokenizer: 3839 merges, 4096 tokens' "a 4096-token vocabulary"
expect_match "$log" "tokenizer: GPT-2 byte-level BPE from --tokenizer_name '$out-tokenizer'" "training on the trained tokenizer"
expect_match "$log" 'srun -N2 -n2 --llm-rdzv trainer' "the job ran through srun"
expect_match "$log" 'step 6/6 \| loss' "progress"
expect_match "$log" 'eval_loss [0-9.]+, perplexity [0-9.]+, [0-9.]+ bits per byte' "eval loss, perplexity and bits per byte"
expect_match "$log" 'a sample from the trained model' "the sample"
for f in config.json model.safetensors vocab.json merges.txt tokenizer.json tokenizer_config.json metrics.jsonl all_results.json; do
  [ -f "$out/$f" ] || fail "no $f in the model directory"
done
[ "$(stat -c %u "$out/model.safetensors")" = 0 ] || fail "the outputs are not root's after the run"
# The last line: how to look at the curves, naming the runs/ directory that holds the event file.
last=$(tail -n1 <<<"$log")
tensorboard_line='^== training curves: \.venv-tools/bin/tensorboard --logdir (/[^ ]+)   \(then open http://localhost:6006\)$'
[[ "$last" =~ $tensorboard_line ]] || { printf '%s\n' "$log" >&2; fail "the last line is not the TensorBoard command: '$last'"; }
logdir=${BASH_REMATCH[1]}
[ "$logdir" = "$out/runs" ] || fail "the TensorBoard line names $logdir, not $out/runs"
[ -n "$(find "$logdir" -type f -name 'events.out.tfevents.*' -size +0)" ] || fail "no event file under $logdir"
scripts_cluster="$root/scripts/slurm/cluster.sh"
"$scripts_cluster" status >/dev/null || fail "main-job.sh took down the cluster it did not bring up"
finish
