// Runs a CUDA kernel's own source on the CPU, one block at a time, each of the block's threads a
// fiber (ucontext) of this thread: threadIdx/blockIdx are set as each runs, __syncthreads hands
// control back to a round-robin scheduler, and __shared__ variables are statics (one block runs at
// a time, so they are the block's). A round resumes every thread once, so no thread passes a
// barrier before the whole block has reached it. It covers kernels that use only these built-ins
// (no warp shuffles or atomics; __launch_bounds__ is ignored), and refuses a block whose threads
// reach __syncthreads a different number of times. Threads run one after another between barriers,
// each round in a new shuffled order (deterministic per block), so a race between two threads of
// one barrier phase (one writes a slot another reads) gives order-dependent results a test against
// a reference can see; a race whose every order gives the same result goes unseen.
//
// The element conversions the kernels call (kernel_support::to_float/from_float; for nvcc in
// llmrdzv/kernel_support/device_convert.cuh) are given here for torch's host types: fp32,
// c10::BFloat16 and c10::Half, which round to nearest even as CUDA's _rn conversions do. Include
// this before the kernel's .cuh. It checks a kernel's indexing, reductions and edge cases on a
// machine without a GPU; the GPU tests (ctest -L gpu) check it on the hardware.
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <ucontext.h>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <numeric>
#include <random>
#include <stdexcept>
#include <vector>

#define __global__
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

struct EmulatedDim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline EmulatedDim3 threadIdx, blockIdx, blockDim, gridDim;

namespace llmrdzv::kernel_support {
inline float to_float(float x) { return x; }
inline float to_float(c10::BFloat16 x) { return static_cast<float>(x); }
inline float to_float(c10::Half x) { return static_cast<float>(x); }
inline float from_float(float x, const float*) { return x; }
inline c10::BFloat16 from_float(float x, const c10::BFloat16*) { return c10::BFloat16(x); }
inline c10::Half from_float(float x, const c10::Half*) { return c10::Half(x); }
}  // namespace llmrdzv::kernel_support

namespace cuda_emulation {

struct Block {
  ucontext_t scheduler{};
  std::vector<ucontext_t> threads;
  std::vector<std::vector<char>> stacks;
  std::vector<bool> finished;
  unsigned current = 0;
  const std::function<void()>* kernel = nullptr;
};
inline Block block_state;

inline void thread_entry() {
  (*block_state.kernel)();
  block_state.finished[block_state.current] = true;  // then back to the scheduler (uc_link)
}

// kernel() as if launched <<<grid, block>>>: every block in turn, its threads in rounds from one
// __syncthreads to the next, each round in a shuffled order.
inline void launch(unsigned grid, unsigned block, const std::function<void()>& kernel) {
  constexpr std::size_t kStack = 256 * 1024;
  Block& b = block_state;
  b.kernel = &kernel;
  b.threads.assign(block, ucontext_t{});
  b.stacks.resize(block);
  blockDim = {block, 1, 1};
  gridDim = {grid, 1, 1};
  for (unsigned g = 0; g < grid; ++g) {
    blockIdx = {g, 0, 0};
    b.finished.assign(block, false);
    for (unsigned t = 0; t < block; ++t) {
      b.stacks[t].resize(kStack);
      getcontext(&b.threads[t]);
      b.threads[t].uc_stack.ss_sp = b.stacks[t].data();
      b.threads[t].uc_stack.ss_size = kStack;
      b.threads[t].uc_link = &b.scheduler;
      makecontext(&b.threads[t], thread_entry, 0);
    }
    std::vector<unsigned> order(block);
    std::iota(order.begin(), order.end(), 0u);
    std::mt19937 shuffle(g + 1);
    for (bool running = true; running;) {
      unsigned done = 0;
      std::shuffle(order.begin(), order.end(), shuffle);
      for (const unsigned t : order) {
        if (b.finished[t]) continue;
        b.current = t;
        threadIdx = {t, 0, 0};
        swapcontext(&b.scheduler, &b.threads[t]);
        done += b.finished[t] ? 1 : 0;
      }
      const unsigned left = block - static_cast<unsigned>(std::count(b.finished.begin(), b.finished.end(), true));
      if (left != 0 && done != 0) {
        throw std::logic_error("emulated kernel: some threads of a block ended while others wait at __syncthreads");
      }
      running = left != 0;
    }
  }
}

}  // namespace cuda_emulation

inline void __syncthreads() {
  cuda_emulation::Block& b = cuda_emulation::block_state;
  swapcontext(&b.threads[b.current], &b.scheduler);
}
