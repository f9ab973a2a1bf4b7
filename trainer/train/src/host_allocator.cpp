// glibc malloc's settings for training and for building a sharded model (host_allocator.hpp).
#include "host_allocator.hpp"

#include <malloc.h>

#include <limits>

namespace llmrdzv::train {

// glibc's malloc serves blocks above 128 KiB-32 MiB (its sliding mmap threshold) with fresh mmaps and
// trims the heap top on free, so every training step page-faults its activations, gradients and
// logits in again (the kernel zeroes each page): 10-20% of a gpt2-124M step on 2 cores. Keep freed
// memory in the heap for the next step instead. The maths is untouched.
void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  mallopt(M_TOP_PAD, 64 << 20);
#endif
}

LargeBlocksReturned::LargeBlocksReturned() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_MMAP_MAX, 1 << 16);
#endif
}

LargeBlocksReturned::~LargeBlocksReturned() { keep_freed_memory(); }

}  // namespace llmrdzv::train
