// OffloadCopies for parameters on the CPU, where "device" and host are the same memory: copies
// are synchronous, and an upload whose source already is its destination is skipped. Also picks
// the implementation for a device.
#include "offload_copies.hpp"

#include <stdexcept>

namespace llmrdzv::dist {
namespace {

class HostCopies final : public OffloadCopies {
 public:
  void begin_downloads() override {}
  void begin_uploads() override {}
  void start_download(const at::Tensor& device_src, const at::Tensor& host_dst) override { host_dst.copy_(device_src); }
  void mark_downloads(std::size_t) override {}
  void wait_downloads(std::size_t) override {}
  void order_downloads_after_uploads(std::size_t) override {}
  void start_upload(const at::Tensor& host_src, const at::Tensor& device_dst) override {
    if (host_src.data_ptr() != device_dst.data_ptr()) device_dst.copy_(host_src);
  }
  void mark_uploads(std::size_t) override {}
  void wait_uploads(std::size_t) override {}
  void end_step() override {}
  void end_downloads() override {}
  void order_after_downloads() override {}
};

}  // namespace

std::unique_ptr<OffloadCopies> make_offload_copies(c10::Device device) {
  if (device.is_cpu()) return std::make_unique<HostCopies>();
  if (device.is_cuda()) return make_cuda_offload_copies(device);
  throw std::invalid_argument("offload optimizer: parameters on " + device.str() +
                              " (only the CPU and CUDA devices are supported)");
}

}  // namespace llmrdzv::dist
