// cuda_head_gradient.hpp with cublasGemmEx on torch's cuBLAS handle (its stream and workspace).
#include "cuda_head_gradient.hpp"

#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>
#include <cublas_v2.h>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace llmrdzv::model::detail {

bool head_gradient_sum_applies(const at::Tensor& grad_logits, const at::Tensor& hidden) {
  const at::ScalarType type = grad_logits.scalar_type();
  const auto fits = [](std::int64_t size) { return size > 0 && size <= std::numeric_limits<int>::max(); };
  return grad_logits.is_cuda() && hidden.device() == grad_logits.device() && hidden.scalar_type() == type &&
         (type == at::kBFloat16 || type == at::kHalf) && grad_logits.dim() == 2 && hidden.dim() == 2 &&
         grad_logits.is_contiguous() && hidden.is_contiguous() && grad_logits.size(0) == hidden.size(0) &&
         fits(grad_logits.size(0)) && fits(grad_logits.size(1)) && fits(hidden.size(1));
}

bool sum_head_gradient(at::Tensor& sum, const at::Tensor& grad_logits, const at::Tensor& hidden, bool first) {
  const c10::cuda::CUDAGuard on_device(grad_logits.device());
  const int rows = static_cast<int>(grad_logits.size(0)), vocab = static_cast<int>(grad_logits.size(1)),
            width = static_cast<int>(hidden.size(1));
  const cudaDataType_t type = grad_logits.scalar_type() == at::kBFloat16 ? CUDA_R_16BF : CUDA_R_16F;
  const float alpha = 1.0f, beta = first ? 0.0f : 1.0f;
  // Row-major sum [V, C] is column-major [C, V] (ld C): hidden^T [C, n] (row-major hidden, ld C,
  // as is) times grad_logits [n, V] (row-major [n, V] is column-major [V, n], ld V: transposed).
  const cublasStatus_t status =
      cublasGemmEx(at::cuda::getCurrentCUDABlasHandle(), CUBLAS_OP_N, CUBLAS_OP_T, width, vocab, rows, &alpha,
                   hidden.data_ptr(), type, width, grad_logits.data_ptr(), type, vocab, &beta, sum.data_ptr<float>(),
                   CUDA_R_32F, width, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  if (status == CUBLAS_STATUS_ALLOC_FAILED) return false;
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string("linear_cross_entropy: the head's gradient product failed in cuBLAS: ") +
                             cublasGetStatusString(status));
  }
  return true;
}

}  // namespace llmrdzv::model::detail
