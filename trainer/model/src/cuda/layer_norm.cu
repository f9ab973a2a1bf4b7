// The launchers of layer_norm_forward.cuh and layer_norm_backward.cuh for fp32, bf16 and fp16
// (cuda_kernels.hpp).
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "llmrdzv/kernel_support/device_convert.cuh"
#include "llmrdzv/kernel_support/device_launch.cuh"
#include "layer_norm_forward.cuh"
#include "../cuda_kernels.hpp"

namespace llmrdzv::model::detail {
namespace {

using cuda_kernels::kLayerNormThreads;
static_assert(kLayerNormMaxWidth == kLayerNormThreads * cuda_kernels::kLayerNormMaxColumns);

// The checks both launchers make before reaching a GPU.
void check_shape(const char* launcher, std::int64_t width, std::int64_t blocks) {
  if (width < 1 || width > kLayerNormMaxWidth) {
    throw std::invalid_argument(std::string(launcher) + ": width " + std::to_string(width) + " is outside 1.." +
                                std::to_string(kLayerNormMaxWidth));
  }
  if (blocks < 1 || blocks > 0x7fffffff) {
    throw std::invalid_argument(std::string(launcher) + ": " + std::to_string(blocks) + " blocks");
  }
}

// launch.template run<T, K>() with as few columns per thread as the width needs (the rest of K
// would only hold registers).
template <typename Launch>
struct WithColumns {
  const Launch& launch;
  std::int64_t width;
  template <typename T>
  void run() const {
    if (width <= 4 * kLayerNormThreads) {
      launch.template run<T, 4>();
    } else if (width <= 8 * kLayerNormThreads) {
      launch.template run<T, 8>();
    } else {
      launch.template run<T, cuda_kernels::kLayerNormMaxColumns>();
    }
  }
};

template <typename Launch>
void for_element_and_width(kernel_support::DeviceElement element, std::int64_t width, const Launch& launch) {
  kernel_support::with_device_type(element, WithColumns<Launch>{launch, width});
}

struct ForwardLaunch {
  const LayerNormForward& a;
  cudaStream_t s;
  template <typename T, int K>
  void run() const {
    cuda_kernels::layer_norm_forward_rows_kernel<T, K><<<static_cast<unsigned>(a.blocks), kLayerNormThreads, 0, s>>>(
        static_cast<const T*>(a.x), static_cast<const T*>(a.residual), static_cast<const T*>(a.gamma),
        static_cast<const T*>(a.beta), a.rows, static_cast<int>(a.width), a.eps, static_cast<T*>(a.sum),
        static_cast<T*>(a.y), a.mean, a.rstd);
  }
};

struct BackwardLaunch {
  const LayerNormBackward& a;
  cudaStream_t s;
  template <typename T, int K>
  void run() const {
    cuda_kernels::layer_norm_backward_rows_kernel<T, K><<<static_cast<unsigned>(a.blocks), kLayerNormThreads, 0, s>>>(
        static_cast<const T*>(a.dy), static_cast<const T*>(a.x), a.mean, a.rstd, static_cast<const T*>(a.gamma),
        static_cast<const T*>(a.dresidual), a.rows, static_cast<int>(a.width), static_cast<T*>(a.dx), a.partial_gamma,
        a.partial_beta);
    const auto sum_blocks =
        static_cast<unsigned>((a.width + cuda_kernels::kColumnSumColumns - 1) / cuda_kernels::kColumnSumColumns);
    cuda_kernels::partial_row_sums_kernel<T>
        <<<sum_blocks, cuda_kernels::kColumnSumColumns * cuda_kernels::kColumnSumGroups, 0, s>>>(
            a.partial_gamma, a.partial_beta, static_cast<int>(a.blocks), static_cast<int>(a.width),
            static_cast<T*>(a.dgamma), static_cast<T*>(a.dbeta));
  }
};

}  // namespace

void layer_norm_forward_cuda(const LayerNormForward& a, kernel_support::DeviceElement element, void* stream) {
  check_shape("layer_norm_forward_cuda", a.width, a.blocks);
  if (a.rows <= 0) return;
  for_element_and_width(element, a.width, ForwardLaunch{a, static_cast<cudaStream_t>(stream)});
  kernel_support::check_launched("layer_norm_forward_cuda");
}

void layer_norm_backward_cuda(const LayerNormBackward& a, kernel_support::DeviceElement element, void* stream) {
  check_shape("layer_norm_backward_cuda", a.width, a.blocks);
  if (a.rows <= 0) return;
  for_element_and_width(element, a.width, BackwardLaunch{a, static_cast<cudaStream_t>(stream)});
  kernel_support::check_launched("layer_norm_backward_cuda");
}

}  // namespace llmrdzv::model::detail
