#!/usr/bin/env bash
# The GPU checks in one run, on a CUDA node where the project is built (build/, or the build
# directory given as the first argument): the GPU tests (ctest -L gpu) and the CPU AdamW kernels'
# tests (whose AVX-512 variants only run on a CPU that has it, as GPU hosts often do), then trainer-bench on the
# GPU side by side with HF transformers: GPT-2 124M at 16 x 1024 in bf16 against HF eager and HF +
# torch.compile, ours against ours without its CUDA kernels (LLMRDZV_CUDA_KERNELS=0), GPT-2 XL at
# 8 x 1024 against HF eager, and --offload optimizer (plain, and with delayed updates) against no
# offload. The bench and xl parts also profile 3 steps of ours and print where they went
# (trainer-profile-summary; traces in <build>/profile/). GPU_CHECKS_PARTS picks parts (tests,
# kernels, bench, offload, xl, big; they run in that order, all but big by default; big trains a
# GPT-2-shaped 6.65B model with the optimizer offloaded, a few minutes). Each part starts with a
# "=== part" line; a failing part does not stop the next, and the exit status is 1 when any failed,
# 77 when no GPU is visible. Each GPU test gets at most 240 s.
set -u -o pipefail
build=$(cd "${1:-build}" 2>/dev/null && pwd) || { echo "gpu-checks: no build directory ${1:-build}" >&2; exit 2; }
parts=${GPU_CHECKS_PARTS:-tests,kernels,bench,offload,xl}  # big: only when named
if ! nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; then
  echo "gpu-checks: no GPU is visible (nvidia-smi failed)" >&2
  exit 77
fi
status=0
# part NAME WHAT: true when NAME is selected, after printing its header.
part() {
  case ",$parts," in *",$1,"*) echo "=== $1: $2" ;; *) return 1 ;; esac
}
bench=("$build/bin/trainer-bench" --device cuda --warmup 3 --steps 10 --rounds 1)
if part tests "ctest -L gpu, and the CPU AdamW kernels on this host's instruction sets (AVX-512 where it has it)"; then
  ctest --test-dir "$build" -L gpu --timeout 240 --output-on-failure || status=1
  if [ -x "$build/tests/optim_tests" ]; then
    "$build/tests/optim_tests" || status=1
  else
    echo "gpu-checks: $build/tests/optim_tests is not built; the CPU kernels were not checked here"
  fi
fi
if part kernels "GPT-2 124M, 16 x 1024: ours without its CUDA kernels (B) against ours (A)"; then
  "${bench[@]}" --shapes gpt2-16x1024 --compare_trainer_args "LLMRDZV_CUDA_KERNELS=0" || status=1
fi
if part bench "GPT-2 124M, 16 x 1024, bf16: ours, HF eager, HF + torch.compile"; then
  "${bench[@]}" --shapes gpt2-16x1024 --profile_dir "$build/profile" || status=1
fi
if part offload "GPT-2 124M, 16 x 1024: --offload optimizer against no offload, plain and with delayed updates"; then
  "${bench[@]}" --shapes gpt2-16x1024 --compare_trainer_args "--offload optimizer" || status=1
  "${bench[@]}" --shapes gpt2-16x1024 --compare_trainer_args "--offload optimizer --offload_delayed_update 2" || status=1
fi
if part xl "GPT-2 XL, 8 x 1024, bf16: ours, HF eager"; then
  "${bench[@]}" --shapes gpt2-xl-8x1024 --hf_modes eager --profile_dir "$build/profile" || status=1
fi
if part big "a GPT-2-shaped 6.65B model on this one GPU with --offload optimizer; then without offload"; then
  # 16 micro-batches of 8 x 1024 per step, gradient checkpointing: tokens/s, MFU, peak GPU and
  # host memory. Without offload an 80 GB GPU must refuse it, before training, with the trainer's
  # memory message (printed above the bench's own error); a GPU with room for its 124 GiB trains.
  # No checkpoint: with its optimizer state one is ~90 GB (the final model, 13 GB, is written).
  big=(--shapes gpt2-6.7b-8x1024 --hf_modes none)
  "${bench[@]}" "${big[@]}" --warmup 1 --steps 2 --trainer_args \
    "--offload optimizer --gradient_checkpointing --gradient_accumulation_steps 16 --save_strategy no" || status=1
  if "${bench[@]}" "${big[@]}" --warmup 0 --steps 1 --trainer_args "--gradient_checkpointing --save_strategy no"; then
    echo "gpu-checks: without offload the 6.65B model trained on this GPU"
  else
    echo "gpu-checks: without offload the 6.65B run stopped (the trainer's message is above)"
  fi
fi
exit "$status"
