// OffloadCopies on CUDA: downloads of gradients (into pinned host buffers) run on one dedicated
// stream from the pool and uploads of new weights (from pinned host buffers, or from the pinned
// master weights of an fp32 model) on another, so the two directions share no queue: a GPU's link
// carries both at once (on the H100 host measured, ~51 GB/s down and ~37 GB/s up), and a
// download never waits behind an upload unless it overwrites the upload's source. Events order
// everything else: each copy stream waits for the compute stream's work where a step's copies
// begin (the gradient is complete; the device has read what the uploads overwrite); the host
// waits for a download mark before it reads what landed, and for an upload mark before it
// changes an upload's source; the download stream waits for an upload mark before it overwrites
// that upload's source; the compute stream waits for the uploads (end_step()) and, before it
// next writes the gradient, for the downloads reading it (order_after_downloads()). The host's waits may come from a background
// thread (a delayed update), which also starts uploads. Compiled and linked against the CUDA
// LibTorch on every build; it can only run on a GPU.
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <atomic>
#include <vector>

#include "offload_copies.hpp"

namespace llmrdzv::dist {
namespace {

// The marked events of one copy stream, used by one thread at a time (a background update's
// thread, between its start and the join of it); a mark never recorded is done.
class Marks {
 public:
  void record(std::size_t mark, const c10::cuda::CUDAStream& stream) {
    if (mark >= events_.size()) events_.resize(mark + 1);
    events_[mark].record(stream);
  }
  void block(std::size_t mark, const c10::cuda::CUDAStream& stream) {
    if (mark < events_.size()) events_[mark].block(stream);
  }
  // Returns whether the copies before `mark` are done, after waiting for them.
  bool synchronize(std::size_t mark) {
    if (mark >= events_.size()) return true;
    const bool done = events_[mark].query();
    events_[mark].synchronize();
    return done;
  }

 private:
  std::vector<at::cuda::CUDAEvent> events_;
};

class CudaCopies final : public OffloadCopies {
 public:
  explicit CudaCopies(c10::Device device)
      : device_index_(device.index() < 0 ? c10::cuda::current_device() : device.index()),
        download_stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device_index_)),
        upload_stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device_index_)) {}

  void release_unused_device_memory() override { c10::cuda::CUDACachingAllocator::emptyCache(); }

  void begin_downloads() override {
    landed_before_wait_ = 0;
    downloads_start_.record(compute_stream());
    downloads_start_.block(download_stream_);
  }

  void begin_uploads() override {
    uploads_start_.record(compute_stream());
    uploads_start_.block(upload_stream_);
  }

  void start_download(const at::Tensor& device_src, const at::Tensor& host_dst) override {
    const c10::cuda::CUDAStreamGuard on_stream(download_stream_);
    host_dst.copy_(device_src, /*non_blocking=*/true);
  }

  void mark_downloads(std::size_t mark) override { downloads_.record(mark, download_stream_); }

  // The waits may come from another thread (OffloadAdamW's delayed update): the guard keeps a
  // thread that never chose a device from making a context on GPU 0.
  void wait_downloads(std::size_t mark) override {
    const c10::cuda::CUDAGuard on_device(device_index_);
    if (downloads_.synchronize(mark)) ++landed_before_wait_;
  }

  void order_downloads_after_uploads(std::size_t mark) override { uploads_.block(mark, download_stream_); }

  void start_upload(const at::Tensor& host_src, const at::Tensor& device_dst) override {
    const c10::cuda::CUDAStreamGuard on_stream(upload_stream_);
    device_dst.copy_(host_src, /*non_blocking=*/true);
  }

  void mark_uploads(std::size_t mark) override { uploads_.record(mark, upload_stream_); }

  void wait_uploads(std::size_t mark) override {
    const c10::cuda::CUDAGuard on_device(device_index_);
    uploads_.synchronize(mark);
  }

  void end_step() override {
    all_uploads_.record(upload_stream_);
    all_uploads_.block(compute_stream());
  }

  void end_downloads() override { downloads_read_.record(download_stream_); }

  void order_after_downloads() override { downloads_read_.block(compute_stream()); }

  std::int64_t downloads_landed_before_wait() const override { return landed_before_wait_; }

 private:
  c10::cuda::CUDAStream compute_stream() const { return c10::cuda::getCurrentCUDAStream(device_index_); }

  c10::DeviceIndex device_index_;
  c10::cuda::CUDAStream download_stream_, upload_stream_;
  at::cuda::CUDAEvent downloads_start_, uploads_start_, all_uploads_, downloads_read_;
  Marks downloads_, uploads_;
  std::atomic<std::int64_t> landed_before_wait_ = 0;  // counted by the thread that waits
};

}  // namespace

std::unique_ptr<OffloadCopies> make_cuda_offload_copies(c10::Device device) {
  return std::make_unique<CudaCopies>(device);
}

}  // namespace llmrdzv::dist
