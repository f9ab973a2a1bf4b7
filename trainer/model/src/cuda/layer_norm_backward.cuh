// LayerNorm's backward on a GPU in one pass over the rows, and a short second kernel for the
// weight's and bias's gradients. torch's CUDA backward makes two passes with separate kernels
// (the input's gradient; then the weight's and bias's, whose column sums took ~77 us per GPT-2
// 124M call on an H200, ~2 ms of a step); here each block takes a stride of rows, keeps its
// columns' weight and bias gradient sums in registers across them, and writes one partial row
// per block, which column_sums.cuh's partial_row_sums_kernel sums.
//
// With x_hat = (x - mean) * rstd and g = dy * gamma, per row of width n:
//   dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)),  dgamma = sum over rows of dy * x_hat,
//   dbeta = sum over rows of dy.
// mean and rstd are forward's (layer_norm_forward.cuh, as torch's native_layer_norm, keeps them in fp32).
//
// Written against CUDA's built-ins that tests/support/cuda_block_emulation.hpp provides
// (threadIdx, blockIdx, gridDim, __syncthreads, __shared__) and kernel_support::to_float /
// from_float, so that the same source also runs on the CPU in the tests.
#pragma once

#include <stdint.h>

#include "column_sums.cuh"
#include "llmrdzv/kernel_support/unroll.hpp"

namespace llmrdzv::model::cuda_kernels {

constexpr int kLayerNormThreads = 256;  // a power of two: the block's tree reduction halves it
// Columns per thread: widths up to kLayerNormThreads * kLayerNormMaxColumns (4096).
constexpr int kLayerNormMaxColumns = 16;

// One block per stride of rows (r = blockIdx.x, blockIdx.x + gridDim.x, ...) of dy, x [rows, width]
// (contiguous, in T); gamma [width]; mean, rstd [rows] (fp32). Writes dx [rows, width] (T), plus
// dresidual [rows, width] where that is not null (the gradient that reaches x past the LayerNorm, as
// through a residual connection: added in fp32, rounded once), and the
// block's partial sums partial_gamma and partial_beta [gridDim.x, width] (fp32). Thread t owns
// columns t, t + kLayerNormThreads, ...: K of them, K * kLayerNormThreads >= width.
template <typename T, int K>
__global__ void layer_norm_backward_rows_kernel(const T* dy, const T* x, const float* mean, const float* rstd,
                                                const T* gamma, const T* dresidual, int64_t rows, int width, T* dx,
                                                float* partial_gamma, float* partial_beta) {
  __shared__ float sum_g[kLayerNormThreads];
  __shared__ float sum_gx[kLayerNormThreads];
  const int tid = static_cast<int>(threadIdx.x);
  float weight[K], x_hat[K], g[K], dgamma[K], dbeta[K];
  LLMRDZV_UNROLL
  for (int k = 0; k < K; ++k) {
    const int c = tid + k * kLayerNormThreads;
    weight[k] = c < width ? kernel_support::to_float(gamma[c]) : 0.0f;
    dgamma[k] = 0.0f;
    dbeta[k] = 0.0f;
  }
  const float inverse_width = 1.0f / static_cast<float>(width);
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    const T* dy_row = dy + r * width;
    const T* x_row = x + r * width;
    const float mu = mean[r], inverse_std = rstd[r];
    float own_g = 0.0f, own_gx = 0.0f;
    LLMRDZV_UNROLL
    for (int k = 0; k < K; ++k) {
      const int c = tid + k * kLayerNormThreads;
      x_hat[k] = 0.0f;
      g[k] = 0.0f;
      if (c < width) {
        const float d = kernel_support::to_float(dy_row[c]);
        x_hat[k] = (kernel_support::to_float(x_row[c]) - mu) * inverse_std;
        g[k] = d * weight[k];
        own_g += g[k];
        own_gx += g[k] * x_hat[k];
        dgamma[k] += d * x_hat[k];
        dbeta[k] += d;
      }
    }
    sum_g[tid] = own_g;
    sum_gx[tid] = own_gx;
    __syncthreads();
    for (int stride = kLayerNormThreads / 2; stride > 0; stride /= 2) {
      if (tid < stride) {
        sum_g[tid] += sum_g[tid + stride];
        sum_gx[tid] += sum_gx[tid + stride];
      }
      __syncthreads();
    }
    const float mean_g = sum_g[0] * inverse_width, mean_gx = sum_gx[0] * inverse_width;
    __syncthreads();  // every thread has read the sums before the next row overwrites them
    T* dx_row = dx + r * width;
    LLMRDZV_UNROLL
    for (int k = 0; k < K; ++k) {
      const int c = tid + k * kLayerNormThreads;
      if (c < width) {
        const float through = dresidual != nullptr ? kernel_support::to_float(dresidual[r * width + c]) : 0.0f;
        dx_row[c] = kernel_support::from_float(through + inverse_std * (g[k] - mean_g - x_hat[k] * mean_gx), dx_row);
      }
    }
  }
  LLMRDZV_UNROLL
  for (int k = 0; k < K; ++k) {
    const int c = tid + k * kLayerNormThreads;
    if (c < width) {
      partial_gamma[static_cast<int64_t>(blockIdx.x) * width + c] = dgamma[k];
      partial_beta[static_cast<int64_t>(blockIdx.x) * width + c] = dbeta[k];
    }
  }
}

}  // namespace llmrdzv::model::cuda_kernels
