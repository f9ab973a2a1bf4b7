// GradientBuckets in one process (a Gloo group of one, in-process store): the post-accumulate-grad
// hooks launch every bucket's all-reduce during backward on the last micro-step and none on the
// others, and the flat buffer ends up holding each parameter's accumulated gradient. Also what an
// offloading run leaves on the device: one gradient and the parameters, both in their own type.
// torch before Catch: c10's logging defines a CHECK macro that would replace Catch's.
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/torch.h>

#include "llmrdzv/dist/gradient_buckets.hpp"
#include "llmrdzv/dist/offload_optimizer.hpp"
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

TEST_CASE("an offloading run keeps one gradient in the parameters' type: released into the buffer on every micro-step",
          "[dist][buckets][offload]") {
  torch::manual_seed(0);
  torch::nn::Sequential mlp(torch::nn::Linear(8, 16), torch::nn::Tanh(), torch::nn::Linear(16, 4));
  mlp->to(torch::kBFloat16);
  std::vector<at::Tensor> parameters = mlp->parameters();
  ProcessGroupSettings settings;
  settings.gloo_hostname = "127.0.0.1";
  auto backend = make_gloo_backend(c10::make_intrusive<c10d::HashStore>(), 0, 1, settings);
  GradientBuckets buckets(parameters, backend, /*bucket_cap_bytes=*/128, {at::kBFloat16, /*release_parameter_gradients=*/true});
  // Not yet made: an offload optimizer first moves the parameters into their own flat buffer.
  CHECK_FALSE(buckets.flat().defined());

  // The reference: the same two micro-batches' gradients accumulated by autograd, in bf16.
  const std::vector<at::Tensor> inputs{torch::randn({5, 8}).to(torch::kBFloat16), torch::randn({5, 8}).to(torch::kBFloat16)};
  std::vector<at::Tensor> expected(parameters.size());
  for (const auto& x : inputs) {
    const auto grads = torch::autograd::grad({mlp->forward(x).pow(2).sum()}, parameters);
    for (std::size_t k = 0; k < parameters.size(); ++k) expected[k] = expected[k].defined() ? expected[k] + grads[k] : grads[k];
  }

  for (std::size_t m = 0; m < inputs.size(); ++m) {
    buckets.begin_micro_step(m + 1 == inputs.size());
    mlp->forward(inputs[m]).pow(2).sum().backward();
    // Already in the buffer: no parameter holds a gradient of its own, on either micro-step.
    for (const auto& p : parameters) CHECK_FALSE(p.grad().defined());
  }
  CHECK(buckets.launched_during_backward() == buckets.bucket_count());
  buckets.finish();
  REQUIRE(buckets.flat().scalar_type() == at::kBFloat16);
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    const FlatSlot& slot = buckets.slots()[k];
    INFO("parameter " << k);
    CHECK(torch::equal(buckets.flat().narrow(0, slot.offset, slot.numel), expected[k].reshape({-1})));
  }
}

TEST_CASE("the write barrier runs once per step, before the step's first write into the gradient buffer",
          "[dist][buckets][offload]") {
  torch::manual_seed(0);
  torch::nn::Sequential mlp(torch::nn::Linear(8, 16), torch::nn::Tanh(), torch::nn::Linear(16, 4));
  std::vector<at::Tensor> parameters = mlp->parameters();
  ProcessGroupSettings settings;
  settings.gloo_hostname = "127.0.0.1";
  auto backend = make_gloo_backend(c10::make_intrusive<c10d::HashStore>(), 0, 1, settings);
  GradientBuckets buckets(parameters, backend, /*bucket_cap_bytes=*/128, {at::kFloat, /*release_parameter_gradients=*/true});
  // What the buffer held when the barrier ran: an offloading optimizer's download may still be
  // reading it then, so no write may come first.
  std::vector<at::Tensor> seen;
  buckets.set_write_barrier([&] { seen.push_back(buckets.flat().clone()); });
  std::vector<at::Tensor> after_step;
  for (int step = 0; step < 3; ++step) {
    for (int m = 0; m < 2; ++m) {  // two micro-steps, one barrier
      buckets.begin_micro_step(m == 1);
      mlp->forward(torch::randn({5, 8})).pow(2).sum().backward();
    }
    buckets.finish();
    after_step.push_back(buckets.flat().clone());
    REQUIRE(seen.size() == static_cast<std::size_t>(step + 1));
  }
  CHECK(seen[0].abs().sum().item<float>() == 0.0f);  // the new buffer
  for (std::size_t step = 1; step < seen.size(); ++step) {
    INFO("step " << step);
    CHECK(after_step[step - 1].abs().sum().item<float>() > 0.0f);
    CHECK(torch::equal(seen[step], after_step[step - 1]));  // the last step's gradient, untouched
  }
}

