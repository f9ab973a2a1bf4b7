// The one-process TrainingEngine on the CPU: its fused AdamW follows torch::optim::AdamW with the
// two parameter groups, the step after clipping is torch's clip_grad_norm_ + AdamW, its optimizer state round-trips exactly
// (a restored engine continues bit for bit), and malformed state is refused with a message.
// bf16/fp16 parameters go through fp32 master weights with gradients summed in fp32. The
// multi-tensor AdamW that CUDA runs (at::_fused_adamw_) is checked here on CPU tensors: the same
// reference, parameters without a gradient left alone, and its state round trip.
#include <torch/nn/utils/clip_grad.h>
#include <torch/optim/adamw.h>

#include <catch2/catch.hpp>  // after torch: c10's CHECK must not replace Catch's

#include <cmath>
#include <limits>

#include "llmrdzv/engine/adamw_updaters.hpp"
#include "llmrdzv/engine/single_process_engine.hpp"

using namespace llmrdzv::engine;

namespace {

// A weight matrix (decayed), a bias and an odd-sized vector (not decayed).
std::vector<NamedParameter> make_parameters(std::uint64_t seed) {
  torch::manual_seed(seed);
  return {{"w", torch::randn({13, 7}).requires_grad_(), true},
          {"b", torch::randn({13}).requires_grad_(), false},
          {"ln.weight", torch::randn({37}).requires_grad_(), false}};
}

std::vector<NamedParameter> clone(const std::vector<NamedParameter>& parameters) {
  std::vector<NamedParameter> copy;
  for (const auto& p : parameters) copy.push_back({p.name, p.tensor.detach().clone().requires_grad_(), p.decay});
  return copy;
}

// Deterministic gradients for step `step`.
void set_gradients(const std::vector<NamedParameter>& parameters, int step) {
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    auto& p = parameters[i].tensor;
    p.mutable_grad() = torch::sin(torch::arange(p.numel(), torch::kFloat).reshape(p.sizes()) * (step + 1) + i) * 0.3;
  }
}

const AdamWSettings kSettings{0.9, 0.95, 1e-8, 0.1};
const EngineOptions kCpu{.use_cpu = true};

// torch::optim::AdamW over the same parameters with kSettings: the first one decayed, the rest not.
std::unique_ptr<torch::optim::AdamW> reference_adamw(const std::vector<NamedParameter>& reference) {
  std::vector<torch::Tensor> decay{reference[0].tensor};
  std::vector<torch::Tensor> no_decay{reference[1].tensor, reference[2].tensor};
  auto options = torch::optim::AdamWOptions(0.0).betas({0.9, 0.95}).eps(1e-8).weight_decay(0.1);
  auto no_decay_options = std::make_unique<torch::optim::AdamWOptions>(options);
  no_decay_options->weight_decay(0.0);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  groups.emplace_back(decay);
  groups.emplace_back(no_decay, std::move(no_decay_options));
  return std::make_unique<torch::optim::AdamW>(groups, options);
}

void reference_step(torch::optim::AdamW& adamw, double lr) {
  for (auto& group : adamw.param_groups()) group.options().set_lr(lr);
  adamw.step();
}

}  // namespace

TEST_CASE("fused CPU AdamW follows torch::optim::AdamW with decay and no-decay groups", "[engine]") {
  const auto ours = make_parameters(1);
  const auto reference = clone(ours);
  auto engine = make_single_process_engine(kCpu);
  REQUIRE(engine->device().is_cpu());
  engine->attach(ours, kSettings);

  const auto adamw = reference_adamw(reference);

  for (int step = 0; step < 20; ++step) {
    const double lr = 1e-2 * (step + 1) / 20.0;
    set_gradients(ours, step);
    set_gradients(reference, step);
    engine->finish_gradients(0);
    engine->optimizer_step(lr);
    reference_step(*adamw, lr);
    for (const auto& p : ours) CHECK_FALSE(p.tensor.grad().defined());  // zeroed (freed) after the step
  }
  for (std::size_t i = 0; i < ours.size(); ++i) {
    INFO(ours[i].name);
    CHECK(torch::allclose(ours[i].tensor, reference[i].tensor, 1e-6, 1e-7));
  }
}

