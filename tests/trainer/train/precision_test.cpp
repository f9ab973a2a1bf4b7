// Which precision a run computes in (--bf16/--fp16/--tf32 and their auto defaults per device),
// and fp16's dynamic loss scaling.
#include "llmrdzv/train/precision.hpp"

#include <catch2/catch.hpp>

#include <limits>
#include <optional>
#include <stdexcept>

using namespace llmrdzv::train;

namespace {

DeviceTraits gpu(int major) { return {.cuda = true, .name = "Test GPU", .compute_capability_major = major}; }

TrainOptions with(std::optional<bool> bf16, bool fp16, std::optional<bool> tf32) {
  TrainOptions o;
  o.bf16 = bf16;
  o.fp16 = fp16;
  o.tf32 = tf32;
  return o;
}

}  // namespace

TEST_CASE("auto precision: bf16 and TF32 on GPUs that have them, fp32 elsewhere", "[precision]") {
  const Precision h100 = resolve_precision({}, gpu(9));
  CHECK(h100.dtype == ComputeDtype::bf16);
  CHECK(h100.tf32);
  CHECK(describe(h100) == "bf16 (fp32 master weights), TF32 on");
  const Precision v100 = resolve_precision({}, gpu(7));
  CHECK(v100.dtype == ComputeDtype::fp32);
  CHECK_FALSE(v100.tf32);
  const Precision cpu = resolve_precision({}, DeviceTraits{});
  CHECK(cpu.dtype == ComputeDtype::fp32);
  CHECK_FALSE(cpu.tf32);
  CHECK(describe(cpu) == "fp32");
}

TEST_CASE("explicit precision flags win over auto, or are refused where the device lacks them", "[precision]") {
  CHECK(resolve_precision(with(false, false, false), gpu(9)).dtype == ComputeDtype::fp32);
  CHECK_FALSE(resolve_precision(with(false, false, false), gpu(9)).tf32);
  const Precision fp16 = resolve_precision(with(std::nullopt, true, std::nullopt), gpu(9));
  CHECK(fp16.dtype == ComputeDtype::fp16);
  CHECK(fp16.loss_scaling());
  CHECK(describe(fp16) == "fp16 (fp32 master weights, dynamic loss scaling), TF32 on");
  CHECK(resolve_precision(with(std::nullopt, true, std::nullopt), gpu(7)).dtype == ComputeDtype::fp16);
  CHECK(resolve_precision(with(true, false, std::nullopt), DeviceTraits{}).dtype == ComputeDtype::bf16);  // CPU bf16 works
  CHECK_THROWS_WITH(resolve_precision(with(true, false, std::nullopt), gpu(7)),
                    "--bf16: Test GPU (compute capability 7.x) has no bf16 arithmetic; use --fp16, or --bf16 false for fp32");
  CHECK_THROWS_WITH(resolve_precision(with(std::nullopt, false, true), DeviceTraits{}),
                    "--tf32 needs a CUDA GPU (this run trains on the CPU)");
  CHECK_THROWS_WITH(resolve_precision(with(std::nullopt, false, true), gpu(7)), Catch::Contains("has no TF32 tensor cores"));
  CHECK_THROWS_AS(resolve_precision(with(true, true, std::nullopt), gpu(9)), std::invalid_argument);
}

TEST_CASE("loss scaling halves on overflow, skips that step and doubles after a run of good steps", "[precision]") {
  const LossScaling defaults;  // torch's GradScaler, as transformers uses it
  LossScaler scaler;
  CHECK(scaler.scale() == 65536.0);
  CHECK_FALSE(scaler.update(false));
  CHECK(scaler.scale() == 32768.0);
  for (std::int64_t i = 0; i + 1 < defaults.growth_interval; ++i) REQUIRE(scaler.update(true));
  CHECK(scaler.scale() == 32768.0);
  CHECK(scaler.good_steps() == 1999);
  CHECK(scaler.update(true));
  CHECK(scaler.scale() == 65536.0);
  CHECK(scaler.good_steps() == 0);
  for (int i = 0; i < 40; ++i) scaler.update(false);
  CHECK(scaler.scale() == 1.0);  // never below 1
  scaler.restore(1024, 7, 1);
  CHECK(scaler.scale() == 1024);
  CHECK(scaler.good_steps() == 7);
  CHECK_THROWS_WITH(scaler.restore(0.5, 0, 1), Catch::Contains("is not a valid state of this run's loss scaler"));
  CHECK_THROWS_AS(scaler.restore(std::numeric_limits<double>::quiet_NaN(), 0, 1), std::invalid_argument);
  CHECK_THROWS_AS(scaler.restore(1024, 0, 2), std::invalid_argument);  // more hysteresis than the settings have
}

