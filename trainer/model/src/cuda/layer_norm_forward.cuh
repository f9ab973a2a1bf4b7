// LayerNorm's forward on a GPU, optionally fused with the residual add before it: a transformer
// block's `x = hidden + attention(...)` followed by `LayerNorm(x)` reads hidden and the attention's
// output once and writes x and the normalised rows in the same pass, where torch's ops make a
// separate add (three passes over the rows) and a LayerNorm (two more). torch's LayerNorm forward
// alone took ~36 us per GPT-2 124M call on an H200 against ~12 for its bytes at full bandwidth.
//
// Per row of width n: mean = sum(x) / n, var = sum((x - mean)^2) / n (two passes over the row,
// held in registers, so a large mean does not cancel the variance away), rstd = 1 / sqrt(var + eps),
// y = (x - mean) * rstd * gamma + beta; mean and rstd kept in fp32 for the backward
// (layer_norm_backward.cuh), as torch's native_layer_norm keeps them.
//
// Written against CUDA's built-ins that tests/support/cuda_block_emulation.hpp provides
// (threadIdx, blockIdx, gridDim, __syncthreads, __shared__) and kernel_support::to_float /
// from_float, so that the same source also runs on the CPU in the tests.
#pragma once

#include <math.h>
#include <stdint.h>

#include "layer_norm_backward.cuh"
#include "llmrdzv/kernel_support/unroll.hpp"

namespace llmrdzv::model::cuda_kernels {

// The sum of every thread's `own` over the block (kLayerNormThreads threads), returned to all of
// them; `scratch` is the block's shared array, free again when this returns.
__device__ __forceinline__ float block_sum(float own, float* scratch) {
  const int tid = static_cast<int>(threadIdx.x);
  scratch[tid] = own;
  __syncthreads();
  for (int stride = kLayerNormThreads / 2; stride > 0; stride /= 2) {
    if (tid < stride) scratch[tid] += scratch[tid + stride];
    __syncthreads();
  }
  const float total = scratch[0];
  __syncthreads();  // every thread has read the sum before the array is written again
  return total;
}

// One block per stride of rows (r = blockIdx.x, blockIdx.x + gridDim.x, ...) of x [rows, width]
// (contiguous, in T). With `residual` (same shape), the row is first x + residual, rounded to T as
// torch's add rounds it and written to sum; without it, sum is not touched. Writes y [rows, width]
// (T) and mean, rstd [rows] (fp32). Thread t owns columns t, t + kLayerNormThreads, ...: K of them,
// K * kLayerNormThreads >= width.
template <typename T, int K>
__global__ void layer_norm_forward_rows_kernel(const T* x, const T* residual, const T* gamma, const T* beta, int64_t rows,
                                               int width, float eps, T* sum, T* y, float* mean, float* rstd) {
  __shared__ float scratch[kLayerNormThreads];
  const int tid = static_cast<int>(threadIdx.x);
  const float inverse_width = 1.0f / static_cast<float>(width);
  float v[K];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const int64_t row = r * width;
    float own = 0.0f;
    LLMRDZV_UNROLL
    for (int k = 0; k < K; ++k) {
      const int c = tid + k * kLayerNormThreads;
      v[k] = 0.0f;
      if (c < width) {
        if (residual != nullptr) {
          const T added = kernel_support::from_float(
              kernel_support::to_float(x[row + c]) + kernel_support::to_float(residual[row + c]), sum);
          sum[row + c] = added;
          v[k] = kernel_support::to_float(added);
        } else {
          v[k] = kernel_support::to_float(x[row + c]);
        }
        own += v[k];
      }
    }
    const float mu = block_sum(own, scratch) * inverse_width;
    float squares = 0.0f;
    LLMRDZV_UNROLL
    for (int k = 0; k < K; ++k) {
      const int c = tid + k * kLayerNormThreads;
      if (c < width) squares += (v[k] - mu) * (v[k] - mu);
    }
    const float inverse_std = 1.0f / sqrtf(block_sum(squares, scratch) * inverse_width + eps);
    LLMRDZV_UNROLL
    for (int k = 0; k < K; ++k) {
      const int c = tid + k * kLayerNormThreads;
      if (c < width) {
        const float normed = (v[k] - mu) * inverse_std;
        y[row + c] = kernel_support::from_float(
            normed * kernel_support::to_float(gamma[c]) + kernel_support::to_float(beta[c]), y);
      }
    }
    if (tid == 0) {
      mean[r] = mu;
      rstd[r] = inverse_std;
    }
  }
}

}  // namespace llmrdzv::model::cuda_kernels