TEST_CASE("finish_gradients returns the global norm unclipped and the step uses the clipped gradient", "[engine]") {
  const auto ours = make_parameters(2);
  const auto reference = clone(ours);
  auto engine = make_single_process_engine(kCpu);
  engine->attach(ours, kSettings);
  const auto adamw = reference_adamw(reference);
  std::vector<torch::Tensor> reference_tensors;
  for (const auto& p : reference) reference_tensors.push_back(p.tensor);
  for (int step = 0; step < 5; ++step) {
    set_gradients(ours, step);
    set_gradients(reference, step);
    const double norm = torch::nn::utils::clip_grad_norm_(reference_tensors, 0.5);
    REQUIRE(norm > 0.5);  // every step clips
    CHECK(engine->finish_gradients(0.5).value() == Approx(norm));
    engine->optimizer_step(1e-2);
    reference_step(*adamw, 1e-2);
  }
  for (std::size_t i = 0; i < ours.size(); ++i) {
    INFO(ours[i].name);
    CHECK(torch::allclose(ours[i].tensor, reference[i].tensor, 1e-6, 1e-7));
  }
  // After a step skipped with a clip pending, an unclipped step uses the gradient as it is.
  set_gradients(ours, 5);
  set_gradients(reference, 5);
  REQUIRE(engine->finish_gradients(1e-3).value() > 1e-3);
  engine->skip_step();
  set_gradients(ours, 6);
  set_gradients(reference, 6);
  CHECK(engine->finish_gradients(0).value() > 0.5);  // 0: measure only
  engine->optimizer_step(1e-2);
  reference_step(*adamw, 1e-2);
  for (std::size_t i = 0; i < ours.size(); ++i) CHECK(torch::allclose(ours[i].tensor, reference[i].tensor, 1e-6, 1e-7));
}

TEST_CASE("a restored optimizer state continues bit for bit", "[engine]") {
  const auto first = make_parameters(3);
  auto engine = make_single_process_engine(kCpu);
  engine->attach(first, kSettings);
  for (int step = 0; step < 3; ++step) {
    set_gradients(first, step);
    engine->optimizer_step(1e-2);
  }
  const TensorMap saved = engine->optimizer_state();
  CHECK(saved.size() == 9);
  CHECK(saved.at("step.w").item<std::int64_t>() == 3);

  const auto second = clone(first);
  auto restored = make_single_process_engine(kCpu);
  restored->attach(second, kSettings);
  TensorMap copy;
  for (const auto& [name, tensor] : saved) copy[name] = tensor.clone();
  restored->load_optimizer_state(copy);
  for (int step = 3; step < 6; ++step) {
    set_gradients(first, step);
    set_gradients(second, step);
    engine->optimizer_step(1e-2);
    restored->optimizer_step(1e-2);
  }
  for (std::size_t i = 0; i < first.size(); ++i) CHECK(torch::equal(first[i].tensor, second[i].tensor));
}

TEST_CASE("malformed optimizer state is refused naming the parameter", "[engine][errors]") {
  const auto parameters = make_parameters(4);
  auto engine = make_single_process_engine(kCpu);
  engine->attach(parameters, kSettings);
  set_gradients(parameters, 0);
  engine->optimizer_step(1e-3);
  const TensorMap good = engine->optimizer_state();

  TensorMap missing = good;
  missing.erase("exp_avg_sq.b");
  CHECK_THROWS_WITH(engine->load_optimizer_state(missing), "optimizer state for 'b' is incomplete");
  TensorMap reshaped = good;
  reshaped["exp_avg.w"] = torch::zeros({7, 13});
  CHECK_THROWS_WITH(engine->load_optimizer_state(reshaped), "optimizer state for 'w' does not match the parameter's shape");
  TensorMap extra = good;
  extra["exp_avg.other"] = torch::zeros({1});
  CHECK_THROWS_WITH(engine->load_optimizer_state(extra), "optimizer state holds entries for parameters this model does not have");

  EngineOptions offload = kCpu;
  offload.offload = Offload::optimizer;
  CHECK_THROWS_WITH(make_single_process_engine(offload), Catch::Contains("--offload optimizer needs the distributed engine"));
}

namespace {

// bf16 copies of `parameters`, and fp32 copies of those (the values the masters start from).
std::vector<NamedParameter> to_dtype(const std::vector<NamedParameter>& parameters, torch::Dtype dtype) {
  std::vector<NamedParameter> out;
  for (const auto& p : parameters) out.push_back({p.name, p.tensor.detach().to(dtype).requires_grad_(), p.decay});
  return out;
}

// Gradients of step `step` given to bf16 parameters, and the same values in fp32 (plus `extra`,
// already fp32) to the reference.
void set_gradients_both(const std::vector<NamedParameter>& bf16, const std::vector<NamedParameter>& reference, int step,
                        bool accumulate_reference = false) {
  set_gradients(bf16, step);
  for (std::size_t i = 0; i < bf16.size(); ++i) {
    bf16[i].tensor.mutable_grad() = bf16[i].tensor.grad().to(torch::kBFloat16);
    const auto widened = bf16[i].tensor.grad().to(torch::kFloat);
    auto& ref = reference[i].tensor.mutable_grad();
    ref = accumulate_reference && ref.defined() ? ref + widened : widened;
  }
}

}  // namespace

