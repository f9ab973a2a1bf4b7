// The fused LM head + cross-entropy on the GPU, where its softmax rows run in the model's CUDA
// kernel (trainer/model/src/cuda/softmax_xent_rows.cuh): the same loss and gradients as torch's
// plain cross_entropy over the full fp32 logits on the same GPU, with the CPU tests' tolerances, in
// fp32, bf16 and fp16 under a loss scale, in one chunk or many, at a GPT-2 vocabulary; nothing
// counted; and an out-of-vocabulary target, which the GPU reports as a NaN loss.
#include <c10/cuda/CUDAFunctions.h>

#include <cmath>
#include <cstdint>

#include "loss_problem.hpp"

#include <catch2/catch.hpp>  // after torch: c10's CHECK must not replace Catch's

using loss_problem::Outcome;
using loss_problem::Problem;
using loss_problem::run;

namespace {

const at::Device kGpu(at::kCUDA, 0);

}  // namespace

TEST_CASE("the fused loss's GPU kernel is built into this trainer", "[gpu][loss]") {
#if LLMRDZV_HAVE_CUDA_KERNELS
  SUCCEED("built with the model's CUDA kernels");
#else
  FAIL("built without a CUDA compiler: the GPU loss runs on torch's ops, and these tests would not test the kernel");
#endif
}

TEST_CASE("the fused loss on the GPU equals torch's in fp32, in one chunk or many", "[gpu][loss]") {
  const Problem p(at::kFloat, 37, 24, 101, kGpu);
  const Outcome plain = run(p, false, 0, 3.0);
  for (const std::int64_t chunk : {std::int64_t{1} << 26, std::int64_t{8 * 101}, std::int64_t{1}}) {
    INFO("chunk of " << chunk << " logits");
    CHECK(loss_problem::outcomes_close(run(p, true, chunk, 3.0), plain, 1e-5, 1e-7));
  }
}

TEST_CASE("the fused loss on the GPU follows torch's in bf16 at a GPT-2 vocabulary", "[gpu][loss]") {
  const Problem p(at::kBFloat16, 1000, 64, 50257, kGpu);
  const Outcome plain = run(p, false, 0, 0.3);
  // One chunk; 2 (600 + 400 rows: bf16 logits hold twice the fp32 budget's rows); 5, the head's
  // gradient summed in fp32 by cuBLAS over them.
  for (const std::int64_t chunk : {std::int64_t{1} << 26, std::int64_t{300} * 50257, std::int64_t{100} * 50257}) {
    INFO("chunk of " << chunk << " logits");
    // Gradient entries here are ~1e-6 (one unit spread over 50k entries), so they are compared as
    // wholes: bf16 rounds each to 2^-9 of itself, and the two paths round at the same points.
    CHECK(loss_problem::outcomes_close_in_norm(run(p, true, chunk, 0.3), plain, 1e-3, 1e-2));
  }
}

TEST_CASE("the fused loss on the GPU follows torch's in fp16 under a loss scale", "[gpu][loss]") {
  const Problem p(at::kHalf, 4096, 16, 1000, kGpu);
  const Outcome plain = run(p, false, 0, 1024.0);
  const Outcome fused = run(p, true, std::int64_t{1} << 20, 1024.0);
  CHECK(loss_problem::outcomes_close(fused, plain, 2e-2, 1e-3));
  CHECK((plain.grad_weight != 0).sum().item<std::int64_t>() == (fused.grad_weight != 0).sum().item<std::int64_t>());
}

TEST_CASE("the fused loss on the GPU: nothing counted gives NaN and zero gradients, a target past the vocabulary "
          "gives NaN", "[gpu][loss]") {
  Problem p(at::kBFloat16, 37, 24, 101, kGpu);
  p.targets.fill_(-100);
  const Outcome none = run(p, true, std::int64_t{1} << 26, 1.0);
  CHECK(std::isnan(none.loss.item<float>()));
  CHECK(none.grad_hidden.abs().sum().item<float>() == 0.0f);
  CHECK(none.grad_weight.abs().sum().item<float>() == 0.0f);
  p.targets.fill_(3);
  p.targets.index_put_({5}, 101);
  const Outcome past = run(p, true, std::int64_t{1} << 26, 1.0);
  CHECK(std::isnan(past.loss.item<float>()));
  c10::cuda::device_synchronize();  // and no fault: the kernel read nothing outside the logits
}
