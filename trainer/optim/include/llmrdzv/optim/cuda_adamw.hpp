// AdamW on a GPU for mixed-precision training (built where CMake finds nvcc: LLMRDZV_OPTIM_CUDA):
// fp32 master weights and moments on the device, the gradient in bf16, fp16 or fp32, and each new
// master value rounded into the model's bf16/fp16 weight in the same pass. The update is the CPU
// kernels' (adamw_step's), operation for operation: the same inputs give the same bits. Torch-free:
// device pointers, and the CUDA stream as a void* (a cudaStream_t).
#pragma once

#include <cstddef>
#include <cstdint>

#include "llmrdzv/kernel_support/device_element.hpp"
#include "llmrdzv/optim/adamw_hyperparams.hpp"

namespace llmrdzv::optim {

// One parameter's arrays, all on the device, all of length n.
struct CudaMixedAdamWState {
  float* master;
  float* exp_avg;
  float* exp_avg_sq;
  const void* grad;
  kernel_support::DeviceElement grad_type;  // the model's type, or f32 (gradients summed in fp32)
  void* model;
  kernel_support::DeviceElement model_type;  // bf16 or f16
  std::size_t n;
};

// Applies AdamW step `step` (>= 1) as adamw_step does, each gradient element multiplied by
// hp.grad_scale times *device_grad_scale (a float on the device, e.g. the clip coefficient; null:
// hp.grad_scale alone). Asynchronous on `stream`. Throws std::invalid_argument for the
// hyperparameters adamw_step refuses or an unsupported pair of types, std::runtime_error when the
// launch fails.
void adamw_step_cuda(const CudaMixedAdamWState& state, const AdamWHyperparams& hp, std::int64_t step,
                     const float* device_grad_scale, void* stream);

}  // namespace llmrdzv::optim
