// LayerNorm on the GPU as the GPT-2 and OPT modules run it (trainer/model/src/fast_layer_norm.hpp):
// the trainer's forward kernel (cuda/layer_norm_forward.cuh), alone and fused with the residual add
// before it, and its one-pass backward kernel (cuda/layer_norm_backward.cuh); the output and the
// gradients for the input(s), weight and bias are checked against torch's LayerNorm in double on
// the same GPU, in fp32, bf16 and fp16, at GPT-2 124M's, XL's and the widest taken width; a width
// past it takes torch's module and is still right.
#include <ATen/ops/layer_norm.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/modules/normalization.h>

#include <cstdint>
#include <utility>
#include <vector>

#include "fast_layer_norm.hpp"

#include <catch2/catch.hpp>  // after torch: c10's CHECK must not replace Catch's

namespace {

const at::Device kGpu(at::kCUDA, 0);

struct Grads {
  at::Tensor x, weight, bias;
  at::Tensor y;  // the forward's output
};

// |a - b| over |b|, over whole tensors.
double relative_error(const at::Tensor& a, const at::Tensor& b) {
  const at::Tensor bd = b.to(at::kDouble);
  return (a.to(at::kDouble) - bd).norm().item<double>() / bd.norm().item<double>();
}

// Ours (detail::layer_norm) and the double reference on the same data; both sets of gradients.
std::pair<Grads, Grads> gradients(at::ScalarType type, std::vector<std::int64_t> shape, bool expect_kernel) {
  torch::manual_seed(static_cast<std::uint64_t>(shape.back()));
  const std::int64_t width = shape.back();
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({width}).eps(1e-5));
  norm->to(kGpu, type);
  {
    const torch::NoGradGuard no_grad;
    norm->weight.normal_(1.0, 0.3);
    norm->bias.normal_(0.0, 0.3);
  }
  const at::Tensor x0 = (at::randn(shape, at::TensorOptions(kGpu)) * 3 + 1).to(type);
  const at::Tensor dy = at::randn(shape, at::TensorOptions(kGpu)).to(type);
  REQUIRE(llmrdzv::model::detail::layer_norm_on_cuda_kernel(norm, x0) == expect_kernel);

  const at::Tensor x = x0.clone().requires_grad_(true);
  const at::Tensor y = llmrdzv::model::detail::layer_norm(norm, x);
  y.backward(dy);
  Grads ours{x.grad(), norm->weight.grad(), norm->bias.grad(), y.detach()};

  const at::Tensor xd = x0.to(at::kDouble).requires_grad_(true);
  const at::Tensor wd = norm->weight.detach().to(at::kDouble).requires_grad_(true);
  const at::Tensor bd = norm->bias.detach().to(at::kDouble).requires_grad_(true);
  const at::Tensor yd = at::layer_norm(xd, {width}, wd, bd, 1e-5);
  yd.backward(dy.to(at::kDouble));
  return {ours, Grads{xd.grad(), wd.grad(), bd.grad(), yd.detach()}};
}

void check_close(at::ScalarType type, std::vector<std::int64_t> shape, double tolerance, bool expect_kernel = true) {
  INFO(c10::toString(type) << " shape [" << shape[0] << ", " << shape[1] << ", " << shape.back() << "]");
  const auto [ours, reference] = gradients(type, shape, expect_kernel);
  REQUIRE(ours.y.scalar_type() == type);
  REQUIRE(ours.x.scalar_type() == type);
  REQUIRE(ours.weight.scalar_type() == type);
  REQUIRE(ours.bias.scalar_type() == type);
  CHECK(relative_error(ours.y, reference.y) <= tolerance);
  CHECK(relative_error(ours.x, reference.x) <= tolerance);
  CHECK(relative_error(ours.weight, reference.weight) <= tolerance);
  CHECK(relative_error(ours.bias, reference.bias) <= tolerance);
}

}  // namespace

TEST_CASE("LayerNorm's GPU backward kernel gives the gradients of torch's LayerNorm in double (fp32)",
          "[gpu][layer_norm]") {
  check_close(at::kFloat, {4, 257, 768}, 1e-5);
  check_close(at::kFloat, {2, 100, 1600}, 1e-5);
  check_close(at::kFloat, {3, 5, 4096}, 1e-5);
  check_close(at::kFloat, {1, 3, 7}, 1e-5);
}

TEST_CASE("LayerNorm's GPU backward kernel follows torch's LayerNorm in double within bf16's and fp16's rounding",
          "[gpu][layer_norm]") {
  // bf16 holds 8 significant bits (fp16 11): each result is one rounding (2^-9; 2^-12) off; the
  // weight's and bias's sums run in fp32 over the rows.
  check_close(at::kBFloat16, {16, 1024, 768}, 1e-2);
  check_close(at::kBFloat16, {8, 1024, 1600}, 1e-2);
  check_close(at::kHalf, {4, 512, 768}, 2e-3);
}

