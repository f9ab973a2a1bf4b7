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
};

}  // namespace

void adamw_range_avx2(const AdamWCoeffs& c, float* p, const float* g, float* m, float* v,
                      std::size_t n) {
  apply_lanes<Avx2Lanes>(AdamWUpdate<Avx2Lanes>(c), p, g, m, v, n);
}

void traffic_range_avx2(float* p, const float* g, float* m, float* v, std::size_t n) {
  apply_lanes<Avx2Lanes>(TrafficOnly<Avx2Lanes>{}, p, g, m, v, n);
}

}  // namespace llmrdzv::optim::detail
