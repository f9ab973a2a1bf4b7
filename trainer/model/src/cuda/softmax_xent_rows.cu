// The launcher of softmax_xent_rows.cuh for fp32, bf16 and fp16 logits (cuda_kernels.hpp).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "llmrdzv/kernel_support/device_convert.cuh"
#include "softmax_xent_rows.cuh"
#include "../cuda_kernels.hpp"

namespace llmrdzv::model::detail {
namespace {

template <typename T>
void launch(void* logits, std::int64_t rows, std::int64_t vocab, const std::int64_t* targets, float* row_loss,
            bool gradients, cudaStream_t stream) {
  cuda_kernels::softmax_xent_rows_kernel<T><<<static_cast<unsigned>(rows), cuda_kernels::kSoftmaxRowThreads, 0, stream>>>(
      static_cast<T*>(logits), vocab, targets, row_loss, gradients);
}

}  // namespace

void softmax_xent_rows_cuda(void* logits, kernel_support::DeviceElement element, std::int64_t rows, std::int64_t vocab,
                            const std::int64_t* targets, float* row_loss, bool gradients, void* stream) {
  if (rows <= 0 || vocab <= 0) return;
  if (rows > 0x7fffffff) throw std::runtime_error("softmax_xent_rows_cuda: more rows than one grid takes");
  const auto s = static_cast<cudaStream_t>(stream);
  using kernel_support::DeviceElement;
  switch (element) {
    case DeviceElement::f32: launch<float>(logits, rows, vocab, targets, row_loss, gradients, s); break;
    case DeviceElement::bf16: launch<__nv_bfloat16>(logits, rows, vocab, targets, row_loss, gradients, s); break;
    case DeviceElement::f16: launch<__half>(logits, rows, vocab, targets, row_loss, gradients, s); break;
  }
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string("softmax_xent_rows_cuda: the kernel did not launch: ") + cudaGetErrorString(error));
  }
}

}  // namespace llmrdzv::model::detail
