// The AdamW update and the traffic-only ceiling pass written once, generic over a "lanes" type
// that wraps one instruction set's registers. Each ISA translation unit (kernel_*.cpp, built with
// its own -m flags) instantiates these with its lanes type, so the variants cannot drift apart.
// Only <immintrin.h>-level code may live here: these TUs are compiled for CPUs the program may
// not run on, so they must not define inline library code the linker could share with others.
// The GPU kernel (cuda/adamw_cuda.cuh) instantiates AdamWUpdate too, with lanes of one float.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernel_coeffs.hpp"

// AdamWUpdate runs on the host and, under nvcc, on the device.
#ifdef __CUDACC__
#define LLMRDZV_HOST_DEVICE __host__ __device__
#else
#define LLMRDZV_HOST_DEVICE
#endif

namespace llmrdzv::optim::detail {

// Lanes requirements: width; load(p)/store(p, r); load_n(p, n)/store_n(p, r, n) for the tail
// (n < width); splat(x); add, mul, div, sqrt, fmadd(a, b, c) = a * b + c; opaque(r), which hides
// a register's value from the optimiser without changing it; for apply_lanes_bf16,
// load_bf16(p) (width bf16 values, exactly) and store_bf16(p, r) (rounded to nearest even, NaN
// as 0x7FC0: torch's rounding).
template <class Lanes>
struct AdamWUpdate {
  typename Lanes::reg grad_scale, decay, beta1, one_minus_beta1, beta2, one_minus_beta2, sqrt_bc2, eps,
      neg_step_size;

  LLMRDZV_HOST_DEVICE explicit AdamWUpdate(const AdamWCoeffs& c)
      : grad_scale(Lanes::splat(c.grad_scale)),
        decay(Lanes::splat(c.decay)),
        beta1(Lanes::splat(c.beta1)),
        one_minus_beta1(Lanes::splat(c.one_minus_beta1)),
        beta2(Lanes::splat(c.beta2)),
        one_minus_beta2(Lanes::splat(c.one_minus_beta2)),
        sqrt_bc2(Lanes::splat(c.sqrt_bias_correction2)),
        eps(Lanes::splat(c.eps)),
        neg_step_size(Lanes::splat(c.neg_step_size)) {}

  // The same operations, in the same order and with the same fused multiply-adds, as
  // torch's clip_grad_norm_ then torch::optim::AdamW's tensor ops (checked bit for bit on m and
  // v): scale g, decay p, update m and v, then p += (-step_size * m) / (sqrt(v) / sqrt(bc2) + eps).
  LLMRDZV_HOST_DEVICE void operator()(typename Lanes::reg& p, typename Lanes::reg g, typename Lanes::reg& m,
                                      typename Lanes::reg& v) const {
    g = Lanes::mul(g, grad_scale);
    p = Lanes::mul(p, decay);
    m = Lanes::fmadd(g, one_minus_beta1, Lanes::mul(m, beta1));
    v = Lanes::fmadd(Lanes::mul(one_minus_beta2, g), g, Lanes::mul(v, beta2));
    const auto denom = Lanes::add(Lanes::div(Lanes::sqrt(v), sqrt_bc2), eps);
    p = Lanes::add(p, Lanes::div(Lanes::mul(m, neg_step_size), denom));
  }
};

template <class Lanes>
struct TrafficOnly {
  void operator()(typename Lanes::reg& p, typename Lanes::reg g, typename Lanes::reg& m,
                  typename Lanes::reg& v) const {
    Lanes::opaque(p);
    Lanes::opaque(g);
    Lanes::opaque(m);
    Lanes::opaque(v);
  }
};

// Applies `update` to n consecutive elements of the four arrays.
template <class Lanes, class Update>
void apply_lanes(const Update& update, float* p, const float* g, float* m, float* v, std::size_t n) {
  std::size_t i = 0;
  for (; i + Lanes::width <= n; i += Lanes::width) {
    auto pr = Lanes::load(p + i), mr = Lanes::load(m + i), vr = Lanes::load(v + i);
    update(pr, Lanes::load(g + i), mr, vr);
    Lanes::store(p + i, pr);
    Lanes::store(m + i, mr);
    Lanes::store(v + i, vr);
  }
  if (const std::size_t rest = n - i; rest > 0) {
    auto pr = Lanes::load_n(p + i, rest), mr = Lanes::load_n(m + i, rest),
         vr = Lanes::load_n(v + i, rest);
    update(pr, Lanes::load_n(g + i, rest), mr, vr);
    Lanes::store_n(p + i, pr, rest);
    Lanes::store_n(m + i, mr, rest);
    Lanes::store_n(v + i, vr, rest);
  }
}

// The update of apply_lanes for a gradient that arrives in bf16 (g16, raw bits), also writing the
// updated parameters rounded to bf16 to out16, in the same pass: the bits of widening the
// gradient, updating in fp32 and rounding the parameters in three passes, with two passes' memory
// traffic less. out16 may be g16 itself (each block of lanes is read before it is written).
template <class Lanes>
void apply_lanes_bf16(const AdamWUpdate<Lanes>& update, float* p, const std::uint16_t* g16, float* m, float* v,
                      std::uint16_t* out16, std::size_t n) {
  constexpr std::size_t width = Lanes::width;
  std::size_t i = 0;
  for (; i + width <= n; i += width) {
    auto pr = Lanes::load(p + i), mr = Lanes::load(m + i), vr = Lanes::load(v + i);
    update(pr, Lanes::load_bf16(g16 + i), mr, vr);
    Lanes::store(p + i, pr);
    Lanes::store(m + i, mr);
    Lanes::store(v + i, vr);
    Lanes::store_bf16(out16 + i, pr);
  }
  if (const std::size_t rest = n - i; rest > 0) {  // through full-width copies of the 16-bit arrays
    std::uint16_t g_tail[width] = {}, out_tail[width] = {};
    __builtin_memcpy(g_tail, g16 + i, rest * sizeof(std::uint16_t));
    auto pr = Lanes::load_n(p + i, rest), mr = Lanes::load_n(m + i, rest), vr = Lanes::load_n(v + i, rest);
    update(pr, Lanes::load_bf16(g_tail), mr, vr);
    Lanes::store_n(p + i, pr, rest);
    Lanes::store_n(m + i, mr, rest);
    Lanes::store_n(v + i, vr, rest);
    Lanes::store_bf16(out_tail, pr);
    __builtin_memcpy(out16 + i, out_tail, rest * sizeof(std::uint16_t));
  }
}

}  // namespace llmrdzv::optim::detail