TEST_CASE("LayerNorm on the GPU past the kernel's widest rows takes torch's module", "[gpu][layer_norm]") {
  check_close(at::kFloat, {2, 3, 4097}, 1e-5, /*expect_kernel=*/false);
}

TEST_CASE("LayerNorm fused with the residual add on the GPU: torch's rounded sum, and torch's LayerNorm and gradients in double",
          "[gpu][layer_norm]") {
  for (const auto& [type, tolerance] : {std::pair{at::kFloat, 1e-5}, std::pair{at::kBFloat16, 1e-2}, std::pair{at::kHalf, 2e-3}}) {
    INFO(c10::toString(type));
    torch::manual_seed(7);
    const std::int64_t width = 768;
    torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({width}).eps(1e-5));
    norm->to(kGpu, type);
    {
      const torch::NoGradGuard no_grad;
      norm->weight.normal_(1.0, 0.3);
      norm->bias.normal_(0.0, 0.3);
    }
    const std::vector<std::int64_t> shape{8, 512, width};
    const at::Tensor x0 = (at::randn(shape, at::TensorOptions(kGpu)) * 3 + 1).to(type);
    const at::Tensor d0 = at::randn(shape, at::TensorOptions(kGpu)).to(type);
    const at::Tensor dsum = at::randn(shape, at::TensorOptions(kGpu)).to(type);  // the residual stream's gradient
    const at::Tensor dy = at::randn(shape, at::TensorOptions(kGpu)).to(type);
    REQUIRE(llmrdzv::model::detail::layer_norm_on_cuda_kernel(norm, x0));

    const at::Tensor x = x0.clone().requires_grad_(true), delta = d0.clone().requires_grad_(true);
    const auto [sum, y] = llmrdzv::model::detail::add_layer_norm(norm, x, delta);
    torch::autograd::backward({sum, y}, {dsum, dy});
    CHECK(at::equal(sum.detach(), x0 + d0));

    const at::Tensor xd = x0.to(at::kDouble).requires_grad_(true), dd = d0.to(at::kDouble).requires_grad_(true);
    const at::Tensor wd = norm->weight.detach().to(at::kDouble).requires_grad_(true);
    const at::Tensor bd = norm->bias.detach().to(at::kDouble).requires_grad_(true);
    // The reference normalises the rounded sum, as the kernel does.
    const at::Tensor rounded = (x0 + d0).to(at::kDouble);
    const at::Tensor sd = xd + dd + (rounded - (xd + dd)).detach();
    const at::Tensor yd = at::layer_norm(sd, {width}, wd, bd, 1e-5);
    torch::autograd::backward({sd, yd}, {dsum.to(at::kDouble), dy.to(at::kDouble)});
    CHECK(relative_error(y.detach(), yd.detach()) <= tolerance);
    CHECK(relative_error(x.grad(), xd.grad()) <= tolerance);
    CHECK(relative_error(delta.grad(), dd.grad()) <= tolerance);
    CHECK(relative_error(norm->weight.grad(), wd.grad()) <= tolerance);
    CHECK(relative_error(norm->bias.grad(), bd.grad()) <= tolerance);
  }
}

TEST_CASE("LayerNorm fused with the residual add on the GPU, only its norm used (a post-LN block): torch's gradients in double",
          "[gpu][layer_norm]") {
  torch::manual_seed(11);
  const std::int64_t width = 768;
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({width}).eps(1e-5));
  norm->to(kGpu, at::kFloat);
  const std::vector<std::int64_t> shape{4, 256, width};
  const at::Tensor x0 = at::randn(shape, at::TensorOptions(kGpu)) * 2, d0 = at::randn(shape, at::TensorOptions(kGpu));
  const at::Tensor dy = at::randn(shape, at::TensorOptions(kGpu));
  const at::Tensor x = x0.clone().requires_grad_(true), delta = d0.clone().requires_grad_(true);
  llmrdzv::model::detail::add_layer_norm(norm, x, delta).second.backward(dy);

  const at::Tensor xd = x0.to(at::kDouble).requires_grad_(true), dd = d0.to(at::kDouble).requires_grad_(true);
  at::layer_norm(xd + dd, {width}, norm->weight.detach().to(at::kDouble), norm->bias.detach().to(at::kDouble), 1e-5)
      .backward(dy.to(at::kDouble));
  CHECK(relative_error(x.grad(), xd.grad()) <= 1e-5);
  CHECK(relative_error(delta.grad(), dd.grad()) <= 1e-5);
}
