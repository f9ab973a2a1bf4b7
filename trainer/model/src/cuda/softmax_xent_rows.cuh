// The fused cross-entropy's softmax rows on a GPU, as one kernel: each block takes one row of a
// chunk's logits (the LM head's output, in the head's type), finds its logsumexp in one pass (a
// running max and sum per thread, merged across the block), writes the row's loss, and then
// overwrites the row in place with its gradient, softmax less the one-hot target, rounded to the
// logits' type. torch's ops for the same maths (a copy to fp32, logsumexp, sub, exp, scatter_add,
// mul, a copy back) make about fifteen passes over a chunk; this reads it from memory once and
// writes it once.
// Rows are read and written 16 bytes at a time where their alignment allows.
// Each thread keeps its first kHeldPacks packs in registers between the two halves, and the rest
// of the row is read again. Holding them caps the kernel at 64 registers, so two blocks share a
// multiprocessor: ~260 rows of 100 KB (GPT-2 in bf16) in flight across an H100, about half its
// 50 MB L2, so the second read of a row's unheld columns should come from L2, not memory. (With 4
// blocks per multiprocessor, as without holding, the rows in flight would fill the L2; holding a
// whole row takes 128 registers and one block per multiprocessor.)
//
// Written against a small set of CUDA's built-ins (threadIdx, blockIdx, __syncthreads,
// __shared__, expf/logf/fmaxf) and the kernel_support::to_float/from_float overloads for the element type
// (llmrdzv/kernel_support/device_convert.cuh), so that tests can also run this very source under a CPU
// emulation of a block (tests/support/cuda_block_emulation.hpp).
#pragma once

#include <math.h>
#include <stdint.h>

#include "llmrdzv/kernel_support/unroll.hpp"

