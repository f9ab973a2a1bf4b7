// The families' dropout on fp32 CPU tensors (fast_dropout: parallel Philox masks): the kept share
// is 1 - p, kept elements are scaled by 1 / (1 - p), the gradient follows the mask, the masks come
// from torch's default generator (same seed, same mask), and eval mode or other dtypes behave as
// torch's dropout does.
#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>  // after torch: c10's CHECK must not replace Catch's

#include "fast_dropout.hpp"

using llmrdzv::model::detail::fast_dropout;

TEST_CASE("dropout keeps 1 - p of the elements, scaled, and the gradient follows the mask", "[dropout]") {
  torch::nn::Dropout dropout(torch::nn::DropoutOptions(0.25));
  dropout->train();
  torch::manual_seed(5);
  const torch::Tensor x = torch::rand({1000, 1001}).add_(0.5).requires_grad_();  // no element is 0
  const torch::Tensor y = fast_dropout(dropout, x);
  const torch::Tensor kept = y != 0;
  const double share = kept.to(torch::kDouble).mean().item<double>();
  CHECK(share == Approx(0.75).margin(0.003));  // 1,001,000 draws: the standard error is 0.0004
  CHECK(torch::allclose(y.masked_select(kept), (x.detach() / 0.75f).masked_select(kept), 1e-6, 0));
  y.sum().backward();
  CHECK(torch::equal(x.grad(), kept.to(torch::kFloat) / 0.75f));
  // Rows differ: the counter runs through the whole tensor (no block repeats another's mask).
  CHECK_FALSE(torch::equal(kept[0], kept[1]));
}

TEST_CASE("dropout masks come from torch's default generator", "[dropout]") {
  torch::nn::Dropout dropout(torch::nn::DropoutOptions(0.5));
  dropout->train();
  const torch::Tensor x = torch::ones({64, 33});
  torch::manual_seed(11);
  const torch::Tensor first = fast_dropout(dropout, x);
  const torch::Tensor second = fast_dropout(dropout, x);  // the generator moved on
  torch::manual_seed(11);
  CHECK(torch::equal(fast_dropout(dropout, x), first));
  CHECK_FALSE(torch::equal(first, second));
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  const at::Tensor state = generator.get_state();
  const torch::Tensor again = fast_dropout(dropout, x);
  generator.set_state(state);
  CHECK(torch::equal(fast_dropout(dropout, x), again));
}

TEST_CASE("dropout is the identity in eval mode and at p = 0, and torch's for other dtypes", "[dropout]") {
  torch::nn::Dropout dropout(torch::nn::DropoutOptions(0.5));
  const torch::Tensor x = torch::ones({8, 8});
  dropout->eval();
  CHECK(fast_dropout(dropout, x).is_same(x));
  torch::nn::Dropout none(torch::nn::DropoutOptions(0.0));
  none->train();
  CHECK(fast_dropout(none, x).is_same(x));
  dropout->train();
  const torch::Tensor d = fast_dropout(dropout, x.to(torch::kDouble));
  CHECK(d.scalar_type() == torch::kDouble);
  CHECK(torch::logical_or(d == 0, d == 2).all().item<bool>());
}
