// The device<->host copies of OffloadAdamW's chunk pipeline, one implementation per device kind:
// on the CPU they are plain synchronous copies (or nothing, when both ends are the same memory);
// on CUDA they run asynchronously on a dedicated copy stream, ordered by CUDA events, so they
// overlap the host's AdamW (offload_copies_cuda.cpp, the only TU with CUDA headers).
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

  // Before a step's first download: the copies see all device work queued so far (the gradient).
  virtual void begin_step() = 0;
  // Starts copying `device_src` into host staging buffer `buffer` (0 or 1), viewed as `host_dst`.
  virtual void start_download(const at::Tensor& device_src, const at::Tensor& host_dst, int buffer) = 0;
  // Returns once the last download into `buffer` has landed.
  virtual void wait_download(int buffer) = 0;
  // Starts copying host `host_src` to `device_dst` as upload `buffer` (0 or 1). `host_src` is
  // either one of two upload staging buffers, which the host refills only after wait_upload() of
  // the same `buffer`, or the master weights, which stay untouched until the step's next download
  // has landed.
  virtual void start_upload(const at::Tensor& host_src, const at::Tensor& device_dst, int buffer) = 0;
  // Returns once the last upload started as `buffer` has read its source.
  virtual void wait_upload(int buffer) = 0;
  // After a step's last upload: device work queued from now on sees every upload (and every
  // download started before it).
  virtual void end_step() = 0;
  // After downloads started behind end_step() (a delayed update's gradient, whose download the
  // device's next forward need not wait for): marks where they end.
  virtual void end_downloads() = 0;
  // Device work queued from now on on the current stream waits until the downloads before the
  // last end_downloads() have read their sources: before the device overwrites them.
  virtual void order_after_downloads() = 0;
  // After the uploads of the forward's stage `stage` (a delayed update's weights, uploaded stage
  // by stage in the order the forward reads them): marks where they end.
  virtual void end_upload_stage(std::size_t stage) = 0;
  // Device work queued from now on on the current stream waits for the uploads before
  // end_upload_stage(stage) (nothing if no upload stage was ever marked `stage`).
  virtual void order_after_upload_stage(std::size_t stage) = 0;
  // Downloads since begin_step() that had already landed when wait_download() was called for
  // them (their CUDA event was complete): copies that ran while the host updated earlier chunks.
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
