// The GPU's mixed-precision AdamW (trainer/optim/src/cuda/adamw_cuda.cuh), its own source run on
// the CPU under cuda_block_emulation.hpp, against the CPU's scalar kernel (adamw_step): the same
// master weights and moments bit for bit over several steps, the model's weights equal to the
// masters rounded to bf16/fp16, gradients in the model's type or in fp32, with and without a
// device-side gradient scale, over a grid-stride loop that leaves a ragged tail; and what the
// launcher refuses.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "cuda_block_emulation.hpp"
#include "cuda/adamw_cuda.cuh"
#include "llmrdzv/optim/cuda_adamw.hpp"
#include "llmrdzv/optim/fused_adamw.hpp"
#include "step_coeffs.hpp"

#include <catch2/catch.hpp>

namespace {

using llmrdzv::optim::AdamWHyperparams;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// `steps` AdamW steps on n elements by the emulated GPU kernel (<<<3, 64>>>: 192 threads, so each
// strides over the array) and by the CPU's scalar kernel, from the same start.
template <typename Model, typename Grad>
void compare(std::size_t n, const float* device_scale, int steps) {
  std::mt19937 gen(static_cast<std::uint32_t>(n * 7 + steps));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> master(n), m(n, 0.0f), v(n, 0.0f);
  for (float& x : master) x = normal(gen);
  std::vector<float> cpu_master = master, cpu_m = m, cpu_v = v;
  std::vector<Model> model(n);
  AdamWHyperparams hp;
  hp.lr = 3e-3;
  hp.weight_decay = 0.1;
  hp.grad_scale = 0.75;
  for (int step = 1; step <= steps; ++step) {
    std::vector<Grad> grad(n);
    std::vector<float> grad_as_float(n);
    for (std::size_t i = 0; i < n; ++i) {
      grad[i] = Grad(normal(gen) * 0.01f);
      grad_as_float[i] = static_cast<float>(grad[i]);
    }
    const llmrdzv::optim::detail::AdamWCoeffs c = llmrdzv::optim::detail::make_coeffs(hp, step);
    cuda_emulation::launch(3, 64, [&] {
      llmrdzv::optim::detail::mixed_adamw_kernel<Grad, Model>(c, device_scale, master.data(), m.data(), v.data(),
                                                              grad.data(), model.data(), static_cast<std::int64_t>(n));
    });
    AdamWHyperparams cpu_hp = hp;
    if (device_scale) cpu_hp.grad_scale = static_cast<double>(static_cast<float>(hp.grad_scale) * *device_scale);
    llmrdzv::optim::KernelOptions scalar;
    scalar.isa = llmrdzv::optim::Isa::scalar;
    llmrdzv::optim::adamw_step({cpu_master, grad_as_float, cpu_m, cpu_v}, cpu_hp, step, scalar);
    INFO("step " << step << " of " << n << " elements");
    REQUIRE(same_bits(master, cpu_master));
    REQUIRE(same_bits(m, cpu_m));
    REQUIRE(same_bits(v, cpu_v));
    for (std::size_t i = 0; i < n; ++i) {
      const Model rounded(cpu_master[i]);
      REQUIRE(std::memcmp(&model[i], &rounded, sizeof(Model)) == 0);
    }
  }
}

}  // namespace

TEST_CASE("the GPU's mixed-precision AdamW, emulated, matches the CPU's scalar kernel bit for bit (bf16 weights)",
          "[optim][cuda]") {
  const float clip = 0.3f;
  compare<c10::BFloat16, c10::BFloat16>(1000, nullptr, 3);
  compare<c10::BFloat16, c10::BFloat16>(1000, &clip, 3);
  compare<c10::BFloat16, float>(777, &clip, 3);  // gradients summed in fp32 over micro-batches
  compare<c10::BFloat16, c10::BFloat16>(5, nullptr, 2);  // fewer elements than threads
}

TEST_CASE("the GPU's mixed-precision AdamW, emulated, matches the CPU's scalar kernel bit for bit (fp16 weights)",
          "[optim][cuda]") {
  const float unscale = 1.0f / 1024;
  compare<c10::Half, c10::Half>(1000, &unscale, 3);
  compare<c10::Half, float>(333, nullptr, 3);
}

#if LLMRDZV_OPTIM_CUDA
// What the launcher refuses, checked before anything reaches a GPU (so this runs without one).
TEST_CASE("the GPU's mixed-precision AdamW refuses fp32 weights, mismatched gradients and bad hyperparameters by name",
          "[optim][cuda][errors]") {
  using llmrdzv::kernel_support::DeviceElement;
  using llmrdzv::optim::CudaMixedAdamWState;
  const CudaMixedAdamWState fp32_weights{nullptr, nullptr, nullptr, nullptr, DeviceElement::f32,
                                         nullptr, DeviceElement::f32, 10};
  CHECK_THROWS_WITH(llmrdzv::optim::adamw_step_cuda(fp32_weights, AdamWHyperparams{}, 1, nullptr, nullptr),
                    Catch::Contains("writes bf16 or fp16 weights, not fp32 ones"));
  const CudaMixedAdamWState mismatched{nullptr, nullptr, nullptr, nullptr, DeviceElement::f16,
                                       nullptr, DeviceElement::bf16, 10};
  CHECK_THROWS_WITH(llmrdzv::optim::adamw_step_cuda(mismatched, AdamWHyperparams{}, 1, nullptr, nullptr),
                    Catch::Contains("the gradient must be fp32 or in the weights' type"));
  const CudaMixedAdamWState fine{nullptr, nullptr, nullptr, nullptr, DeviceElement::bf16, nullptr, DeviceElement::bf16, 0};
  AdamWHyperparams bad;
  bad.beta2 = 1.0;
  CHECK_THROWS_WITH(llmrdzv::optim::adamw_step_cuda(fine, bad, 1, nullptr, nullptr), Catch::Contains("beta2 must be in [0, 1)"));
  CHECK_THROWS_WITH(llmrdzv::optim::adamw_step_cuda(fine, AdamWHyperparams{}, 0, nullptr, nullptr),
                    Catch::Contains("step must be >= 1"));
  CHECK_NOTHROW(llmrdzv::optim::adamw_step_cuda(fine, AdamWHyperparams{}, 1, nullptr, nullptr));  // n = 0: no launch
}
#endif
