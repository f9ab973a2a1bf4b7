// The launcher of layer_norm_backward.cuh for fp32, bf16 and fp16 (cuda_kernels.hpp).
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "llmrdzv/kernel_support/device_convert.cuh"
#include "layer_norm_backward.cuh"
#include "../cuda_kernels.hpp"

namespace llmrdzv::model::detail {
namespace {

using cuda_kernels::kLayerNormThreads;
static_assert(kLayerNormMaxWidth == kLayerNormThreads * cuda_kernels::kLayerNormMaxColumns);

template <typename T, int K>
void launch_rows(const LayerNormBackward& a, cudaStream_t stream) {
  cuda_kernels::layer_norm_backward_rows_kernel<T, K><<<static_cast<unsigned>(a.blocks), kLayerNormThreads, 0, stream>>>(
      static_cast<const T*>(a.dy), static_cast<const T*>(a.x), a.mean, a.rstd, static_cast<const T*>(a.gamma), a.rows,
      static_cast<int>(a.width), static_cast<T*>(a.dx), a.partial_gamma, a.partial_beta);
}

template <typename T>
void launch(const LayerNormBackward& a, cudaStream_t stream) {
  // As few columns per thread as the width needs: the rest of K would only hold registers.
  if (a.width <= 4 * kLayerNormThreads) {
    launch_rows<T, 4>(a, stream);
  } else if (a.width <= 8 * kLayerNormThreads) {
    launch_rows<T, 8>(a, stream);
  } else {
    launch_rows<T, cuda_kernels::kLayerNormMaxColumns>(a, stream);
  }
  const auto column_blocks =
      static_cast<unsigned>((a.width + cuda_kernels::kColumnSumColumns - 1) / cuda_kernels::kColumnSumColumns);
  cuda_kernels::partial_row_sums_kernel<T>
      <<<column_blocks, cuda_kernels::kColumnSumColumns * cuda_kernels::kColumnSumGroups, 0, stream>>>(
          a.partial_gamma, a.partial_beta, static_cast<int>(a.blocks), static_cast<int>(a.width),
          static_cast<T*>(a.dgamma), static_cast<T*>(a.dbeta));
}

}  // namespace

void layer_norm_backward_cuda(const LayerNormBackward& a, kernel_support::DeviceElement element, void* stream) {
  if (a.width < 1 || a.width > kLayerNormMaxWidth) {
    throw std::invalid_argument("layer_norm_backward_cuda: width " + std::to_string(a.width) + " is outside 1.." +
                                std::to_string(kLayerNormMaxWidth));
  }
  if (a.blocks < 1 || a.blocks > 0x7fffffff) {
    throw std::invalid_argument("layer_norm_backward_cuda: " + std::to_string(a.blocks) + " blocks");
  }
  if (a.rows <= 0) return;
  const auto s = static_cast<cudaStream_t>(stream);
  using kernel_support::DeviceElement;
  switch (element) {
    case DeviceElement::f32: launch<float>(a, s); break;
    case DeviceElement::bf16: launch<__nv_bfloat16>(a, s); break;
    case DeviceElement::f16: launch<__half>(a, s); break;
  }
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string("layer_norm_backward_cuda: a kernel did not launch: ") + cudaGetErrorString(error));
  }
}

}  // namespace llmrdzv::model::detail
