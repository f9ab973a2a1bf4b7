// How the trainer asks glibc's malloc to treat large blocks, in the two phases that want opposite
// things. Training keeps freed memory in the heap (keep_freed_memory): every step allocates and
// frees the same activations, gradients and logits, and fresh mmaps would page-fault them in
// again each step. Building and filling ZeRO-3's model unit by unit is the other pattern: blocks
// of a unit's size come and go once each, interleaved with small long-lived allocations that
// split the holes they leave, so a heap that keeps everything grows by about a unit per unit
// (measured: +800 MB on each of 8 ranks building a 304M-parameter model whose every parameter
// was let go at once). While a LargeBlocksReturned lives, blocks above 1 MiB are mmapped and go
// back to the kernel when freed.
#pragma once

namespace llmrdzv::train {

// No mmapped blocks (glibc still maps the rare block a thread arena cannot hold), no trimming:
// the process keeps its peak heap, which training reaches in the first step anyway.
void keep_freed_memory();

class LargeBlocksReturned {
 public:
  LargeBlocksReturned();
  ~LargeBlocksReturned();  // keep_freed_memory() again
  LargeBlocksReturned(const LargeBlocksReturned&) = delete;
  LargeBlocksReturned& operator=(const LargeBlocksReturned&) = delete;
};

}  // namespace llmrdzv::train