// DeepSpeed's DynamicLossScaler (its fp16 block: initial_scale_power, loss_scale_window,
// hysteresis, consecutive_hysteresis, min_loss_scale), through the same steps.
TEST_CASE("DeepSpeed's loss-scale settings: hysteresis delays the halving, a floor holds it", "[precision][deepspeed]") {
  LossScaler scaler(LossScaling{.initial_scale = 1024, .growth_interval = 3, .hysteresis = 2, .min_scale = 256});
  CHECK_FALSE(scaler.update(false));  // the first overflow uses up the hysteresis: skipped, scale kept
  CHECK(scaler.scale() == 1024);
  CHECK(scaler.hysteresis_left() == 1);
  CHECK_FALSE(scaler.update(false));  // the second halves it
  CHECK(scaler.scale() == 512);
  CHECK(scaler.update(true));
  CHECK_FALSE(scaler.update(false));  // good steps without a growth do not restore the hysteresis
  CHECK(scaler.scale() == 256);
  CHECK_FALSE(scaler.update(false));
  CHECK(scaler.scale() == 256);  // min_loss_scale
  for (int i = 0; i < 3; ++i) CHECK(scaler.update(true));
  CHECK(scaler.scale() == 512);  // grown after loss_scale_window good steps, and the hysteresis restored
  CHECK(scaler.hysteresis_left() == 2);
  CHECK_FALSE(scaler.update(false));
  CHECK(scaler.scale() == 512);

  LossScaler consecutive(LossScaling{.initial_scale = 1024, .growth_interval = 100, .hysteresis = 2, .consecutive_hysteresis = true});
  CHECK_FALSE(consecutive.update(false));
  CHECK(consecutive.update(true));  // restores the hysteresis
  CHECK_FALSE(consecutive.update(false));
  CHECK(consecutive.scale() == 1024);
  CHECK_FALSE(consecutive.update(false));
  CHECK(consecutive.scale() == 512);
}

TEST_CASE("a model whose weights, gradients and AdamW state exceed the GPU's free memory is refused before it moves there",
          "[precision][memory]") {
  // Mixed precision without offload: bf16 parameter and gradient, fp32 master and its gradient,
  // two fp32 moments (20 bytes); offload leaves the bf16 parameter and gradient (4 bytes).
  CHECK(device_bytes_per_parameter(ComputeDtype::bf16, false, 1) == 20);
  CHECK(device_bytes_per_parameter(ComputeDtype::fp32, false, 1) == 16);
  CHECK(device_bytes_per_parameter(ComputeDtype::fp32, false, 2) == 20);
  CHECK(device_bytes_per_parameter(ComputeDtype::bf16, true, 4) == 4);
  CHECK(device_bytes_per_parameter(ComputeDtype::fp32, true, 1) == 8);

  DeviceTraits h100 = gpu(9);
  h100.name = "NVIDIA H100 80GB HBM3";
  h100.free_memory_bytes = 79.0 * (1 << 30);
  const std::int64_t gpt2_6_7b = 6'650'000'000;
  const auto refused = device_memory_shortfall(gpt2_6_7b, ComputeDtype::bf16, false, 1, h100);
  REQUIRE(refused);
  CHECK_THAT(*refused, Catch::Contains("6.65 billion parameters need 123.9 GiB"));
  CHECK_THAT(*refused, Catch::Contains("20 bytes each in bf16"));
  CHECK_THAT(*refused, Catch::Contains("NVIDIA H100 80GB HBM3 has 79.0 GiB free"));
  CHECK_THAT(*refused, Catch::Contains("--offload optimizer keeps 4 bytes per parameter there (24.8 GiB)"));
  CHECK_FALSE(device_memory_shortfall(gpt2_6_7b, ComputeDtype::bf16, true, 1, h100));
  // GPT-2 124M fits either way; the CPU is never refused here.
  CHECK_FALSE(device_memory_shortfall(124'439'808, ComputeDtype::fp32, false, 1, h100));
  CHECK_FALSE(device_memory_shortfall(gpt2_6_7b, ComputeDtype::fp32, false, 1, DeviceTraits{}));
  // Too large even offloaded: said so.
  const auto huge = device_memory_shortfall(40'000'000'000, ComputeDtype::bf16, false, 1, h100);
  REQUIRE(huge);
  CHECK_THAT(*huge, Catch::Contains("still too much"));
  const auto huge_offloaded = device_memory_shortfall(40'000'000'000, ComputeDtype::bf16, true, 1, h100);
  REQUIRE(huge_offloaded);
  CHECK_THAT(*huge_offloaded, Catch::Contains("4 bytes each in bf16 with --offload optimizer"));
}
