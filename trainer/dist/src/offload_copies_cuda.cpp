// OffloadCopies on CUDA: every copy runs on one dedicated stream from the pool, so downloads of
// gradients (into pinned staging buffers) and uploads of new weights (from pinned staging
// buffers, or from the pinned master weights of an fp32 model) overlap the host's AdamW and the
// compute stream. Events order it all: the copy stream waits for the compute stream's gradient at
// the start of a step, the host waits for each download before updating its chunk and for each
// upload before refilling its buffer, and the compute stream waits for the last upload before
// the all-gather. A delayed update's gradient download is queued after that point: the compute
// stream waits for it only where it next writes the gradient (order_after_downloads()), and its
// weights' upload goes in stages that the forward waits for one by one as it reaches them. Because the copy stream runs in order, a step's first download lands only after
// the previous step's uploads have read the master weights, so the host never overwrites weights
// still being uploaded. Compiled and linked against the CUDA LibTorch on every build; it can
// only run on a GPU.
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <array>
#include <vector>

#include "offload_copies.hpp"

namespace llmrdzv::dist {
namespace {

class CudaCopies final : public OffloadCopies {
 public:
  explicit CudaCopies(c10::Device device)
      : device_index_(device.index() < 0 ? c10::cuda::current_device() : device.index()),
        copy_stream_(c10::cuda::getStreamFromPool(/*isHighPriority=*/false, device_index_)) {}

  void release_unused_device_memory() override { c10::cuda::CUDACachingAllocator::emptyCache(); }

  void begin_step() override {
    landed_before_wait_ = 0;
    gradient_ready_.record(c10::cuda::getCurrentCUDAStream(device_index_));
    gradient_ready_.block(copy_stream_);
  }

  void start_download(const at::Tensor& device_src, const at::Tensor& host_dst, int buffer) override {
    c10::cuda::CUDAStreamGuard on_copy_stream(copy_stream_);
    host_dst.copy_(device_src, /*non_blocking=*/true);
    downloaded_[buffer].record(copy_stream_);
  }

  // The waits may come from another thread (OffloadAdamW's delayed update): the guard keeps a
  // thread that never chose a device from making a context on GPU 0.
  void wait_download(int buffer) override {
    const c10::cuda::CUDAGuard on_device(device_index_);
    if (downloaded_[buffer].query()) ++landed_before_wait_;
    downloaded_[buffer].synchronize();
  }

  void start_upload(const at::Tensor& host_src, const at::Tensor& device_dst, int buffer) override {
    c10::cuda::CUDAStreamGuard on_copy_stream(copy_stream_);
    device_dst.copy_(host_src, /*non_blocking=*/true);
    uploaded_from_[buffer].record(copy_stream_);
  }

  void wait_upload(int buffer) override {
    const c10::cuda::CUDAGuard on_device(device_index_);
    uploaded_from_[buffer].synchronize();
  }

  void end_step() override {
    uploaded_.record(copy_stream_);
    uploaded_.block(c10::cuda::getCurrentCUDAStream(device_index_));
  }

  void end_downloads() override { downloads_read_.record(copy_stream_); }

  void order_after_downloads() override { downloads_read_.block(c10::cuda::getCurrentCUDAStream(device_index_)); }

  void end_upload_stage(std::size_t stage) override {
    if (stage >= stage_uploaded_.size()) stage_uploaded_.resize(stage + 1);
    stage_uploaded_[stage].record(copy_stream_);
  }

  void order_after_upload_stage(std::size_t stage) override {
    if (stage < stage_uploaded_.size()) stage_uploaded_[stage].block(c10::cuda::getCurrentCUDAStream(device_index_));
  }

  std::int64_t downloads_landed_before_wait() const override { return landed_before_wait_; }

 private:
  c10::DeviceIndex device_index_;
  c10::cuda::CUDAStream copy_stream_;
  at::cuda::CUDAEvent gradient_ready_, uploaded_, downloads_read_;
  std::array<at::cuda::CUDAEvent, 2> downloaded_, uploaded_from_;
  std::vector<at::cuda::CUDAEvent> stage_uploaded_;
  std::int64_t landed_before_wait_ = 0;
};

}  // namespace

std::unique_ptr<OffloadCopies> make_cuda_offload_copies(c10::Device device) {
  return std::make_unique<CudaCopies>(device);
}

}  // namespace llmrdzv::dist
