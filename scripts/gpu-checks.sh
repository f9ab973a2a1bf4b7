#!/usr/bin/env bash
# The GPU checks in one run, on a CUDA node where the project is built (build/, or the build
# directory given as the first argument): the GPU tests (ctest -L gpu) and the CPU AdamW kernels'
# tests (whose AVX-512 variants only run on a CPU that has it, as GPU hosts often do), then
# trainer-bench on the GPU side by side with its peers: GPT-2 124M at 16 x 1024 in bf16 against HF
# eager, HF + torch.compile and a plain PyTorch GPT-2 + torch.compile; --offload optimizer (plain,
# and with delayed updates) against no offload; GPT-2 XL at 8 x 1024 (one and four micro-batches
# per optimizer step) against HF eager; and ours against ours without its CUDA kernels
# (LLMRDZV_CUDA_KERNELS=0). The bench and xl parts also profile 3 steps of ours and print where
# they went (trainer-profile-summary; traces in <build>/profile/).
# GPU_CHECKS_PARTS picks parts and their order (of tests, bench, offload, xl, kernels, big; default
# tests,bench,offload,xl; big trains a GPT-2-shaped 6.65B model with the optimizer offloaded, a few
# minutes). Each part starts with a "=== part" line; a failing part does not stop
# the next, and the exit status is 1 when any failed, 77 when no GPU is visible. Each GPU test gets
# at most 240 s.
# GPU_CHECKS_LOG_DIR=DIR also writes each part's output to DIR/<part>.log as it runs, so a run cut
# off by a time limit still leaves what it had; the last lines printed are a summary: each part's
# status and seconds, the tests' verdicts and the benchmarks' tables.
set -u -o pipefail
build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "gpu-checks: no build directory ${1:-build}" >&2; exit 2; }
parts=${GPU_CHECKS_PARTS:-tests,bench,offload,xl}  # kernels, big: only when named
# What each part does, for its header line.
declare -A what=(
  [tests]="ctest -L gpu, and the CPU AdamW kernels on this host's instruction sets (AVX-512 where it has it)"
  [bench]="GPT-2 124M, 16 x 1024, bf16: ours, HF eager, HF + torch.compile, a plain PyTorch GPT-2 + torch.compile"
  [offload]="GPT-2 124M, 16 x 1024: --offload optimizer against no offload, plain and with delayed updates"
  [xl]="GPT-2 XL, 8 x 1024, bf16, one and four micro-batches per step: ours, HF eager"
  [kernels]="GPT-2 124M, 16 x 1024: ours without its CUDA kernels (B) against ours (A)"
  [big]="a GPT-2-shaped 6.65B model on this one GPU with --offload optimizer; then without offload"
)
IFS=, read -r -a selected <<< "$parts"
for name in "${selected[@]}"; do
  [ -n "${what[$name]+set}" ] || { echo "gpu-checks: no part '$name' (${!what[*]})" >&2; exit 2; }
done
log_dir=${GPU_CHECKS_LOG_DIR:-$(mktemp -d)}
mkdir -p "$log_dir" || { echo "gpu-checks: cannot make $log_dir" >&2; exit 2; }
if ! nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$log_dir/gpu.log"; then
  echo "gpu-checks: no GPU is visible (nvidia-smi failed)" >&2
  exit 77
fi
status=0
done_parts=()
bench=("$build/bin/trainer-bench" --device cuda --warmup 3 --steps 10 --rounds 1)

# run_part NAME: runs the function part_NAME with its output shown and kept in $log_dir/NAME.log,
# and records its status and seconds for the summary.
run_part() {
  echo "=== $1: ${what[$1]}"
  local start=$SECONDS rc
  "part_$1" 2>&1 | tee "$log_dir/$1.log"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || status=1
  done_parts+=("$1: $([ "$rc" -eq 0 ] && echo ok || echo "FAILED ($rc)") in $((SECONDS - start)) s")
}

part_tests() {
  local rc=0
  ctest --test-dir "$build" -L gpu --timeout 240 --output-on-failure || rc=1
  if [ -x "$build/tests/optim_tests" ]; then
    "$build/tests/optim_tests" || rc=1
  else
    echo "gpu-checks: $build/tests/optim_tests is not built; the CPU kernels were not checked here"
  fi
  return "$rc"
}
part_bench() { "${bench[@]}" --shapes gpt2-16x1024 --profile_dir "$build/profile"; }
part_offload() {
  local rc=0
  "${bench[@]}" --shapes gpt2-16x1024 --compare_trainer_args "--offload optimizer" || rc=1
  "${bench[@]}" --shapes gpt2-16x1024 --compare_trainer_args "--offload optimizer --offload_delayed_update 2" || rc=1
  return "$rc"
}
part_xl() {  # one micro-batch per optimizer step (profiled too), then four
  "${bench[@]}" --shapes gpt2-xl-8x1024 --peers hf-eager --profile_dir "$build/profile" || return 1
  "${bench[@]}" --shapes gpt2-xl-8x1024x4 --peers hf-eager
}
part_kernels() { "${bench[@]}" --shapes gpt2-16x1024 --compare_trainer_args "LLMRDZV_CUDA_KERNELS=0"; }
part_big() {
  # 16 micro-batches of 8 x 1024 per step, gradient checkpointing: tokens/s, MFU, peak GPU and
  # host memory. Without offload an 80 GB GPU must refuse it, before training, with the trainer's
  # memory message (printed above the bench's own error); a GPU with room for its 124 GiB trains.
  # No checkpoint: with its optimizer state one is ~90 GB (the final model, 13 GB, is written).
  local big=(--shapes gpt2-6.7b-8x1024x16 --peers none)
  "${bench[@]}" "${big[@]}" --warmup 1 --steps 2 --trainer_args \
    "--offload optimizer --gradient_checkpointing --save_strategy no" || return 1
  if "${bench[@]}" "${big[@]}" --warmup 0 --steps 1 --trainer_args "--gradient_checkpointing --save_strategy no"; then
    echo "gpu-checks: without offload the 6.65B model trained on this GPU"
  else
    echo "gpu-checks: without offload the 6.65B run stopped (the trainer's message is above)"
  fi
}

for name in "${selected[@]}"; do run_part "$name"; done

# The summary: what a reader of only the last lines of the output needs.
echo "=== summary (full output in $log_dir)"
printf '%s\n' "${done_parts[@]}"
for name in "${selected[@]}"; do
  f="$log_dir/$name.log"
  [ -f "$f" ] || continue
  grep -E '^(shape |gpt2|default|opt|smollm|[0-9]+% tests passed|The following tests FAILED|[[:space:]]+[0-9]+ - .*\((Failed|Timeout|SEGFAULT|Subprocess)|All tests passed|test cases:|gpu-checks:)' "$f" \
    | grep -v '^{' | sed "s|^|$name: |"
done
exit "$status"
