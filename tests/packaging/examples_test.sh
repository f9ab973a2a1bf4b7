#!/usr/bin/env bash
# Runs one sbatch script of examples/ in the test Slurm cluster (scripts/slurm/cluster.sh, the
# slurm_cluster fixture) as the cluster's unprivileged user, on a tiny configuration, and checks what
# it leaves behind. Skips (77) when the cluster, the trainer or the venv python is missing.
#   examples_test.sh NAME        NAME: gpt2-from-scratch | finetune-hf-gpt2 | finetune-hub |
#                                      finetune-opt-offload | cpu-offload | elastic | pytorch-ddp
# Needs LLMRDZV_BUILD_DIR (the build holding bin/trainer) and LLMRDZV_PYTHON (the project venv).
set -euo pipefail
name=${1:?usage: examples_test.sh NAME}
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${LLMRDZV_BUILD_DIR:?set LLMRDZV_BUILD_DIR}
python=${LLMRDZV_PYTHON:?set LLMRDZV_PYTHON}
cluster=${LLMRDZV_CLUSTER_DIR:-/run/llm-rdzv-slurm}

skip() { echo "skipped: $*"; exit 77; }
fail() { echo "FAIL($name): $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || skip "needs root (the cluster runs jobs as its test user)"
[ -f "$cluster/env" ] || skip "no Slurm cluster at $cluster"
# shellcheck disable=SC1091
source "$cluster/env"
[ -x "$python" ] || skip "no venv python at $python"
[ "$name" = pytorch-ddp ] || [ -x "$build/bin/trainer" ] || skip "no trainer at $build/bin/trainer"

work=$(mktemp -d "$cluster/work/example-$name.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp "$root/examples/$name.sbatch" "$root/examples/ddp_train.py" "$work/"

# A small corpus (three pages of the Python docs) and a model small enough for a few quick steps.
mkdir "$work/corpus"
for page in tutorial/introduction tutorial/controlflow tutorial/datastructures; do
  cp "/usr/share/doc/python3.11/html/_sources/$page.rst.txt" "$work/corpus/"
done
# Three documents: a 34% validation split holds out the third.
tiny="--max_steps 4 --config_overrides n_layer=1,n_head=2,n_embd=32,n_positions=64 --block_size 32 --validation_split_percentage 34"
tiny="$tiny --per_device_train_batch_size 2 --per_device_eval_batch_size 2 --max_eval_samples 8"
tiny="$tiny --logging_steps 1 --eval_steps 0 --save_steps 2 --threads 1"
chown -R "$LLMRDZV_TEST_USER" "$work"
chmod 755 "$work"

# submit [VAR=VALUE...]: sbatch -W the example on two nodes with one task each; its output in $out.
submit() {
  local rc=0
  setpriv --reuid="$LLMRDZV_TEST_USER" --regid="$LLMRDZV_TEST_USER" --init-groups -- \
    env -C "$work" HOME="$work" TRAINER="$build/bin/trainer" CONFIG="$root/etc/trainer/default.yaml" \
        CORPUS="$work/corpus" OUT="$work/out" PYTHON="$python" OMP_NUM_THREADS=1 "$@" \
    sbatch -W -N2 --ntasks-per-node=1 --time=10 -o "$work/job.out" "$work/$name.sbatch" >/dev/null || rc=$?
  out=$(cat "$work/job.out")
  [ "$rc" -eq 0 ] || { printf '%s\n' "$out" >&2; fail "the job failed (sbatch -W exit $rc)"; }
}

expect() {
  grep -Eq -- "$1" <<<"$out" || { printf '%s\n' "$out" >&2; fail "no line matching /$1/"; }
}

hf_model_loads() {
  [ -f "$work/out/config.json" ] && [ -f "$work/out/model.safetensors" ] || fail "no HF model in the output directory"
  "$python" -c 'import sys, transformers; transformers.AutoModelForCausalLM.from_pretrained(sys.argv[1])' \
    "$work/out" || fail "transformers cannot load the trained model"
}

# The optimizer state really was offloaded and sharded: each rank's checkpoint-4 holds its own
# shard of the fp32 master weights and moments, about half of the model each.
offloaded_in_two_shards() {
  "$python" - "$work/out" <<'PY' || fail "the checkpoint does not hold two offloaded optimizer shards"
import sys
from safetensors import safe_open
out = sys.argv[1]
shards = []
for part in (f"{out}/checkpoint-4", f"{out}/rank-1/checkpoint-4"):
    with safe_open(f"{part}/optimizer.safetensors", "pt") as f:
        keys = set(f.keys())
        assert {"offload.master", "offload.exp_avg", "offload.exp_avg_sq", "offload.layout"} <= keys, keys
        layout = f.get_tensor("offload.layout").tolist()  # total, world, rank, shard size
        shards.append(layout)
        assert f.get_tensor("offload.master").numel() == layout[3]
assert [s[1] for s in shards] == [2, 2] and [s[2] for s in shards] == [0, 1], shards
assert shards[0][3] == (shards[0][0] + 1) // 2, shards
print(f"offload shards: {shards}", file=sys.stderr)
PY
}

case "$name" in
  pytorch-ddp)
    submit
    [ "$(grep -c '^rank [01]/2 on lr-node[0-9]: final loss' <<<"$out")" -eq 2 ] || { printf '%s\n' "$out" >&2; fail "two ranks"; }
    expect '^world 2: parameters in sync on all ranks'
    ;;
  gpt2-from-scratch)
    submit EXTRA_ARGS="$tiny"
    expect 'perplexity'
    hf_model_loads
    ;;
  cpu-offload)
    submit EXTRA_ARGS="$tiny --per_device_train_batch_size 1"
    expect 'perplexity'
    hf_model_loads
    offloaded_in_two_shards
    ;;
  finetune-hf-gpt2)
    # A tiny random GPT-2 saved by transformers stands in for a downloaded checkpoint, with a
    # GPT-2 byte-level BPE tokenizer of its own next to it (vocab.json + merges.txt, as the example
    # asks): the 256 bytes and end-of-text, no merges.
    "$python" - "$work/base" "$root/tests/trainer/tokenizer" <<'PY'