TEST_CASE("the offload optimizer makes the parameters views of one flat buffer in their type and writes the rounded "
          "fp32 masters there", "[dist][offload]") {
  torch::manual_seed(0);
  torch::nn::Sequential mlp(torch::nn::Linear(8, 16), torch::nn::Tanh(), torch::nn::Linear(16, 4));
  mlp->to(torch::kBFloat16);
  std::vector<at::Tensor> parameters = mlp->parameters();
  std::vector<at::Tensor> before;
  for (const auto& p : parameters) before.push_back(p.detach().clone());
  ProcessGroupSettings settings;
  settings.gloo_hostname = "127.0.0.1";
  auto backend = make_gloo_backend(c10::make_intrusive<c10d::HashStore>(), 0, 1, settings);
  GradientBuckets buckets(parameters, backend, 1 << 20, {at::kBFloat16, true});
  std::vector<OffloadParameter> offloaded;
  for (const auto& p : parameters) offloaded.push_back({p, true});
  OffloadAdamW optimizer(offloaded, buckets.slots(), backend, {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0},
                         {}, /*chunk_elements=*/50);
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    INFO("parameter " << k);
    CHECK(parameters[k].scalar_type() == at::kBFloat16);
    CHECK(parameters[k].storage().is_alias_of(parameters[0].storage()));  // one flat buffer
    CHECK(torch::equal(parameters[k], before[k]));                         // values unchanged
  }
  // The host's AdamW state: fp32 masters and two moments of every element, plus the staging.
  std::int64_t total = 0;
  for (const auto& p : parameters) total += p.numel();
  CHECK(optimizer.state_bytes() >= static_cast<std::size_t>(total) * 12);

  buckets.begin_micro_step(true);
  mlp->forward(torch::randn({5, 8}).to(torch::kBFloat16)).pow(2).sum().backward();
  buckets.finish();
  optimizer.step(buckets.flat(), 1e-2, 1.0);
  // Each parameter now holds its fp32 master rounded to bf16 (the first Adam step moves each
  // element by about the learning rate).
  const at::Tensor master = optimizer.state().at("offload.master");
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    INFO("parameter " << k);
    const FlatSlot& slot = buckets.slots()[k];
    CHECK(torch::equal(parameters[k].reshape({-1}), master.narrow(0, slot.offset, slot.numel).to(torch::kBFloat16)));
    CHECK_FALSE(torch::equal(parameters[k], before[k]));
  }
}

TEST_CASE("the offload optimizer and the gradient buffer refuse what they cannot hold, naming it", "[dist][offload][errors]") {
  ProcessGroupSettings settings;
  settings.gloo_hostname = "127.0.0.1";
  auto backend = make_gloo_backend(c10::make_intrusive<c10d::HashStore>(), 0, 1, settings);
  const at::Tensor a = torch::zeros({4}), b = torch::zeros({3}, torch::kBFloat16);
  CHECK_THROWS_WITH(OffloadAdamW({{a, true}, {b, true}}, {{0, 4}, {4, 3}}, backend, {}),
                    "offload optimizer: every parameter must have the same type and device");
  CHECK_THROWS_WITH(OffloadAdamW({{torch::zeros({4}, torch::kDouble), true}}, {{0, 4}}, backend, {}),
                    "offload optimizer: parameters must be float32, bfloat16 or float16");
  OffloadAdamW optimizer({{a, true}}, {{0, 4}}, backend, {});
  CHECK_THROWS_WITH(optimizer.step(torch::zeros({4}, torch::kBFloat16), 1e-3, 1.0),
                    "offload optimizer: the flat gradient must hold every parameter's gradient in their type");
  CHECK_THROWS_WITH(optimizer.step_delayed(torch::zeros({3}), 1e-3, torch::scalar_tensor(1.0)),
                    "offload optimizer: the flat gradient must hold every parameter's gradient in their type");
  // A delayed update in flight leaves the parameter alone and holds the state back until completed.
  optimizer.step_delayed(torch::ones({4}), 1e-3, torch::scalar_tensor(1.0));
  CHECK(optimizer.update_pending());
  CHECK(torch::equal(a, torch::zeros({4})));
  CHECK_THROWS_WITH(optimizer.state(), "offload optimizer: state() while a delayed update is pending (complete_update() first)");
  optimizer.complete_update();
  CHECK_FALSE(optimizer.update_pending());
  CHECK(torch::allclose(a, torch::full({4}, -1e-3)));  // Adam's first step: -lr * sign(gradient)
  CHECK(optimizer.state().at("offload.step").item<std::int64_t>() == 1);
  CHECK_THROWS_WITH(GradientBuckets({a}, backend, 1 << 20, {at::kDouble, false}),
                    "gradient buckets: the buffer must be float32, bfloat16 or float16");
}
