// The device<->host copies of OffloadAdamW's chunk pipeline, one implementation per device kind:
// on the CPU they are plain synchronous copies (or nothing, when both ends are the same memory);
// on CUDA downloads and uploads run asynchronously on two dedicated copy streams, one per
// direction (a GPU's link moves data both ways at once), ordered by CUDA events, so they overlap
// each other, the host's AdamW and the compute stream (offload_copies_cuda.cpp, the only TU with
// CUDA headers).
//
// Copies are grouped by marks: mark_downloads(m) / mark_uploads(m) label the copies of one
// direction started so far, and the host (wait_*) or the device (order_after_*) then waits for
// those. Marking m again relabels it; a mark never set is waited for as done.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <cstddef>
#include <cstdint>
#include <memory>

namespace llmrdzv::dist {

class OffloadCopies {
 public:
  virtual ~OffloadCopies() = default;

  // Downloads started from now on come after all device work queued so far (the gradient's last
  // write).
  virtual void begin_downloads() = 0;
  // Uploads started from now on come after all device work queued so far (the last reads of what
  // they overwrite).
  virtual void begin_uploads() = 0;

  // Starts copying `device_src` into host memory `host_dst` (pinned on a GPU).
  virtual void start_download(const at::Tensor& device_src, const at::Tensor& host_dst) = 0;
  virtual void mark_downloads(std::size_t mark) = 0;
  // Returns once the downloads before `mark` have landed.
  virtual void wait_downloads(std::size_t mark) = 0;
  // Downloads started from now on wait until the uploads before upload mark `mark` have read
  // their sources: a download into host memory that an upload reads.
  virtual void order_downloads_after_uploads(std::size_t mark) = 0;

  // Starts copying host `host_src` (pinned on a GPU) to `device_dst`. The host must not change
  // `host_src` until a mark after it has been waited for (wait_uploads()).
  virtual void start_upload(const at::Tensor& host_src, const at::Tensor& device_dst) = 0;
  virtual void mark_uploads(std::size_t mark) = 0;
  // Returns once the uploads before `mark` have read their sources.
  virtual void wait_uploads(std::size_t mark) = 0;

  // Device work queued from now on on the current stream sees every upload started so far.
  virtual void end_step() = 0;
  // Marks the end of the downloads started so far (a delayed update's gradient, whose download the
  // device's next forward need not wait for).
  virtual void end_downloads() = 0;
  // Device work queued from now on on the current stream waits until the downloads before the
  // last end_downloads() have read their sources: before the device overwrites them.
  virtual void order_after_downloads() = 0;

  // Waits for downloads since begin_downloads() that had already landed when they were waited for
  // (their CUDA event was complete): copies that ran while the host updated earlier chunks.
  // Synchronous copies overlap nothing: 0.
  virtual std::int64_t downloads_landed_before_wait() const { return 0; }
  // After the parameters moved into their flat buffer: the device memory their old storage held,
  // which a caching allocator keeps reserved, goes back to the driver, so that the GPU's memory
  // figures (nvidia-smi) show what training holds. Nothing to do on the CPU.
  virtual void release_unused_device_memory() {}
};

// The copies for parameters on `device` (CPU or CUDA); throws std::invalid_argument otherwise.
std::unique_ptr<OffloadCopies> make_offload_copies(c10::Device device);
// The CUDA implementation (offload_copies_cuda.cpp).
std::unique_ptr<OffloadCopies> make_cuda_offload_copies(c10::Device device);

}  // namespace llmrdzv::dist
