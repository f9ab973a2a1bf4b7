// Linear layers with a bias on the GPU as every family's modules run them (fast_linear, which takes
// trainer/model/src/cuda_linear.hpp there): the output equals at::linear's, the input's and weight's
// gradients follow at::linear's backward, and the bias's gradient from the column-sum kernels
// (cuda/column_sums.cuh) follows the output's gradient summed over the tokens in double, in fp32,
// bf16 and fp16, at GPT-2 124M's and XL's widths; the same bits on a second run. The same for an
// MLP's first layer with GELU's tanh approximation (linear_activate), whose bias gradient comes
// out of GELU's backward kernel (cuda/gelu_backward.cuh).
#include <ATen/autocast_mode.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/linear.h>

#include <cstdint>
#include <vector>

#include "cuda_linear.hpp"
#include "fast_linear.hpp"

#include <catch2/catch.hpp>  // after torch: c10's CHECK must not replace Catch's

namespace {

const at::Device kGpu(at::kCUDA, 0);

double relative_error(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor bd = b.to(at::kDouble);
  return (a.to(at::kDouble) - bd).norm().item<double>() / bd.norm().item<double>();
}

struct Run {
  at::Tensor y, dx, dw, db;
};

// fast_linear, or with `gelu` linear_activate's GELU (tanh) layer, over copies of the inputs.
Run run_ours(const at::Tensor& x0, const at::Tensor& w0, const at::Tensor& b0, const at::Tensor& dy, bool gelu) {
  const at::Tensor x = x0.clone().requires_grad_(true), w = w0.clone().requires_grad_(true), b = b0.clone().requires_grad_(true);
  const at::Tensor y = gelu ? llmrdzv::model::detail::cuda_linear_gelu_tanh(x, w, b) : llmrdzv::model::detail::fast_linear(x, w, b);
  y.backward(dy);
  return {y.detach(), x.grad(), w.grad(), b.grad()};
}

void check_linear(at::ScalarType type, std::vector<std::int64_t> shape, std::int64_t out, double tolerance,
                  bool gelu = false) {
  INFO(c10::toString(type) << " input [" << shape[0] << ", " << shape[1] << ", " << shape[2] << "] -> " << out
                           << (gelu ? ", GELU" : ""));
  torch::manual_seed(static_cast<std::uint64_t>(out));
  const std::int64_t in = shape.back();
  const at::Tensor x0 = at::randn(shape, at::TensorOptions(kGpu)).to(type);
  const at::Tensor w0 = (at::randn({out, in}, at::TensorOptions(kGpu)) * 0.02).to(type);
  const at::Tensor b0 = (at::randn({out}, at::TensorOptions(kGpu)) * 0.1).to(type);
  std::vector<std::int64_t> out_shape = shape;
  out_shape.back() = out;
  const at::Tensor dy = (at::randn(out_shape, at::TensorOptions(kGpu)) + 0.25).to(type);  // a nonzero mean per column
  REQUIRE(llmrdzv::model::detail::linear_on_cuda_kernel(x0, w0, b0));

  const Run ours = run_ours(x0, w0, b0, dy, gelu);
  CHECK(at::equal(ours.y, gelu ? at::gelu(at::linear(x0, w0, b0), "tanh") : at::linear(x0, w0, b0)));
  REQUIRE(ours.db.scalar_type() == type);

  // torch's linear in double: the reference for all three gradients.
  const at::Tensor xd = x0.to(at::kDouble).requires_grad_(true), wd = w0.to(at::kDouble).requires_grad_(true),
                   bd = b0.to(at::kDouble).requires_grad_(true);
  const at::Tensor yd = at::linear(xd, wd, bd);
  (gelu ? at::gelu(yd, "tanh") : yd).backward(dy.to(at::kDouble));
  CHECK(relative_error(ours.dx, xd.grad()) <= tolerance);
  CHECK(relative_error(ours.dw, wd.grad()) <= tolerance);
  CHECK(relative_error(ours.db, bd.grad()) <= tolerance);

  const Run again = run_ours(x0, w0, b0, dy, gelu);
  CHECK(at::equal(again.db, ours.db));
}

}  // namespace

TEST_CASE("A linear layer's GPU bias gradient kernel gives the gradients of torch's linear in double (fp32)",
          "[gpu][linear]") {
  check_linear(at::kFloat, {4, 257, 768}, 2304, 1e-5);  // GPT-2 124M's qkv
  check_linear(at::kFloat, {2, 100, 1600}, 6400, 1e-5); // XL's MLP
  check_linear(at::kFloat, {1, 3, 7}, 5, 1e-5);
}

TEST_CASE("A linear layer's GPU bias gradient kernel follows torch's linear in double within bf16's and fp16's rounding",
          "[gpu][linear]") {
  check_linear(at::kBFloat16, {16, 1024, 768}, 3072, 1e-2);
  check_linear(at::kBFloat16, {16, 1024, 3072}, 768, 1e-2);
  check_linear(at::kHalf, {4, 512, 768}, 768, 2e-3);
}

TEST_CASE("An MLP's first layer with GELU (tanh) on the GPU: its fused backward gives torch's gradients in double",
          "[gpu][linear][gelu]") {
  check_linear(at::kFloat, {4, 257, 768}, 3072, 1e-5, /*gelu=*/true);
  check_linear(at::kFloat, {2, 100, 1600}, 6400, 1e-5, true);
  check_linear(at::kBFloat16, {16, 1024, 768}, 3072, 1e-2, true);
  check_linear(at::kHalf, {4, 512, 768}, 3072, 2e-3, true);
}

TEST_CASE("A linear layer without a bias, in mixed types or under autocast takes at::linear", "[gpu][linear]") {
  using llmrdzv::model::detail::linear_on_cuda_kernel;
  const at::Tensor x = at::randn({2, 3, 8}, at::TensorOptions(kGpu));
  const at::Tensor w = at::randn({4, 8}, at::TensorOptions(kGpu));
  const at::Tensor b = at::randn({4}, at::TensorOptions(kGpu));
  CHECK(linear_on_cuda_kernel(x, w, b));
  CHECK_FALSE(linear_on_cuda_kernel(x, w, at::Tensor()));
  CHECK_FALSE(linear_on_cuda_kernel(x.to(at::kBFloat16), w, b));
  CHECK_FALSE(linear_on_cuda_kernel(x.cpu(), w.cpu(), b.cpu()));
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  const bool under_autocast = linear_on_cuda_kernel(x, w, b);
  at::autocast::set_autocast_enabled(at::kCUDA, false);
  CHECK_FALSE(under_autocast);
}
