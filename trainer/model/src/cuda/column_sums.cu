// The launcher of column_sums.cuh's two passes for fp32, bf16 and fp16 (cuda_kernels.hpp).
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "llmrdzv/kernel_support/device_convert.cuh"
#include "column_sums.cuh"
#include "../cuda_kernels.hpp"

namespace llmrdzv::model::detail {
namespace {

static_assert(kColumnSumTile == cuda_kernels::kColumnTileThreads);

template <typename T>
void launch(const ColumnSums& a, std::int64_t tiles, cudaStream_t stream) {
  using namespace cuda_kernels;
  column_partial_sums_kernel<T><<<static_cast<unsigned>(tiles * a.parts), kColumnTileThreads, 0, stream>>>(
      static_cast<const T*>(a.table), a.rows, static_cast<int>(a.width), static_cast<int>(tiles),
      static_cast<int>(a.parts), a.partial);
  const auto sum_blocks = static_cast<unsigned>((a.width + kColumnSumColumns - 1) / kColumnSumColumns);
  partial_row_sums_kernel<T><<<sum_blocks, kColumnSumColumns * kColumnSumGroups, 0, stream>>>(
      a.partial, nullptr, static_cast<int>(a.parts), static_cast<int>(a.width), static_cast<T*>(a.out), nullptr);
}

}  // namespace

void column_sums_cuda(const ColumnSums& a, kernel_support::DeviceElement element, void* stream) {
  constexpr std::int64_t kMaxGrid = 0x7fffffff;
  if (a.width < 1 || a.width > kMaxGrid) {
    throw std::invalid_argument("column_sums_cuda: width " + std::to_string(a.width) + " is outside 1.." + std::to_string(kMaxGrid));
  }
  const std::int64_t tiles = (a.width + cuda_kernels::kColumnTileThreads - 1) / cuda_kernels::kColumnTileThreads;
  if (a.parts < 1 || a.parts > kMaxGrid / tiles) {
    throw std::invalid_argument("column_sums_cuda: " + std::to_string(a.parts) + " parts of " + std::to_string(tiles) +
                                " column tiles is not a grid of 1.." + std::to_string(kMaxGrid) + " blocks");
  }
  const auto s = static_cast<cudaStream_t>(stream);
  using kernel_support::DeviceElement;
  switch (element) {
    case DeviceElement::f32: launch<float>(a, tiles, s); break;
    case DeviceElement::bf16: launch<__nv_bfloat16>(a, tiles, s); break;
    case DeviceElement::f16: launch<__half>(a, tiles, s); break;
  }
  const cudaError_t error = cudaGetLastError();
  if (error != cudaSuccess) {
    throw std::runtime_error(std::string("column_sums_cuda: a kernel did not launch: ") + cudaGetErrorString(error));
  }
}

}  // namespace llmrdzv::model::detail
