// HostRead on the GPU (trainer/engine/host_read.hpp), as the training loop reads a logging step's
// loss and gradient norm: the value is the one the number had when the read started, even when work
// queued after the read changes the tensor; and the read waits only for its own copy, not for the
// work queued after it (checked from a CUDA event: that work is still running when value() returns).
#include <ATen/TensorOperators.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/ops/full.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/randn.h>
#include <c10/cuda/CUDAStream.h>

#include "llmrdzv/engine/training_engine.hpp"

#include <catch2/catch.hpp>  // after torch: c10's CHECK must not replace Catch's

namespace {

const at::Device kGpu(at::kCUDA, 0);

}  // namespace

TEST_CASE("HostRead on the GPU gives the value when the read started and does not wait for later work",
          "[gpu][host_read]") {
  at::Tensor value = at::full({}, 1.25, at::TensorOptions(kGpu).dtype(at::kFloat));
  const at::Tensor a = at::randn({8192, 8192}, at::TensorOptions(kGpu));
  at::cuda::CUDAEvent done;
  llmrdzv::engine::HostRead read(value);
  // ~70 ms of products on an H100 in fp32, then the value changes: both queued after the read.
  at::Tensor product = a;
  for (int i = 0; i < 64; ++i) product = at::mm(product, a) * 1e-4;
  value.fill_(7.0);
  done.record(c10::cuda::getCurrentCUDAStream());
  CHECK(read.value() == 1.25);
  CHECK_FALSE(done.query());  // the products were still running when the read returned
  done.synchronize();
  CHECK(value.item<double>() == 7.0);
}

TEST_CASE("A gradient norm whose read started, then copied, reads the same on the GPU", "[gpu][host_read]") {
  llmrdzv::engine::GradientNorm norm(at::full({}, 3.5, at::TensorOptions(kGpu).dtype(at::kFloat)));
  norm.start_read();
  const llmrdzv::engine::GradientNorm copy = norm;
  CHECK(copy.value() == 3.5);
  CHECK(norm.value() == 3.5);
}