TEST_CASE("bf16 parameters train through fp32 master weights, gradients summed in fp32", "[engine][precision]") {
  const auto bf16 = to_dtype(make_parameters(5), torch::kBFloat16);
  const auto reference = to_dtype(bf16, torch::kFloat);  // fp32 run from the same starting values
  auto engine = make_single_process_engine(kCpu);
  auto fp32 = make_single_process_engine(kCpu);
  engine->attach(bf16, kSettings);
  fp32->attach(reference, kSettings);
  for (int step = 0; step < 4; ++step) {
    // Two micro-batches: the second one's bf16 gradient is added to the first in fp32.
    engine->begin_micro_step(false);
    fp32->begin_micro_step(false);
    set_gradients_both(bf16, reference, step);
    engine->begin_micro_step(true);
    fp32->begin_micro_step(true);
    set_gradients_both(bf16, reference, step + 10, /*accumulate_reference=*/true);
    CHECK(engine->finish_gradients(0).value() == Approx(fp32->finish_gradients(0).value()).epsilon(1e-6));
    engine->optimizer_step(1e-2);
    fp32->optimizer_step(1e-2);
  }
  const TensorMap state = engine->optimizer_state();
  CHECK(state.size() == 12);  // exp_avg, exp_avg_sq, step and master per parameter
  for (std::size_t i = 0; i < bf16.size(); ++i) {
    const at::Tensor& master = state.at("master." + bf16[i].name);
    INFO(bf16[i].name);
    CHECK(master.scalar_type() == torch::kFloat);
    CHECK(torch::equal(master, reference[i].tensor));  // the update is fp32 AdamW, bit for bit
    CHECK(bf16[i].tensor.scalar_type() == torch::kBFloat16);
    CHECK(torch::equal(bf16[i].tensor, master.to(torch::kBFloat16)));  // rounded back after each step
    CHECK_FALSE(bf16[i].tensor.grad().defined());
  }
}

TEST_CASE("a gradient multiplier undoes a loss scale, and a skipped step changes nothing", "[engine][precision]") {
  const auto fp16 = to_dtype(make_parameters(6), torch::kHalf);
  auto engine = make_single_process_engine(kCpu);
  engine->attach(fp16, kSettings);
  set_gradients(fp16, 0);
  double unscaled = 0;
  for (const auto& p : fp16) unscaled += p.tensor.grad().to(torch::kDouble).pow(2).sum().item<double>();
  for (auto& p : fp16) p.tensor.mutable_grad() = (p.tensor.grad() * 1024).to(torch::kHalf);
  CHECK(engine->finish_gradients(0, 1.0 / 1024).value() == Approx(std::sqrt(unscaled)).epsilon(1e-3));
  std::vector<at::Tensor> before;
  for (const auto& p : fp16) before.push_back(p.tensor.detach().clone());
  engine->skip_step();
  for (std::size_t i = 0; i < fp16.size(); ++i) {
    CHECK(torch::equal(fp16[i].tensor, before[i]));
    CHECK_FALSE(fp16[i].tensor.grad().defined());
  }
  CHECK(engine->optimizer_state().count("step.w") == 0);  // the skipped step took no AdamW step
  // An overflowed gradient shows as a non-finite norm.
  set_gradients(fp16, 1);
  fp16[0].tensor.mutable_grad() = torch::full_like(fp16[0].tensor, std::numeric_limits<float>::infinity());
  CHECK_FALSE(std::isfinite(engine->finish_gradients(1.0, 1.0 / 1024).value()));
  engine->skip_step();
  for (std::size_t i = 0; i < fp16.size(); ++i) CHECK(torch::equal(fp16[i].tensor, before[i]));
}

