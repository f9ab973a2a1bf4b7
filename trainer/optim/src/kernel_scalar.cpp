// Portable AdamW kernel: plain float code for CPUs without AVX2 (built with the baseline flags,
// where -fno-math-errno lets the compiler use SSE sqrt and vectorise).
#include "kernel_body.hpp"

namespace llmrdzv::optim::detail {
namespace {

struct ScalarLanes {
  using reg = float;
  static constexpr std::size_t width = 1;
  static reg load(const float* p) { return *p; }
  static void store(float* p, reg r) { *p = r; }
  static reg load_n(const float* p, std::size_t) { return *p; }
  static void store_n(float* p, reg r, std::size_t) { *p = r; }
  static reg splat(float x) { return x; }
  static reg add(reg a, reg b) { return a + b; }
  static reg mul(reg a, reg b) { return a * b; }
  static reg div(reg a, reg b) { return a / b; }
  static reg sqrt(reg a) { return __builtin_sqrtf(a); }
  // Fused like torch's kernels (a libm call on CPUs without FMA; this is the fallback).
  static reg fmadd(reg a, reg b, reg c) { return __builtin_fmaf(a, b, c); }
  static void opaque(reg& r) { asm volatile("" : "+x"(r)); }
  static reg load_bf16(const std::uint16_t* p) {
    const std::uint32_t bits = std::uint32_t{*p} << 16;
    float x;
    __builtin_memcpy(&x, &bits, sizeof x);
    return x;
  }
  static void store_bf16(std::uint16_t* p, reg r) {
    std::uint32_t bits;
    __builtin_memcpy(&bits, &r, sizeof bits);
    *p = r != r ? std::uint16_t{0x7FC0} : static_cast<std::uint16_t>((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
  }
};

}  // namespace

void adamw_range_scalar(const AdamWCoeffs& c, float* p, const float* g, float* m, float* v,
                        std::size_t n) {
  apply_lanes<ScalarLanes>(AdamWUpdate<ScalarLanes>(c), p, g, m, v, n);
}

void adamw_range_bf16_scalar(const AdamWCoeffs& c, float* p, const std::uint16_t* g16, float* m, float* v,
                             std::uint16_t* out16, std::size_t n) {
  apply_lanes_bf16<ScalarLanes>(AdamWUpdate<ScalarLanes>(c), p, g16, m, v, out16, n);
}

void traffic_range_scalar(float* p, const float* g, float* m, float* v, std::size_t n) {
  apply_lanes<ScalarLanes>(TrafficOnly<ScalarLanes>{}, p, g, m, v, n);
}

}  // namespace llmrdzv::optim::detail
