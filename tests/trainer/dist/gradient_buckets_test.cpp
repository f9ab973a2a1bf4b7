// GradientBuckets in one process (a Gloo group of one, in-process store): the post-accumulate-grad
// hooks launch every bucket's all-reduce during backward on the last micro-step and none on the
// others, and the flat buffer ends up holding each parameter's accumulated gradient.
// torch before Catch: c10's logging defines a CHECK macro that would replace Catch's.
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/torch.h>

#include "llmrdzv/dist/gradient_buckets.hpp"
#include "llmrdzv/dist/process_group.hpp"

#include <catch2/catch.hpp>

using namespace llmrdzv::dist;

TEST_CASE("gradient buckets launch their all-reduces from backward's hooks, only on the last micro-step",
          "[dist][buckets]") {
  torch::manual_seed(0);
  torch::nn::Sequential mlp(torch::nn::Linear(8, 16), torch::nn::Tanh(), torch::nn::Linear(16, 16), torch::nn::Tanh(),
                            torch::nn::Linear(16, 4));
  std::vector<at::Tensor> parameters = mlp->parameters();
  ProcessGroupSettings settings;
  settings.gloo_hostname = "127.0.0.1";
  auto backend = make_gloo_backend(c10::make_intrusive<c10d::HashStore>(), 0, 1, settings);
  GradientBuckets buckets(parameters, backend, /*bucket_cap_bytes=*/256);
  REQUIRE(buckets.bucket_count() >= 4);  // small buckets: several per layer pair

  const auto micro_step = [&](bool last) {
    buckets.begin_micro_step(last);
    mlp->forward(torch::randn({5, 8})).pow(2).sum().backward();
  };
  micro_step(false);  // accumulation: nothing is synchronised
  CHECK(buckets.launched_during_backward() == 0);
  CHECK(buckets.flat().abs().sum().item<float>() == 0.0f);

  micro_step(true);
  // Every bucket's gradients were complete before backward returned: the hooks launched them all,
  // none was left for finish().
  CHECK(buckets.launched_during_backward() == buckets.bucket_count());
  buckets.finish();
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    const FlatSlot& slot = buckets.slots()[k];
    INFO("parameter " << k);
    CHECK(torch::equal(buckets.flat().narrow(0, slot.offset, slot.numel), parameters[k].grad().reshape({-1})));
  }
}