TEST_CASE("bf16 master weights round-trip through the optimizer state", "[engine][precision]") {
  const auto first = to_dtype(make_parameters(7), torch::kBFloat16);
  auto engine = make_single_process_engine(kCpu);
  engine->attach(first, kSettings);
  for (int step = 0; step < 3; ++step) {
    set_gradients(first, step);
    for (auto& p : first) p.tensor.mutable_grad() = p.tensor.grad().to(torch::kBFloat16);
    engine->finish_gradients(0);
    engine->optimizer_step(1e-2);
  }
  const auto second = to_dtype(first, torch::kBFloat16);
  auto restored = make_single_process_engine(kCpu);
  restored->attach(second, kSettings);
  TensorMap copy;
  for (const auto& [name, tensor] : engine->optimizer_state()) copy[name] = tensor.clone();
  restored->load_optimizer_state(copy);
  for (int step = 3; step < 6; ++step) {
    for (const auto* run : {&first, &second}) {
      set_gradients(*run, step);
      for (auto& p : *run) p.tensor.mutable_grad() = p.tensor.grad().to(torch::kBFloat16);
    }
    engine->finish_gradients(0);
    restored->finish_gradients(0);
    engine->optimizer_step(1e-2);
    restored->optimizer_step(1e-2);
  }
  const TensorMap a = engine->optimizer_state(), b = restored->optimizer_state();
  for (std::size_t i = 0; i < first.size(); ++i) {
    CHECK(torch::equal(first[i].tensor, second[i].tensor));
    CHECK(torch::equal(a.at("master." + first[i].name), b.at("master." + first[i].name)));
  }
  TensorMap wrong = engine->optimizer_state();
  wrong["master.w"] = torch::zeros({7, 13});
  CHECK_THROWS_WITH(restored->load_optimizer_state(wrong), "master weights for 'w' do not match the parameter's shape");
}

TEST_CASE("the multi-tensor fused AdamW (CUDA's) follows torch::optim::AdamW and skips parameters without a gradient",
          "[engine]") {
  const auto ours = make_parameters(5);
  const auto reference = clone(ours);
  const auto updater = make_multi_tensor_adamw(ours, kSettings);
  const auto adamw = reference_adamw(reference);
  for (int step = 0; step < 20; ++step) {
    const double lr = 1e-2 * (step + 1) / 20.0;
    set_gradients(ours, step);
    set_gradients(reference, step);
    if (step == 4) {  // the bias has no gradient this step: neither side may touch it or count it
      ours[1].tensor.mutable_grad() = torch::Tensor();
      reference[1].tensor.mutable_grad() = torch::Tensor();
    }
    updater->step(lr, 1.0);
    reference_step(*adamw, lr);
  }
  for (std::size_t i = 0; i < ours.size(); ++i) {
    INFO(ours[i].name);
    CHECK(torch::allclose(ours[i].tensor, reference[i].tensor, 1e-6, 1e-7));
  }
  CHECK(updater->get(ours[0])->step == 20);
  CHECK(updater->get(ours[1])->step == 19);
  const auto fresh = make_parameters(6);
  CHECK_FALSE(make_multi_tensor_adamw(fresh, kSettings)->get(fresh[0]).has_value());
}

TEST_CASE("the multi-tensor fused AdamW and the CPU kernel agree, and a restored state continues bit for bit",
          "[engine]") {
  const auto multi = make_parameters(7);
  const auto cpu = clone(multi);
  const auto a = make_multi_tensor_adamw(multi, kSettings);
  const auto b = make_cpu_adamw(cpu, kSettings);
  for (int step = 0; step < 4; ++step) {
    set_gradients(multi, step);
    set_gradients(cpu, step);
    a->step(3e-3, 0.75);  // a clip coefficient: _foreach_mul_ on one side, the kernel's read on the other
    b->step(3e-3, 0.75);
  }
  for (std::size_t i = 0; i < multi.size(); ++i) CHECK(torch::allclose(multi[i].tensor, cpu[i].tensor, 1e-6, 1e-7));

  // A second updater over copies, given the first one's state, continues exactly as it does.
  const auto copies = clone(multi);
  const auto restored = make_multi_tensor_adamw(copies, kSettings);
  for (std::size_t i = 0; i < multi.size(); ++i) {
    MomentState state = *a->get(multi[i]);
    restored->set(copies[i], {state.exp_avg.clone(), state.exp_avg_sq.clone(), state.step});
  }
  for (int step = 4; step < 8; ++step) {
    set_gradients(multi, step);
    set_gradients(copies, step);
    a->step(3e-3, 1.0);
    restored->step(3e-3, 1.0);
  }
  for (std::size_t i = 0; i < multi.size(); ++i) CHECK(torch::equal(multi[i].tensor, copies[i].tensor));
  CHECK(restored->get(copies[0])->step == 8);
}
