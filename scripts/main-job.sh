#!/usr/bin/env bash
# The main job on a fresh machine: set up, build, bring up a local 2-node Slurm cluster with the
# freshly built plugin, train a byte-level BPE tokenizer on the Python 3.11 documentation
# (`trainer tokenizer`), then the embedded default model (etc/trainer/default.yaml: a small GPT-2
# on the same text) on it with `srun --llm-rdzv`, print the final eval loss, bits per byte and a
# generated sample, and leave a Hugging Face model directory. Without root, or where network namespaces
# cannot be made (an unprivileged container), there can be no local cluster: it runs the same
# training through the trainer's standalone launcher instead (trainer --nproc), and says so.
#
#   scripts/main-job.sh [--output_dir DIR] [--max_steps N] [--nodes N] [--vocab_size N] [--prepared]
#                       [-- TRAINER_ARGS...]
#     the tokenizer goes to DIR-tokenizer (default runs/main-job-tokenizer), --vocab_size tokens
#     (default 4096);
#     --prepared: setup and build are done (the test of this script); a local cluster that is
#     already up is used and left up; TRAINER_ARGS go to the trainer after the default config.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

out="$root/runs/main-job"
max_steps=""
nodes=2
vocab_size=4096
prepared=false
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --output_dir) out=$(realpath -m "${2:?}"); shift 2 ;;
    --max_steps) max_steps=${2:?}; shift 2 ;;
    --nodes) nodes=${2:?}; shift 2 ;;
    --vocab_size) vocab_size=${2:?}; shift 2 ;;
    --prepared) prepared=true; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "main-job.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
say() { printf '\n== %s\n' "$*"; }

corpus=/usr/share/doc/python3.11/html/_sources
tokenizer="$out-tokenizer"
trainer_args=(--config "$root/etc/trainer/default.yaml" --tokenizer_name "$tokenizer" --output_dir "$out"
              --overwrite_output_dir)
[ -z "$max_steps" ] || trainer_args+=(--max_steps "$max_steps")
trainer_args+=("${extra[@]}")
prompt='The Python tutorial'

train_tokenizer() {
  say "a byte-level BPE tokenizer ($vocab_size tokens) trained on the Python docs: $tokenizer"
  build/bin/trainer tokenizer --train_file "$corpus" --vocab_size "$vocab_size" --min_frequency 2 \
    --output_dir "$tokenizer"
}

standalone() {  # REASON
  say "$1: no local Slurm cluster possible; using the standalone launcher (trainer --nproc $nodes)"
  OMP_NUM_THREADS=1 build/bin/trainer --nproc "$nodes" "${trainer_args[@]}"
}

if [ "$(id -u)" -ne 0 ]; then
  [ -x build/bin/trainer ] ||
    { echo "main-job.sh: no build/bin/trainer: as root, scripts/setup.sh && scripts/build.sh first" >&2; exit 1; }
  train_tokenizer
  standalone "not root"
else
  if ! $prepared; then
    say "setup";  scripts/setup.sh
    say "build (what the main job runs: the trainer, the plugin, rdzvd, rdzvctl)"
    scripts/build.sh --target trainer --target llm_rdzv --target rdzvd --target rdzvctl
  fi
  train_tokenizer
  if ! unshare --net --uts true 2>/dev/null; then
    standalone "network and UTS namespaces cannot be made here (unprivileged container?)"
  else
    if $prepared && scripts/slurm/cluster.sh status >/dev/null 2>&1; then
      say "local Slurm cluster: already up, left up"
    else
      say "local Slurm cluster ($nodes nodes, plugin from build/lib)"
      scripts/slurm/cluster.sh up --nodes "$nodes" --build-dir "$root/build"
      trap 'scripts/slurm/cluster.sh down || true' EXIT
    fi
    # shellcheck disable=SC1091
    source /run/llm-rdzv-slurm/env
    # The job user writes the run; the outputs come back to root's ownership afterwards (the
    # test user goes with the cluster).
    mkdir -p "$out"
    chown -R "$LLMRDZV_TEST_USER" "$out"
    say "srun -N$nodes -n$nodes --llm-rdzv trainer (as $LLMRDZV_TEST_USER)"
    rc=0
    setpriv --reuid="$LLMRDZV_TEST_USER" --regid="$LLMRDZV_TEST_USER" --init-groups -- \
      env OMP_NUM_THREADS=1 srun -N"$nodes" -n"$nodes" --llm-rdzv \
        "$root/build/bin/trainer" "${trainer_args[@]}" || rc=$?
    chown -R "$(id -u):$(id -g)" "$out"
    [ "$rc" -eq 0 ] || { echo "main-job.sh: the training step failed (srun exit $rc)" >&2; exit "$rc"; }
  fi
fi

say "a sample from the trained model ($out)"
build/bin/trainer generate --model "$out" --prompt "$prompt" --max_new_tokens 200 --temperature 0.8 --top_k 40 --seed 1
say "done: Hugging Face model directory $out (config.json, model.safetensors, tokenizer files); metrics in $out/metrics.jsonl"
say "training curves: .venv-tools/bin/tensorboard --logdir $out/runs   (then open http://localhost:6006)"
