// The LM head's weight gradient summed over the fused loss's chunks on a GPU, in fp32, by one
// cuBLAS product per chunk that adds into the sum (bf16/fp16 inputs, fp32 output and
// accumulation): no chunk's product rounded to 16 bits and no separate pass to add it. Built with
// the trainer's CUDA kernels (LLMRDZV_HAVE_CUDA_KERNELS).
#pragma once

#include <ATen/core/Tensor.h>

namespace llmrdzv::model::detail {

// True when sum_head_gradient can take these: CUDA tensors of one 16-bit type, contiguous, with
// sizes cuBLAS's int arguments hold.
bool head_gradient_sum_applies(const at::Tensor& grad_logits, const at::Tensor& hidden);

// sum [V, C] (fp32, contiguous, on the same GPU) = grad_logits^T hidden (`first`) or += it
// (otherwise), for grad_logits [n, V] and hidden [n, C]. False, with `sum` untouched, when cuBLAS
// could not allocate its workspace (the caller then takes torch's product, whose allocations go
// through the caching allocator); throws std::runtime_error for any other cuBLAS failure.
bool sum_head_gradient(at::Tensor& sum, const at::Tensor& grad_logits, const at::Tensor& hidden, bool first);

}  // namespace llmrdzv::model::detail
