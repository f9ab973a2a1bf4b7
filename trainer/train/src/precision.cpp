// Precision rules and loss scaling of precision.hpp.
#include "llmrdzv/train/precision.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace llmrdzv::train {

Precision resolve_precision(const TrainOptions& o, const DeviceTraits& device) {
  Precision p;
  if (o.fp16 && o.bf16.value_or(false)) throw std::invalid_argument("--fp16 and --bf16 cannot both be on");
  if (o.fp16) {
    p.dtype = ComputeDtype::fp16;
  } else if (o.bf16.value_or(device.cuda && device.supports_bf16())) {
    if (!device.supports_bf16()) {
      throw std::invalid_argument("--bf16: " + device.name + " (compute capability " +
                                  std::to_string(device.compute_capability_major) +
                                  ".x) has no bf16 arithmetic; use --fp16, or --bf16 false for fp32");
    }
    p.dtype = ComputeDtype::bf16;
  }
  if (o.tf32.value_or(false) && !device.supports_tf32()) {
    throw std::invalid_argument(device.cuda ? "--tf32: " + device.name + " has no TF32 tensor cores (compute capability 8.0 or newer)"
                                            : std::string("--tf32 needs a CUDA GPU (this run trains on the CPU)"));
  }
  p.tf32 = o.tf32.value_or(device.supports_tf32());
  return p;
}

double device_bytes_per_parameter(ComputeDtype dtype, bool offload, int world_size) {
  const double type = compute_dtype_bytes(dtype);
  if (offload) return 2 * type;  // parameter + gradient; masters and moments are on the host
  const double masters = dtype == ComputeDtype::fp32 ? 0 : 4 + 4;  // fp32 copy and its gradient
  const double sync_buffer = world_size > 1 ? 4 : 0;
  return 2 * type + masters + 4 + 4 + sync_buffer;
}

std::optional<std::string> device_memory_shortfall(std::int64_t parameters, ComputeDtype dtype, bool offload,
                                                   int world_size, const DeviceTraits& device) {
  if (!device.cuda || device.free_memory_bytes <= 0) return std::nullopt;
  const double per_parameter = device_bytes_per_parameter(dtype, offload, world_size);
  const double need = per_parameter * static_cast<double>(parameters);
  if (need <= device.free_memory_bytes) return std::nullopt;
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  char text[512];
  std::snprintf(text, sizeof text,
                "the GPU is too small for this model: its %.3g billion parameters need %.1f GiB on the GPU for weights, "
                "gradients%s alone (%g bytes each in %s%s), and %s has %.1f GiB free",
                static_cast<double>(parameters) / 1e9, need / kGiB, offload ? "" : " and AdamW state", per_parameter,
                dtype_name(dtype), offload ? " with --offload optimizer" : "", device.name.c_str(),
                device.free_memory_bytes / kGiB);
  std::string message = text;
  if (!offload) {
    const double offloaded = device_bytes_per_parameter(dtype, true, world_size) * static_cast<double>(parameters);
    std::snprintf(text, sizeof text, "; --offload optimizer keeps %g bytes per parameter there (%.1f GiB), the rest in host memory",
                  device_bytes_per_parameter(dtype, true, world_size), offloaded / kGiB);
    message += text;
    if (offloaded > device.free_memory_bytes) message += ", which is still too much: use a smaller model";
  } else {
    message += ": use a smaller model";
  }
  return message;
}

const char* dtype_name(ComputeDtype dtype) {
  switch (dtype) {
    case ComputeDtype::bf16: return "bf16";
    case ComputeDtype::fp16: return "fp16";
    case ComputeDtype::fp32: break;
  }
  return "fp32";
}

std::string describe(const Precision& p) {
  std::string text = dtype_name(p.dtype);
  if (p.dtype != ComputeDtype::fp32) text += " (fp32 master weights" + std::string(p.loss_scaling() ? ", dynamic loss scaling)" : ")");
  return text + (p.tf32 ? ", TF32 on" : "");
}

LossScaler::LossScaler(const LossScaling& settings)
    : settings_(settings), scale_(settings.initial_scale), hysteresis_left_(settings.hysteresis) {}

bool LossScaler::update(bool gradients_finite) {
  if (!gradients_finite) {
    good_steps_ = 0;
    if (hysteresis_left_ > 1) {
      --hysteresis_left_;
    } else {
      scale_ = std::max(settings_.min_scale, scale_ / 2);
    }
    return false;
  }
  if (settings_.consecutive_hysteresis) hysteresis_left_ = settings_.hysteresis;
  if (++good_steps_ >= settings_.growth_interval) {
    scale_ *= 2;
    good_steps_ = 0;
    hysteresis_left_ = settings_.hysteresis;
  }
  return true;
}

void LossScaler::restore(double scale, std::int64_t good_steps, std::int64_t hysteresis_left) {
  if (!std::isfinite(scale) || scale < settings_.min_scale || good_steps < 0 || hysteresis_left < 1 ||
      hysteresis_left > settings_.hysteresis) {
    throw std::invalid_argument("loss scale " + std::to_string(scale) + " after " + std::to_string(good_steps) +
                                " good steps with hysteresis " + std::to_string(hysteresis_left) +
                                " left is not a valid state of this run's loss scaler");
  }
  scale_ = scale;
  good_steps_ = good_steps;
  hysteresis_left_ = hysteresis_left;
}

}  // namespace llmrdzv::train