import json, os, sys, transformers
sys.path.insert(0, sys.argv[2])
from hf_tokenizer_oracle import bytes_to_unicode  # GPT-2's byte map, as the tokenizer tests use it
config = transformers.GPT2Config(vocab_size=257, n_positions=64, n_embd=32, n_layer=1, n_head=2,
                                 bos_token_id=256, eos_token_id=256)
transformers.GPT2LMHeadModel(config).save_pretrained(sys.argv[1])
chars = bytes_to_unicode()
vocab = {chars[b]: b for b in range(256)}
vocab["<|endoftext|>"] = 256
with open(os.path.join(sys.argv[1], "vocab.json"), "w", encoding="utf-8") as f:
    json.dump(vocab, f, ensure_ascii=False)
with open(os.path.join(sys.argv[1], "merges.txt"), "w", encoding="utf-8") as f:
    f.write("#version: 0.2\n")
PY
    cp /usr/share/doc/python3.11/html/_sources/tutorial/modules.rst.txt "$work/valid.txt"
    chown -R "$LLMRDZV_TEST_USER" "$work/base" "$work/valid.txt"
    submit MODEL="$work/base" TRAIN_FILE="$work/corpus" VALIDATION_FILE="$work/valid.txt" EXTRA_ARGS="--max_steps 4 --block_size 32 --per_device_train_batch_size 2 --max_eval_samples 8 --threads 1"
    expect 'eval_loss'
    hf_model_loads
    ;;
  finetune-hub)
    # The Hugging Face caches as a login node leaves them (hf download; a dataset's parquet files),
    # laid out by hand from a tiny random GPT-2 and the corpus: a hub model name and a hub dataset
    # name resolve offline inside the job, and transformers itself finds the same snapshot.
    # huggingface_hub reads HF_HUB_OFFLINE when it is imported: set before python starts.
    HF_HUB_OFFLINE=1 HF_HUB_CACHE="$work/hf/hub" "$python" - "$work/hf" "$root/tests/trainer/tokenizer" "$work/corpus" <<'PY'
import glob, json, os, sys, transformers, datasets
sys.path.insert(0, sys.argv[2])
from hf_tokenizer_oracle import bytes_to_unicode
hub, commit = os.path.join(sys.argv[1], "hub"), "0123456789abcdef0123456789abcdef01234567"
def snapshot(kind, name):
    repo = os.path.join(hub, f"{kind}--" + name.replace("/", "--"))
    os.makedirs(os.path.join(repo, "refs"))
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(commit)
    return os.path.join(repo, "snapshots", commit)
model = snapshot("models", "example-org/tiny-gpt2")
config = transformers.GPT2Config(vocab_size=257, n_positions=64, n_embd=32, n_layer=1, n_head=2,
                                 bos_token_id=256, eos_token_id=256)
transformers.GPT2LMHeadModel(config).save_pretrained(model)
chars = bytes_to_unicode()
vocab = {chars[b]: b for b in range(256)}
vocab["<|endoftext|>"] = 256
with open(os.path.join(model, "vocab.json"), "w", encoding="utf-8") as f:
    json.dump(vocab, f, ensure_ascii=False)
with open(os.path.join(model, "merges.txt"), "w", encoding="utf-8") as f:
    f.write("#version: 0.2\n")
