// The launchers of column_sums.cuh's two passes for fp32, bf16 and fp16 (cuda_kernels.hpp): a
// plain column sum, and GELU's backward (gelu_backward.cuh) with the column sums of its output.
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "llmrdzv/kernel_support/device_convert.cuh"
#include "llmrdzv/kernel_support/device_launch.cuh"
#include "column_sums.cuh"
#include "gelu_backward.cuh"
#include "../cuda_kernels.hpp"

namespace llmrdzv::model::detail {
namespace {

static_assert(kColumnSumTile == cuda_kernels::kColumnTileThreads);

// Both passes over entry's table, the sums written to out.
template <typename T, typename Entry>
void launch(const Entry& entry, std::int64_t rows, std::int64_t width, std::int64_t parts, float* partial, T* out,
            cudaStream_t stream) {
  using namespace cuda_kernels;
  const std::int64_t tiles = (width + kColumnTileThreads - 1) / kColumnTileThreads;
  column_partial_sums_kernel<<<static_cast<unsigned>(tiles * parts), kColumnTileThreads, 0, stream>>>(
      entry, rows, static_cast<int>(width), static_cast<int>(tiles), static_cast<int>(parts), partial);
  const auto sum_blocks = static_cast<unsigned>((width + kColumnSumColumns - 1) / kColumnSumColumns);
  partial_row_sums_kernel<T><<<sum_blocks, kColumnSumColumns * kColumnSumGroups, 0, stream>>>(
      partial, nullptr, static_cast<int>(parts), static_cast<int>(width), out, nullptr);
}

// The checks both launchers make before reaching a GPU.
void check_grid(const char* launcher, std::int64_t width, std::int64_t parts) {
  constexpr std::int64_t kMaxGrid = 0x7fffffff;
  constexpr std::int64_t kMaxWidth = std::int64_t{1} << 30;  // column indices stay ints with a tile to spare
  if (width < 1 || width > kMaxWidth) {
    throw std::invalid_argument(std::string(launcher) + ": width " + std::to_string(width) + " is outside 1.." +
                                std::to_string(kMaxWidth));
  }
  const std::int64_t tiles = (width + cuda_kernels::kColumnTileThreads - 1) / cuda_kernels::kColumnTileThreads;
  if (parts < 1 || parts > kMaxGrid / tiles) {
    throw std::invalid_argument(std::string(launcher) + ": " + std::to_string(parts) + " parts of " + std::to_string(tiles) +
                                " column tiles is not a grid of 1.." + std::to_string(kMaxGrid) + " blocks");
  }
}

struct ColumnSumsLaunch {
  const ColumnSums& a;
  cudaStream_t stream;
  template <typename T>
  void run() const {
    launch(cuda_kernels::TableEntries<T>{static_cast<const T*>(a.table)}, a.rows, a.width, a.parts, a.partial,
           static_cast<T*>(a.out), stream);
  }
};

struct GeluBackwardLaunch {
  const GeluBackwardColumnSums& a;
  cudaStream_t stream;
  template <typename T>
  void run() const {
    launch(cuda_kernels::GeluTanhBackward<T>{static_cast<const T*>(a.dy), static_cast<const T*>(a.x), static_cast<T*>(a.dx)},
           a.rows, a.width, a.parts, a.partial, static_cast<T*>(a.column_sums), stream);
  }
};

}  // namespace

void column_sums_cuda(const ColumnSums& a, kernel_support::DeviceElement element, void* stream) {
  check_grid("column_sums_cuda", a.width, a.parts);
  kernel_support::with_device_type(element, ColumnSumsLaunch{a, static_cast<cudaStream_t>(stream)});
  kernel_support::check_launched("column_sums_cuda");
}

void gelu_tanh_backward_column_sums_cuda(const GeluBackwardColumnSums& a, kernel_support::DeviceElement element,
                                         void* stream) {
  check_grid("gelu_tanh_backward_column_sums_cuda", a.width, a.parts);
  kernel_support::with_device_type(element, GeluBackwardLaunch{a, static_cast<cudaStream_t>(stream)});
  kernel_support::check_launched("gelu_tanh_backward_column_sums_cuda");
}

}  // namespace llmrdzv::model::detail
