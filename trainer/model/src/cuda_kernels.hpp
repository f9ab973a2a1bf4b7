// The model's CUDA kernels (cuda/*.cu), declared without CUDA's or torch's headers so that
// ordinary C++ translation units can call them: pointers to device memory, the element type,
// and the CUDA stream to run on (a cudaStream_t passed as void*). Built where CMake finds nvcc
// (LLMRDZV_HAVE_CUDA_KERNELS); otherwise the callers keep torch's ops.
#pragma once

#include <algorithm>
#include <cstdint>

#include "llmrdzv/kernel_support/device_element.hpp"

namespace llmrdzv::model::detail {

// For each row of logits [rows, row_stride] (on the GPU, in `element`), whose first `vocab`
// columns are its logits: row_loss[row] = logsumexp(row) - row[target] (fp32), and, with
// `gradients`, the row overwritten in place by softmax(row) - one_hot(target), its columns past
// `vocab` by zeros. Target -100: loss 0 and a zero row; other negative targets count as 0; a
// target >= vocab gives a NaN loss and a zero row. Asynchronous on `stream`; throws
// std::invalid_argument for a row_stride < vocab and std::runtime_error if the launch fails.
void softmax_xent_rows_cuda(void* logits, kernel_support::DeviceElement element, std::int64_t rows, std::int64_t vocab,
                            std::int64_t row_stride, const std::int64_t* targets, float* row_loss, bool gradients,
                            void* stream);

// The widest rows layer_norm_forward_cuda and layer_norm_backward_cuda take (cuda/layer_norm_*.cuh: 256 threads, 16
// columns each).
constexpr std::int64_t kLayerNormMaxWidth = 4096;

// LayerNorm's forward over rows of `width` (pointers to device memory, contiguous, in one element
// type but mean and rstd, which are fp32), optionally fused with the residual add before it.
struct LayerNormForward {
  const void* x;         // [rows, width]
  const void* residual;  // [rows, width] or null: normalise x + residual, written to sum
  const void* gamma;     // [width]
  const void* beta;      // [width]
  std::int64_t rows, width;
  std::int64_t blocks;  // the grid: each block takes every blocks-th row
  float eps;
  void* sum;    // [rows, width] out where residual is given (x + residual, rounded to the type)
  void* y;      // [rows, width] out
  float* mean;  // [rows] out
  float* rstd;  // [rows] out: 1 / sqrt(biased variance + eps)
};

// y = (v - mean) * rstd * gamma + beta per row of v = x (or x + residual), asynchronously on
// `stream`. Throws std::invalid_argument for a width outside 1..kLayerNormMaxWidth or a grid outside
// 1..2^31-1, std::runtime_error if the launch fails.
void layer_norm_forward_cuda(const LayerNormForward& args, kernel_support::DeviceElement element, void* stream);

// LayerNorm's backward over rows of `width` (pointers to device memory, contiguous, in one element
// type but mean and rstd, which are fp32 [rows] as forward kept them).
struct LayerNormBackward {
  const void* dy;         // [rows, width]
  const void* x;          // [rows, width], forward's input
  const float* mean;      // [rows]
  const float* rstd;      // [rows]
  const void* gamma;      // [width]
  const void* dresidual;  // [rows, width] or null: a gradient that reaches x past the LayerNorm, added to dx
  std::int64_t rows, width;
  std::int64_t blocks;  // the row kernel's grid: each block takes every blocks-th row
  float* partial_gamma;  // [blocks, width] scratch
  float* partial_beta;   // [blocks, width] scratch
  void* dx;              // [rows, width] out
  void* dgamma;          // [width] out
  void* dbeta;           // [width] out
};

// dx (+ dresidual), dgamma and dbeta of y = (x - mean) * rstd * gamma + beta, asynchronously on `stream`; the
// same bits on every run. Throws std::invalid_argument for a width outside 1..kLayerNormMaxWidth or
// a grid outside 1..2^31-1, std::runtime_error if a launch fails.
void layer_norm_backward_cuda(const LayerNormBackward& args, kernel_support::DeviceElement element, void* stream);

// out[c] = the sum over the rows of table[r, c] (a [rows, width] table on the GPU, contiguous, in
// `element`; out [width] in the same type), added in fp32 in a fixed order: each of `parts` groups
// of rows into partial [parts, width] (fp32 scratch), then those. Asynchronous on `stream`. Throws
// std::invalid_argument for a width outside 1..2^30, parts under 1 or a grid past 2^31-1 blocks,
// std::runtime_error if a launch fails; no rows writes zeros.
struct ColumnSums {
  const void* table;
  std::int64_t rows, width;
  std::int64_t parts;
  float* partial;
  void* out;
};
void column_sums_cuda(const ColumnSums& args, kernel_support::DeviceElement element, void* stream);

// GELU's tanh approximation's backward over x [rows, width] (HF's gelu_new) with the column sums of
// its result: dx = dy * gelu'(x) (in the element type), column_sums[c] = the sum over the rows of
// dx[r, c] (the bias gradient of the linear layer whose output x is), in fp32 through partial
// [parts, width] as column_sums_cuda adds. Asynchronous on `stream`; throws as column_sums_cuda.
struct GeluBackwardColumnSums {
  const void* dy;  // [rows, width]
  const void* x;   // [rows, width], GELU's input
  std::int64_t rows, width;
  std::int64_t parts;
  float* partial;
  void* dx;           // [rows, width] out
  void* column_sums;  // [width] out
};
void gelu_tanh_backward_column_sums_cuda(const GeluBackwardColumnSums& args, kernel_support::DeviceElement element,
                                         void* stream);

// Columns per block of the first pass of column_sums_cuda and gelu_tanh_backward_column_sums_cuda
// (cuda/column_sums.cuh).
constexpr std::int64_t kColumnSumTile = 256;

// The `parts` for column_sums_cuda: about eight blocks per multiprocessor (as many of 256 threads
// as can be resident, each with four rows' loads in flight) over the table's column tiles, and no
// more parts than rows.
inline std::int64_t column_sum_parts(std::int64_t rows, std::int64_t width, std::int64_t multiprocessors) {
  const std::int64_t tiles = (width + kColumnSumTile - 1) / kColumnSumTile;
  return std::clamp<std::int64_t>(8 * multiprocessors / std::max<std::int64_t>(tiles, 1), 1, std::max<std::int64_t>(rows, 1));
}

}  // namespace llmrdzv::model::detail
