// The launcher of softmax_xent_rows.cuh for fp32, bf16 and fp16 logits (cuda_kernels.hpp).
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "llmrdzv/kernel_support/device_convert.cuh"
#include "llmrdzv/kernel_support/device_launch.cuh"
#include "softmax_xent_rows.cuh"
#include "../cuda_kernels.hpp"

namespace llmrdzv::model::detail {
namespace {

// 16-byte loads and stores where the rows allow them (aligned start, stride a multiple of a pack).
struct RowsLaunch {
  void* logits;
  std::int64_t rows, vocab, row_stride;
  const std::int64_t* targets;
  float* row_loss;
  bool gradients;
  cudaStream_t stream;
  template <typename T>
  void run() const {
    constexpr int pack = 16 / sizeof(T);
    const auto grid = static_cast<unsigned>(rows);
    constexpr int threads = cuda_kernels::kSoftmaxRowThreads;
    T* data = static_cast<T*>(logits);
    if (reinterpret_cast<std::uintptr_t>(logits) % 16 == 0 && row_stride % pack == 0) {
      cuda_kernels::softmax_xent_rows_kernel<T, pack><<<grid, threads, 0, stream>>>(data, vocab, row_stride, targets,
                                                                                   row_loss, gradients);
    } else {
      cuda_kernels::softmax_xent_rows_kernel<T, 1><<<grid, threads, 0, stream>>>(data, vocab, row_stride, targets,
                                                                                row_loss, gradients);
    }
  }
};

}  // namespace

void softmax_xent_rows_cuda(void* logits, kernel_support::DeviceElement element, std::int64_t rows, std::int64_t vocab,
                            std::int64_t row_stride, const std::int64_t* targets, float* row_loss, bool gradients,
                            void* stream) {
  if (row_stride < vocab) throw std::invalid_argument("softmax_xent_rows_cuda: a row stride shorter than the vocabulary");
  if (rows <= 0 || vocab <= 0) return;
  if (rows > 0x7fffffff) throw std::runtime_error("softmax_xent_rows_cuda: more rows than one grid takes");
  kernel_support::with_device_type(element, RowsLaunch{logits, rows, vocab, row_stride, targets, row_loss, gradients,
                                                      static_cast<cudaStream_t>(stream)});
  kernel_support::check_launched("softmax_xent_rows_cuda");
}

}  // namespace llmrdzv::model::detail
