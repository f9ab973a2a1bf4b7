// The fused RMSNorm (fast_rms_norm: one pass per row on fp32 CPU tensors) against the composite of
// torch ops HF's LlamaRMSNorm is made of, computed in double: output, input gradient and weight
// gradient, at widths that are and are not multiples of the vector width, for 2-D and 3-D and
// non-contiguous inputs, with rows split over threads and tasks; other types take the composite.
#include <torch/torch.h>

#include <catch2/catch.hpp>  // after torch: c10's CHECK must not replace Catch's

#include "fast_rms_norm.hpp"

using llmrdzv::model::detail::rms_norm;

namespace {

torch::Tensor composite(const torch::Tensor& x, const torch::Tensor& w, double eps) {
  return w * (x * torch::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + eps));
}

}  // namespace

TEST_CASE("the fused RMSNorm gives the composite's output and gradients in fp32", "[rms_norm]") {
  torch::manual_seed(11);
  at::set_num_threads(2);  // rows split over threads; 300 x 256 and 4096 x 64 also over several tasks
  for (const std::vector<std::int64_t>& shape :
       {std::vector<std::int64_t>{5, 576}, {3, 7, 37}, {2, 130, 8}, {1, 1}, {300, 256}, {4096, 64}}) {
    INFO("shape " << shape);
    const double eps = 1e-5;
    const torch::Tensor x = (torch::randn(shape) * 3).requires_grad_();
    const torch::Tensor w = (torch::rand({shape.back()}) + 0.5).requires_grad_();
    const torch::Tensor upstream = torch::randn(shape);
    const torch::Tensor y = rms_norm(x, w, eps);
    CHECK(y.grad_fn()->name().find("FusedRmsNorm") != std::string::npos);
    (y * upstream).sum().backward();

    const torch::Tensor x64 = x.detach().to(torch::kDouble).requires_grad_();
    const torch::Tensor w64 = w.detach().to(torch::kDouble).requires_grad_();
    const torch::Tensor expected = composite(x64, w64, eps);
    (expected * upstream.to(torch::kDouble)).sum().backward();
    CHECK(torch::allclose(y.to(torch::kDouble), expected, 1e-6, 1e-6));
    CHECK(torch::allclose(x.grad().to(torch::kDouble), x64.grad(), 1e-5, 1e-6));
    CHECK(torch::allclose(w.grad().to(torch::kDouble), w64.grad(), 1e-5, 1e-5));
  }
}

TEST_CASE("the fused RMSNorm reads non-contiguous inputs, and other types take the composite", "[rms_norm]") {
  torch::manual_seed(12);
  const torch::Tensor w = torch::rand({24}) + 0.5;
  const torch::Tensor wide = torch::randn({24, 10});
  const torch::Tensor x = wide.t();  // [10, 24], not contiguous
  REQUIRE_FALSE(x.is_contiguous());
  const torch::Tensor leaf = x.detach().requires_grad_();  // still the transposed view's strides
  const torch::Tensor y32 = rms_norm(leaf, w, 1e-6);
  CHECK(torch::allclose(y32, composite(x, w, 1e-6), 1e-6, 1e-6));
  y32.sum().backward();
  const torch::Tensor reference = x.detach().clone().requires_grad_();
  composite(reference, w, 1e-6).sum().backward();
  CHECK(torch::allclose(leaf.grad(), reference.grad(), 1e-5, 1e-6));

  const torch::Tensor half = torch::randn({4, 24}).to(torch::kBFloat16);
  const torch::Tensor y = rms_norm(half, w, 1e-6);
  CHECK(y.scalar_type() == torch::kFloat);  // fp32 weight times the bf16-rounded normed input, as HF's
  const torch::Tensor x32 = half.to(torch::kFloat);
  CHECK(torch::equal(y, w * (x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + 1e-6)).to(torch::kBFloat16)));
}
