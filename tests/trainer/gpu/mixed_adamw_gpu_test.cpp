// The GPU's mixed-precision AdamW (trainer/optim's CUDA kernel, and the one-process engine that
// uses it for bf16/fp16 weights): the kernel gives the CPU's scalar kernel's bits for the same
// inputs, and an engine on the GPU updates bf16 weights as an engine on the CPU does: bit for bit
// without clipping, with one micro-batch (the kernel reads the bf16 gradients) or two (it reads
// their fp32 sums); within fp32 rounding with clipping, whose coefficient the GPU keeps on the
// device.
#include <ATen/ops/equal.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "llmrdzv/engine/single_process_engine.hpp"
#include "llmrdzv/optim/cuda_adamw.hpp"
#include "llmrdzv/optim/fused_adamw.hpp"

#include <catch2/catch.hpp>  // after torch: c10's CHECK must not replace Catch's

using namespace llmrdzv;

namespace {

const at::Device kGpu(at::kCUDA, 0);

kernel_support::DeviceElement element_of(at::ScalarType type) {
  return type == at::kBFloat16 ? kernel_support::DeviceElement::bf16
         : type == at::kHalf   ? kernel_support::DeviceElement::f16
                               : kernel_support::DeviceElement::f32;
}

void kernel_matches_cpu(at::ScalarType model_type, at::ScalarType grad_type, const std::int64_t n) {
  torch::manual_seed(3);
  const at::Tensor master0 = torch::randn({n});
  at::Tensor master = master0.to(kGpu), m = torch::zeros({n}, kGpu), v = torch::zeros({n}, kGpu);
  at::Tensor model = master0.to(model_type).to(kGpu);
  at::Tensor cpu_master = master0.clone(), cpu_m = torch::zeros({n}), cpu_v = torch::zeros({n});
  const at::Tensor scale = torch::full({}, 0.4f, torch::TensorOptions().device(kGpu));
  optim::AdamWHyperparams hp;
  hp.lr = 2e-3;
  hp.weight_decay = 0.1;
  optim::KernelOptions scalar;
  scalar.isa = optim::Isa::scalar;
  for (std::int64_t step = 1; step <= 3; ++step) {
    const at::Tensor grad = (torch::randn({n}) * 0.01).to(grad_type);
    const at::Tensor grad_gpu = grad.to(kGpu);
    optim::adamw_step_cuda({master.data_ptr<float>(), m.data_ptr<float>(), v.data_ptr<float>(), grad_gpu.data_ptr(),
                            element_of(grad_type), model.data_ptr(), element_of(model_type), static_cast<std::size_t>(n)},
                           hp, step, scale.data_ptr<float>(), c10::cuda::getCurrentCUDAStream().stream());
    optim::AdamWHyperparams cpu_hp = hp;
    cpu_hp.grad_scale = static_cast<double>(0.4f);
    const at::Tensor cpu_grad = grad.to(at::kFloat).contiguous();
    optim::adamw_step({{cpu_master.data_ptr<float>(), static_cast<std::size_t>(n)},
                       {cpu_grad.data_ptr<float>(), static_cast<std::size_t>(n)},
                       {cpu_m.data_ptr<float>(), static_cast<std::size_t>(n)},
                       {cpu_v.data_ptr<float>(), static_cast<std::size_t>(n)}},
                      cpu_hp, step, scalar);
    INFO("step " << step);
    REQUIRE(at::equal(master.cpu(), cpu_master));
    REQUIRE(at::equal(m.cpu(), cpu_m));
    REQUIRE(at::equal(v.cpu(), cpu_v));
    REQUIRE(at::equal(model.cpu(), cpu_master.to(model_type)));
  }
}

struct EngineRun {
  std::vector<at::Tensor> weights;  // the model's, after the steps, on the CPU
  std::vector<at::Tensor> masters;  // the optimizer's fp32 masters, on the CPU
};

// Three steps of `micro` micro-batches on two bf16 parameters whose gradients are set by hand (the
// same on both devices), through the one-process engine on `device`.
EngineRun run_engine(bool gpu, int micro, double max_norm) {
  engine::EngineOptions options;
  options.use_cpu = !gpu;
  const std::unique_ptr<engine::TrainingEngine> engine = engine::make_single_process_engine(options);
  REQUIRE(engine->device().is_cuda() == gpu);
  torch::manual_seed(5);
  std::vector<engine::NamedParameter> params = {
      {"w", torch::randn({300, 7}).to(at::kBFloat16).to(engine->device()).requires_grad_(true), true},
      {"b", torch::randn({300}).to(at::kBFloat16).to(engine->device()).requires_grad_(true), false}};
  engine->attach(params, {.beta1 = 0.9, .beta2 = 0.95, .epsilon = 1e-8, .weight_decay = 0.1});
  torch::manual_seed(6);
  for (int step = 0; step < 3; ++step) {
    for (int m = 0; m < micro; ++m) {
      engine->begin_micro_step(m == micro - 1);
      for (auto& p : params) p.tensor.mutable_grad() = torch::randn(p.tensor.sizes()).to(at::kBFloat16).to(engine->device());
    }
    const double norm = engine->finish_gradients(max_norm, 0.5).value();
    CHECK(norm > 0);
    engine->optimizer_step(1e-2);
  }
  EngineRun run;
  for (const auto& p : params) run.weights.push_back(p.tensor.detach().cpu());
  for (const auto& [name, tensor] : engine->optimizer_state()) {
    if (name.starts_with("master.")) run.masters.push_back(tensor.cpu());
  }
  return run;
}

}  // namespace

TEST_CASE("the GPU's mixed-precision AdamW kernel gives the CPU's scalar kernel's bits", "[gpu][optim]") {
  kernel_matches_cpu(at::kBFloat16, at::kBFloat16, 1 << 20);
  kernel_matches_cpu(at::kBFloat16, at::kFloat, 12345);
  kernel_matches_cpu(at::kHalf, at::kHalf, 1000);
  kernel_matches_cpu(at::kHalf, at::kFloat, 7);
}

TEST_CASE("bf16 weights on the GPU's engine update as on the CPU's: bit for bit without clipping, one micro-batch or two",
          "[gpu][optim]") {
  for (const int micro : {1, 2}) {
    INFO(micro << " micro-batches");
    const EngineRun gpu = run_engine(true, micro, 0.0), cpu = run_engine(false, micro, 0.0);
    REQUIRE(gpu.masters.size() == 2);
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(at::equal(gpu.masters[i], cpu.masters[i]));
      CHECK(at::equal(gpu.weights[i], cpu.weights[i]));
    }
  }
}

TEST_CASE("bf16 weights on the GPU's engine follow the CPU's under clipping (coefficient kept on the device)",
          "[gpu][optim]") {
  const EngineRun gpu = run_engine(true, 1, 1.0), cpu = run_engine(false, 1, 1.0);
  for (std::size_t i = 0; i < 2; ++i) CHECK(at::allclose(gpu.masters[i], cpu.masters[i], 1e-5, 1e-6));
}
