#!/usr/bin/env bash
# The main job on a fresh machine: set up, build, bring up a local 2-node Slurm cluster with the
# freshly built plugin, train the embedded default model (etc/trainer/default.yaml: a small GPT-2 on
# the Python 3.11 documentation) with `srun --llm-rdzv`, print the final perplexity and a generated
# sample, and leave a Hugging Face model directory. Without root (no namespaces, no slurmd) it runs
# the same training through the trainer's standalone launcher instead, and says so.
#
#   scripts/main-job.sh [--output_dir DIR] [--max_steps N] [--nodes N]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

out="$root/runs/main-job"
max_steps=""
nodes=2
while [ $# -gt 0 ]; do
  case "$1" in
    --output_dir) out=$(realpath -m "${2:?}"); shift 2 ;;
    --max_steps) max_steps=${2:?}; shift 2 ;;
    --nodes) nodes=${2:?}; shift 2 ;;
    -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "main-job.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
say() { printf '\n== %s\n' "$*"; }

trainer_args=(--config "$root/etc/trainer/default.yaml" --output_dir "$out" --overwrite_output_dir)
[ -z "$max_steps" ] || trainer_args+=(--max_steps "$max_steps")
prompt='The Python tutorial'

if [ "$(id -u)" -ne 0 ]; then
  say "not root: no local Slurm cluster possible; using the standalone launcher (trainer --nproc $nodes)"
  [ -x build/bin/trainer ] || { echo "build first: as root, scripts/setup.sh && scripts/build.sh" >&2; exit 1; }
  OMP_NUM_THREADS=1 build/bin/trainer --nproc "$nodes" "${trainer_args[@]}"
else
  say "setup";  scripts/setup.sh
  say "build";  scripts/build.sh
  say "local Slurm cluster ($nodes nodes, plugin from build/lib)"
  scripts/slurm/cluster.sh up --nodes "$nodes" --build-dir "$root/build"
  trap 'scripts/slurm/cluster.sh down || true' EXIT
  # shellcheck disable=SC1091
  source /run/llm-rdzv-slurm/env
  mkdir -p "$out"
  chown "$LLMRDZV_TEST_USER" "$out" "$(dirname "$out")"
  say "srun -N$nodes -n$nodes --llm-rdzv trainer (as $LLMRDZV_TEST_USER)"
  setpriv --reuid="$LLMRDZV_TEST_USER" --regid="$LLMRDZV_TEST_USER" --init-groups -- \
    env OMP_NUM_THREADS=1 srun -N"$nodes" -n"$nodes" --llm-rdzv \
      "$root/build/bin/trainer" "${trainer_args[@]}"
fi

say "a sample from the trained model ($out)"
build/bin/trainer generate --model "$out" --prompt "$prompt" --max_new_tokens 200 --temperature 0.8 --top_k 40 --seed 1
say "done: Hugging Face model directory $out (config.json, model.safetensors); metrics in $out/metrics.jsonl"