namespace llmrdzv::model::cuda_kernels {

constexpr int kSoftmaxRowThreads = 512;  // a power of two: the block's tree reduction halves it
constexpr int64_t kIgnoredTarget = -100;
// Packs each thread holds in registers from the first half to the second: 5 x 16 bytes, 20 of the
// 64 registers that two blocks of 512 threads per multiprocessor leave a thread (ptxas -v: 64 for
// bf16 on sm_90, no spills); 5 x 8 bf16 x 512 threads = 20480 columns, 41% of a GPT-2 row.
constexpr int kHeldPacks = 5;

// A running logsumexp: sum of exp(x - max) over the values seen.
struct MaxSum {
  float max;
  float sum;
};

__device__ __forceinline__ MaxSum combine(MaxSum a, MaxSum b) {
  const float m = fmaxf(a.max, b.max);  // never NaN: a NaN logit makes the sum NaN instead
  if (m == -INFINITY) return {m, a.sum + b.sum};
  return {m, a.sum * expf(a.max - m) + b.sum * expf(b.max - m)};
}

// A running max and sum, with one more value.
__device__ __forceinline__ void push(MaxSum& acc, float x) {
  if (x > acc.max) {
    acc.sum = acc.sum * expf(acc.max - x) + 1.0f;
    acc.max = x;
  } else if (x != -INFINITY) {
    acc.sum += expf(x - acc.max);  // NaN stays NaN
  }
}

// P elements of T read or written as one aligned load or store (16 bytes for P = 16 / sizeof(T)).
template <typename T, int P>
struct alignas(sizeof(T) * P) Pack {
  T v[P];
};

// One block per row of logits [rows, row_stride], of which the first `vocab` columns are the
// row's logits; with gradients the rest get zero (the head's product pads the vocabulary so that
// its leading dimension suits the tensor cores). targets[row] is the row's target id,
// kIgnoredTarget for a row that does not count (loss 0, gradient 0); other negative ids count as
// 0, as the torch path's clamp does; an id at or past `vocab` gives a NaN loss and a zero
// gradient row (no read outside the row). row_loss[row] gets logsumexp - logit[target].
// P > 1 reads and writes P elements at a time: `logits` must then be aligned to sizeof(T) * P
// bytes and row_stride a multiple of P (the launcher checks); the last vocab % P columns go one by one.
template <typename T, int P>
__global__ void __launch_bounds__(kSoftmaxRowThreads, 2)
    softmax_xent_rows_kernel(T* logits, int64_t vocab, int64_t row_stride, const int64_t* targets, float* row_loss,
                             bool gradients) {
  __shared__ MaxSum partial[kSoftmaxRowThreads];
  __shared__ float picked;
  const int64_t r = blockIdx.x;
  const int tid = static_cast<int>(threadIdx.x);
  T* row = logits + r * row_stride;
  Pack<T, P>* packs = reinterpret_cast<Pack<T, P>*>(row);
  const int64_t whole = vocab / P, rest = whole * P;  // packs, and the first column after them
  int64_t target = targets[r];
  const bool ignored = target == kIgnoredTarget;
  if (target < 0) target = 0;
  if (ignored || target >= vocab) {  // the same for every thread of the block: no barrier is skipped
    if (tid == 0) row_loss[r] = ignored ? 0.0f : NAN;
    if (gradients) {
      for (int64_t i = tid; i < row_stride; i += kSoftmaxRowThreads) row[i] = kernel_support::from_float(0.0f, row);
    }
    return;
  }
  if (tid == 0) picked = kernel_support::to_float(row[target]);  // read before any thread overwrites the row
  // Pack k of the row is thread k % threads's (k / threads)-th: its first kHeldPacks are held.
  const auto held_index = [&](int j) { return tid + static_cast<int64_t>(j) * kSoftmaxRowThreads; };
  constexpr int64_t kFirstStreamed = static_cast<int64_t>(kHeldPacks) * kSoftmaxRowThreads;
  Pack<T, P> held[kHeldPacks];
  LLMRDZV_UNROLL
  for (int j = 0; j < kHeldPacks; ++j) {  // every load issued before any is used
    if (held_index(j) < whole) held[j] = packs[held_index(j)];
  }
  MaxSum acc{-INFINITY, 0.0f};
  LLMRDZV_UNROLL
  for (int j = 0; j < kHeldPacks; ++j) {
    if (held_index(j) >= whole) continue;
    for (int q = 0; q < P; ++q) push(acc, kernel_support::to_float(held[j].v[q]));
  }
  for (int64_t k = tid + kFirstStreamed; k < whole; k += kSoftmaxRowThreads) {
    const Pack<T, P> p = packs[k];
    for (int q = 0; q < P; ++q) push(acc, kernel_support::to_float(p.v[q]));
  }
  for (int64_t i = rest + tid; i < vocab; i += kSoftmaxRowThreads) push(acc, kernel_support::to_float(row[i]));
  partial[tid] = acc;
  __syncthreads();
  for (int stride = kSoftmaxRowThreads / 2; stride > 0; stride /= 2) {
    if (tid < stride) partial[tid] = combine(partial[tid], partial[tid + stride]);
    __syncthreads();
  }
  const float lse = partial[0].max + logf(partial[0].sum);
  if (tid == 0) row_loss[r] = lse - picked;
  if (!gradients) return;
  const auto gradient = [&](int64_t i, T x) {
    float g = expf(kernel_support::to_float(x) - lse);
    if (i == target) g -= 1.0f;
    return kernel_support::from_float(g, row);
  };
  const auto write_pack = [&](int64_t k, Pack<T, P> p) {
    for (int q = 0; q < P; ++q) p.v[q] = gradient(k * P + q, p.v[q]);
    packs[k] = p;
  };
  LLMRDZV_UNROLL
  for (int j = 0; j < kHeldPacks; ++j) {
    if (held_index(j) < whole) write_pack(held_index(j), held[j]);
  }
  for (int64_t k = tid + kFirstStreamed; k < whole; k += kSoftmaxRowThreads) write_pack(k, packs[k]);
  for (int64_t i = rest + tid; i < vocab; i += kSoftmaxRowThreads) row[i] = gradient(i, row[i]);
  for (int64_t i = vocab + tid; i < row_stride; i += kSoftmaxRowThreads) row[i] = kernel_support::from_float(0.0f, row);
}

}  // namespace llmrdzv::model::cuda_kernels
