// AVX-512F AdamW kernel (16 floats per register, masked tail). Built with -mavx512f; only
// called after the dispatcher checked the CPU has it.
#include <immintrin.h>

#include "kernel_body.hpp"

namespace llmrdzv::optim::detail {
namespace {

struct Avx512Lanes {
  using reg = __m512;
  static constexpr std::size_t width = 16;
  static reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, reg r) { _mm512_storeu_ps(p, r); }
  static __mmask16 tail_mask(std::size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static reg load_n(const float* p, std::size_t n) { return _mm512_maskz_loadu_ps(tail_mask(n), p); }
  static void store_n(float* p, reg r, std::size_t n) { _mm512_mask_storeu_ps(p, tail_mask(n), r); }
  static reg splat(float x) { return _mm512_set1_ps(x); }
  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg div(reg a, reg b) { return _mm512_div_ps(a, b); }
  // maskz form: GCC 12's _mm512_sqrt_ps trips -Wmaybe-uninitialized on its undefined source.
  static reg sqrt(reg a) { return _mm512_maskz_sqrt_ps(__mmask16(0xFFFF), a); }
  static reg fmadd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static void opaque(reg& r) { asm volatile("" : "+v"(r)); }
  // The maskz forms of the widening, shifts and narrowing, for the same reason as sqrt's.
  static constexpr __mmask16 kAll = 0xFFFF;
  static reg load_bf16(const std::uint16_t* p) {
    const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(kAll, _mm512_maskz_cvtepu16_epi32(kAll, bits), 16));
  }
  static void store_bf16(std::uint16_t* p, reg r) {
    const __m512i bits = _mm512_castps_si512(r);
    const __m512i odd = _mm512_and_si512(_mm512_maskz_srli_epi32(kAll, bits, 16), _mm512_set1_epi32(1));
    __m512i rounded =
        _mm512_maskz_srli_epi32(kAll, _mm512_add_epi32(bits, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7FFF))), 16);
    rounded = _mm512_mask_blend_epi32(_mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q), rounded, _mm512_set1_epi32(0x7FC0));
    // Narrowing by truncation: each value fits in 16 bits.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_maskz_cvtepi32_epi16(kAll, rounded));
  }
};

}  // namespace

void adamw_range_avx512(const AdamWCoeffs& c, float* p, const float* g, float* m, float* v,
                        std::size_t n) {
  apply_lanes<Avx512Lanes>(AdamWUpdate<Avx512Lanes>(c), p, g, m, v, n);
}

void adamw_range_bf16_avx512(const AdamWCoeffs& c, float* p, const std::uint16_t* g16, float* m, float* v,
                             std::uint16_t* out16, std::size_t n) {
  apply_lanes_bf16<Avx512Lanes>(AdamWUpdate<Avx512Lanes>(c), p, g16, m, v, out16, n);
}

void traffic_range_avx512(float* p, const float* g, float* m, float* v, std::size_t n) {
  apply_lanes<Avx512Lanes>(TrafficOnly<Avx512Lanes>{}, p, g, m, v, n);
}

}  // namespace llmrdzv::optim::detail
