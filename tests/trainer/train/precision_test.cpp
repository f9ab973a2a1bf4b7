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
  LossScaler scaler;
  CHECK(scaler.scale() == LossScaler::kInitialScale);
  CHECK_FALSE(scaler.update(false));
  CHECK(scaler.scale() == LossScaler::kInitialScale / 2);
  for (std::int64_t i = 0; i + 1 < LossScaler::kGrowthInterval; ++i) REQUIRE(scaler.update(true));
  CHECK(scaler.scale() == LossScaler::kInitialScale / 2);
  CHECK(scaler.good_steps() == LossScaler::kGrowthInterval - 1);
  CHECK(scaler.update(true));
  CHECK(scaler.scale() == LossScaler::kInitialScale);
  CHECK(scaler.good_steps() == 0);
  for (int i = 0; i < 40; ++i) scaler.update(false);
  CHECK(scaler.scale() == 1.0);  // never below 1
  scaler.restore(1024, 7);
  CHECK(scaler.scale() == 1024);
  CHECK(scaler.good_steps() == 7);
  CHECK_THROWS_WITH(scaler.restore(0.5, 0), Catch::Contains("is not a valid loss-scaler state"));
  CHECK_THROWS_AS(scaler.restore(std::numeric_limits<double>::quiet_NaN(), 0), std::invalid_argument);
}
