// The AVX2 + FMA SwiGLU loops (8 floats per register), with a vectorised exp: Cody-Waite range
// reduction x = n ln2 + r, |r| <= ln2 / 2, then exp(r) by its Taylor polynomial to degree 7
// (truncation below 1e-8 relative, under the float's rounding) scaled by 2^n built in the exponent
// bits. Inputs are clamped to [-87, 88] first, so 2^n stays a normal float; NaN stays NaN.
// sigmoid(x) = 1 / (1 + exp(-x)) then differs from torch's (Sleef's exp) by an ulp or two.
#include <immintrin.h>

#include "swiglu_kernels.hpp"

namespace llmrdzv::model::detail {
namespace {

__m256 exp_avx2(__m256 x) {
  // max/min return their second operand when either is NaN: a NaN input survives the clamp.
  x = _mm256_min_ps(_mm256_set1_ps(88.0f), _mm256_max_ps(_mm256_set1_ps(-87.0f), x));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln 2 in two parts: n * ln2_hi is exact for |n| < 2^11, so r carries no cancellation error.
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.428606765330187045e-06f), r);
  __m256 p = _mm256_set1_ps(1.0f / 5040);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
  const __m256i biased = _mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127));
  return _mm256_mul_ps(p, _mm256_castsi256_ps(_mm256_slli_epi32(biased, 23)));
}

// 1 + exp(-x): the denominator of both silu and sigmoid.
__m256 one_plus_exp_neg(__m256 x) {
  return _mm256_add_ps(_mm256_set1_ps(1.0f), exp_avx2(_mm256_sub_ps(_mm256_setzero_ps(), x)));
}

__m256i tail_mask(std::int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Plain loads and stores for whole registers; masked ones (microcoded and slow on AMD CPUs) only
// for the tail of fewer than 8.
struct Whole {
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, __m256 r) { _mm256_storeu_ps(p, r); }
};
struct Tail {
  __m256i mask;
  __m256 load(const float* p) const { return _mm256_maskload_ps(p, mask); }
  void store(float* p, __m256 r) const { _mm256_maskstore_ps(p, mask, r); }
};

// Runs body(offset, access) over n elements: whole registers, then one masked tail.
template <class Body>
void for_lanes(std::int64_t n, Body body) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) body(i, Whole{});
  if (i < n) body(i, Tail{tail_mask(n - i)});
}

}  // namespace

void swiglu_forward_avx2(const float* gate, const float* up, float* out, std::int64_t n) {
  for_lanes(n, [&](std::int64_t i, auto access) {
    const __m256 g = access.load(gate + i), u = access.load(up + i);
    const __m256 silu = _mm256_div_ps(g, one_plus_exp_neg(g));
    access.store(out + i, _mm256_mul_ps(silu, u));
  });
}

void swiglu_backward_avx2(const float* gate, const float* up, const float* grad, float* grad_gate, float* grad_up,
                          std::int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  for_lanes(n, [&](std::int64_t i, auto access) {
    const __m256 g = access.load(gate + i), u = access.load(up + i);
    const __m256 dy = access.load(grad + i);
    const __m256 denominator = one_plus_exp_neg(g);
    const __m256 sigmoid = _mm256_div_ps(one, denominator);
    const __m256 silu = _mm256_div_ps(g, denominator);
    access.store(grad_up + i, _mm256_mul_ps(dy, silu));
    const __m256 slope = _mm256_mul_ps(sigmoid, _mm256_add_ps(one, _mm256_mul_ps(g, _mm256_sub_ps(one, sigmoid))));
    access.store(grad_gate + i, _mm256_mul_ps(_mm256_mul_ps(dy, u), slope));
  });
}

}  // namespace llmrdzv::model::detail