data = snapshot("datasets", "example-org/docs")
lines = [l for p in sorted(glob.glob(os.path.join(sys.argv[3], "*.txt"))) for l in open(p, encoding="utf-8")]
for split, rows in (("train", lines[: len(lines) * 9 // 10]), ("validation", lines[len(lines) * 9 // 10 :])):
    os.makedirs(os.path.join(data, "plain"), exist_ok=True)
    datasets.Dataset.from_dict({"text": rows}).to_parquet(os.path.join(data, "plain", f"{split}-00000-of-00001.parquet"))
assert transformers.AutoConfig.from_pretrained("example-org/tiny-gpt2").n_embd == 32
PY
    chown -R "$LLMRDZV_TEST_USER" "$work/hf"
    submit HF_HOME="$work/hf" MODEL=example-org/tiny-gpt2 DATASET=example-org/docs DATASET_CONFIG=plain \
      EXTRA_ARGS="--max_steps 4 --block_size 32 --per_device_train_batch_size 2 --max_eval_samples 8 --eval_strategy no --threads 1"
    expect 'models--example-org--tiny-gpt2/snapshots/0123456789abcdef0123456789abcdef01234567'
    expect 'eval_loss'
    hf_model_loads
    ;;
  finetune-opt-offload)
    # A tiny random OPT (post-LN and projected embeddings, as opt-350m) saved by transformers stands
    # in for facebook/opt-125m, with an OPT tokenizer of its own as transformers 5 saves it
    # (tokenizer.json with the "</s>" BOS template + tokenizer_config.json), trained on the corpus.
    cat "$work"/corpus/*.txt > "$work/tokenizer-corpus.txt"
    : > "$work/no-cases"
    "$python" "$root/tests/trainer/tokenizer/hf_tokenizer_oracle.py" "$work/base" "$work/no-cases" "$work/no-ids" \
      --train "$work/tokenizer-corpus.txt" --vocab-size 400 --make opt >/dev/null
    "$python" - "$work/base" <<'PY'
import sys, transformers
tokenizer = transformers.AutoTokenizer.from_pretrained(sys.argv[1])
assert tokenizer("x").input_ids[0] == tokenizer.convert_tokens_to_ids("</s>"), "no </s> BOS"
config = transformers.OPTConfig(vocab_size=len(tokenizer), hidden_size=32, word_embed_proj_dim=16, ffn_dim=48,
                                num_hidden_layers=1, num_attention_heads=2, max_position_embeddings=64,
                                do_layer_norm_before=False, pad_token_id=tokenizer.pad_token_id,
                                bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id)
transformers.OPTForCausalLM(config).save_pretrained(sys.argv[1])
PY
    cp /usr/share/doc/python3.11/html/_sources/tutorial/modules.rst.txt "$work/valid.txt"
    chown -R "$LLMRDZV_TEST_USER" "$work/base" "$work/valid.txt"
    submit MODEL="$work/base" TRAIN_FILE="$work/corpus" VALIDATION_FILE="$work/valid.txt" EXTRA_ARGS="--max_steps 4 --block_size 32 --per_device_train_batch_size 1 --max_eval_samples 8 --save_steps 2 --threads 1"
    expect 'tokenizer: .* from the model directory'
    expect 'eval_loss'
    hf_model_loads
    offloaded_in_two_shards
    ;;
  elastic)
    # Rank 1 is SIGKILLed once, after rank 0 logged step 5 (checkpoints every 2 steps): rank 0
    # re-joins a round of its own within the step and resumes from the last checkpoint.
    cat > "$work/kill_rank1_once.sh" <<'RUN'
#!/bin/bash
if [ "$SLURM_PROCID" = 1 ] && [ ! -e "$OUT.killed" ]; then
  "$REAL_TRAINER" "$@" & pid=$!
  for _ in $(seq 1200); do
    step=$(tail -n1 "$OUT/metrics.jsonl" 2>/dev/null | grep -Eo '"step": ?[0-9]+' | grep -Eo '[0-9]+$' || true)
    [ -n "$step" ] && [ "$step" -ge 5 ] && break
    sleep 0.05
  done
  touch "$OUT.killed"
  echo "killing rank 1 at step $step"
  kill -9 $pid; wait $pid; exit 0
fi
exec "$REAL_TRAINER" "$@"
RUN
    chmod 755 "$work/kill_rank1_once.sh"
    chown "$LLMRDZV_TEST_USER" "$work/kill_rank1_once.sh"
    long="${tiny/--max_steps 4/--max_steps 30}"
    submit EXTRA_ARGS="$long" TRAINER="$work/kill_rank1_once.sh" REAL_TRAINER="$build/bin/trainer"
    expect '^attempt 1 on 2 node\(s\)$'
    expect '^killing rank 1 at step'
    expect 'rank 0: rank 1 failed in round 1; re-joining the rendezvous, resuming from checkpoint-'
    expect '^finished on attempt 1$'
    "$python" - "$work/out/metrics.jsonl" <<'PY' || fail "the resumed run did not reach step 30 with every step logged"
import json, sys
steps = {r["step"] for r in map(json.loads, open(sys.argv[1])) if "loss" in r and "step" in r}
assert steps == set(range(1, 31)), sorted(set(range(1, 31)) - steps)
PY
    # The next run of the job finds the checkpoint and resumes from it.
    submit EXTRA_ARGS="${tiny/--max_steps 4/--max_steps 32}"
    expect '^attempt 1 on 2 node\(s\), resuming$'
    expect '^finished on attempt 1$'
    ;;
  *) echo "examples_test.sh: unknown example '$name'" >&2; exit 2 ;;
esac
echo "PASS($name)"
