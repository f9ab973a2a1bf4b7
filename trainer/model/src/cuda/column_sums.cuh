// Column sums of a [rows, width] table on a GPU in two deterministic passes: blocks that each
// add a stride of rows for a tile of columns into one fp32 partial row, then a kernel that adds the
// partial rows in a fixed order. A linear layer's bias gradient (the sum of the output's gradient
// over the tokens) takes both; LayerNorm's backward makes its own partial rows and takes the second.
// torch's reduction for a bias gradient took ~36 us per GPT-2 124M linear on an H200 (1.75 ms of a
// step); the first pass here reads the table once at full width.
//
// Written against the built-ins that tests/support/cuda_block_emulation.hpp provides (threadIdx,
// blockIdx, gridDim, __syncthreads, __shared__) and kernel_support::to_float / from_float, so that
// the same source also runs on the CPU in the tests.
#pragma once

#include <stdint.h>

namespace llmrdzv::model::cuda_kernels {

constexpr int kColumnTileThreads = 256;  // the first pass: one column per thread, a tile per block
constexpr int kColumnSumColumns = 32;    // the second pass: columns per block ...
constexpr int kColumnSumGroups = 8;      // ... and threads per column (32 x 8 = 256 threads)

// The entries of a [rows, width] table in T, as fp32: what column_partial_sums_kernel adds for a
// plain column sum.
template <typename T>
struct TableEntries {
  const T* table;
  __device__ __forceinline__ float operator()(int64_t i) const { return kernel_support::to_float(table[i]); }
};

// Block b of a one-dimensional grid of tiles * parts blocks takes the columns of tile b % tiles
// (kColumnTileThreads of them) and the rows b / tiles, b / tiles + parts, ...; writes the fp32 sums
// of entry(r * width + c) over them to partial[b / tiles, c] ([parts, width]). `entry` reads (or
// computes, and may also store) entry i of the row-major table.
template <typename Entry>
__global__ void column_partial_sums_kernel(Entry entry, int64_t rows, int width, int tiles, int parts, float* partial) {
  const int tile = static_cast<int>(blockIdx.x) % tiles;
  const int part = static_cast<int>(blockIdx.x) / tiles;
  const int c = tile * kColumnTileThreads + static_cast<int>(threadIdx.x);
  if (c >= width) return;
  // Four running sums, so that four rows' loads are in flight at once.
  const int64_t step = static_cast<int64_t>(parts) * width;
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  int64_t r = part;
  int64_t at = r * width + c;
  for (; r + 3 * static_cast<int64_t>(parts) < rows; r += 4 * static_cast<int64_t>(parts), at += 4 * step) {
    s0 += entry(at);
    s1 += entry(at + step);
    s2 += entry(at + 2 * step);
    s3 += entry(at + 3 * step);
  }
  for (; r < rows; r += parts, at += step) s0 += entry(at);
  partial[static_cast<int64_t>(part) * width + c] = (s0 + s1) + (s2 + s3);
}

// Sums partial_a [parts, width] (fp32) over its rows into out_a [width] (T), and partial_b into
// out_b the same way where partial_b is not null (LayerNorm's weight and bias at once). Block b
// takes columns b * kColumnSumColumns onwards; each of its kColumnSumGroups threads per column adds
// every kColumnSumGroups-th row, and the groups' sums are added in a fixed order: the same bits on
// every run.
template <typename T>
__global__ void partial_row_sums_kernel(const float* partial_a, const float* partial_b, int parts, int width, T* out_a,
                                        T* out_b) {
  __shared__ float sums_a[kColumnSumGroups][kColumnSumColumns];
  __shared__ float sums_b[kColumnSumGroups][kColumnSumColumns];
  const int tid = static_cast<int>(threadIdx.x);
  const int column = tid % kColumnSumColumns, group = tid / kColumnSumColumns;
  const int c = static_cast<int>(blockIdx.x) * kColumnSumColumns + column;
  const bool two = partial_b != nullptr;
  float sum_a = 0.0f, sum_b = 0.0f;
  if (c < width) {
    for (int p = group; p < parts; p += kColumnSumGroups) {
      sum_a += partial_a[static_cast<int64_t>(p) * width + c];
      if (two) sum_b += partial_b[static_cast<int64_t>(p) * width + c];
    }
  }
  sums_a[group][column] = sum_a;
  sums_b[group][column] = sum_b;
  __syncthreads();
  if (group == 0 && c < width) {
    for (int q = 1; q < kColumnSumGroups; ++q) {
      sum_a += sums_a[q][column];
      sum_b += sums_b[q][column];
    }
    out_a[c] = kernel_support::from_float(sum_a, out_a);
    if (two) out_b[c] = kernel_support::from_float(sum_b, out_b);
  }
}

}  // namespace llmrdzv::model::cuda_kernels
