// AVX2 + FMA AdamW kernel (8 floats per register). Built with -mavx2 -mfma; only called after
// the dispatcher checked the CPU has both.
#include <immintrin.h>

#include "kernel_body.hpp"

namespace llmrdzv::optim::detail {
namespace {

struct Avx2Lanes {
  using reg = __m256;
  static constexpr std::size_t width = 8;
  static reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, reg r) { _mm256_storeu_ps(p, r); }
  static __m256i tail_mask(std::size_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static reg load_n(const float* p, std::size_t n) { return _mm256_maskload_ps(p, tail_mask(n)); }
  static void store_n(float* p, reg r, std::size_t n) { _mm256_maskstore_ps(p, tail_mask(n), r); }
  static reg splat(float x) { return _mm256_set1_ps(x); }
  static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg div(reg a, reg b) { return _mm256_div_ps(a, b); }
  static reg sqrt(reg a) { return _mm256_sqrt_ps(a); }
  static reg fmadd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static void opaque(reg& r) { asm volatile("" : "+x"(r)); }
  static reg load_bf16(const std::uint16_t* p) {
    const __m128i bits = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bits), 16));
  }
  static void store_bf16(std::uint16_t* p, reg r) {
    const __m256i bits = _mm256_castps_si256(r);
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7FFF))), 16);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(r, r, _CMP_UNORD_Q));
    rounded = _mm256_blendv_epi8(rounded, _mm256_set1_epi32(0x7FC0), nan);
    // Pack within each 128-bit half, then bring the halves' low quadwords together.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(rounded, rounded), 0xD8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(packed));
  }
};

}  // namespace

void adamw_range_avx2(const AdamWCoeffs& c, float* p, const float* g, float* m, float* v,
                      std::size_t n) {
  apply_lanes<Avx2Lanes>(AdamWUpdate<Avx2Lanes>(c), p, g, m, v, n);
}

void adamw_range_bf16_avx2(const AdamWCoeffs& c, float* p, const std::uint16_t* g16, float* m, float* v,
                           std::uint16_t* out16, std::size_t n) {
  apply_lanes_bf16<Avx2Lanes>(AdamWUpdate<Avx2Lanes>(c), p, g16, m, v, out16, n);
}

void traffic_range_avx2(float* p, const float* g, float* m, float* v, std::size_t n) {
  apply_lanes<Avx2Lanes>(TrafficOnly<Avx2Lanes>{}, p, g, m, v, n);
}

}  // namespace llmrdzv::optim::detail
