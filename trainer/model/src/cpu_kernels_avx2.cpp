// The AVX2 + FMA loops of cpu_kernels.hpp (8 floats per register), with a vectorised exp: Cody-Waite range
// reduction x = n ln2 + r, |r| <= ln2 / 2, then exp(r) by its Taylor polynomial to degree 7
// (truncation below 1e-8 relative, under the float's rounding) scaled by 2^n built in the exponent
// bits. Inputs are clamped to [-87, 88] first, so 2^n stays a normal float; NaN stays NaN.
// sigmoid(x) = 1 / (1 + exp(-x)) then differs from torch's (Sleef's exp) by an ulp or two.
#include <immintrin.h>

#include "cpu_kernels.hpp"

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

// The sum of the 8 lanes, in double.
double sum_lanes(__m256 v) {
  const __m256d pairs = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(v)), _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)));
  const __m128d halves = _mm_add_pd(_mm256_castpd256_pd128(pairs), _mm256_extractf128_pd(pairs, 1));
  return _mm_cvtsd_f64(_mm_add_sd(halves, _mm_unpackhi_pd(halves, halves)));
}

float max_lanes(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  return _mm_cvtss_f32(_mm_max_ss(m, _mm_shuffle_ps(m, m, 1)));
}

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

// Three passes over the row, which a vocabulary's worth of floats leaves in L2 between them: the
// max; the exps, stored and summed (in float over blocks of 128 registers, then in double); the
// division. The tail's masked-off lanes load as 0 and are kept out of the max and the sum.
double logsumexp_row_avx2(float* row, std::int64_t n, bool softmax) {
  const std::int64_t whole = n & ~std::int64_t{7};
  const __m256i tail = tail_mask(n - whole);
  const __m256 tail_lanes = _mm256_castsi256_ps(tail);
  const __m256 minus_inf = _mm256_set1_ps(-__builtin_inff());
  __m256 m0 = minus_inf, m1 = minus_inf;
  std::int64_t i = 0;
  for (; i + 16 <= whole; i += 16) {
    m0 = _mm256_max_ps(m0, _mm256_loadu_ps(row + i));
    m1 = _mm256_max_ps(m1, _mm256_loadu_ps(row + i + 8));
  }
  if (i < whole) m0 = _mm256_max_ps(m0, _mm256_loadu_ps(row + i));
  if (whole < n) m1 = _mm256_max_ps(m1, _mm256_blendv_ps(minus_inf, _mm256_maskload_ps(row + whole, tail), tail_lanes));
  const float max = max_lanes(_mm256_max_ps(m0, m1));

  // A NaN logit gives a NaN exp (exp_avx2 keeps it), so the sum and the result are NaN.
  const __m256 shift = _mm256_set1_ps(max);
  double sum = 0;
  __m256 block = _mm256_setzero_ps();
  int registers = 0;
  for (i = 0; i < whole; i += 8) {
    const __m256 e = exp_avx2(_mm256_sub_ps(_mm256_loadu_ps(row + i), shift));
    if (softmax) _mm256_storeu_ps(row + i, e);
    block = _mm256_add_ps(block, e);
    if (++registers == 128) {
      sum += sum_lanes(block);
      block = _mm256_setzero_ps();
      registers = 0;
    }
  }
  if (whole < n) {
    const __m256 e = _mm256_and_ps(exp_avx2(_mm256_sub_ps(_mm256_maskload_ps(row + whole, tail), shift)), tail_lanes);
    if (softmax) _mm256_maskstore_ps(row + whole, tail, e);
    block = _mm256_add_ps(block, e);
  }
  sum += sum_lanes(block);

  if (softmax) {
    const __m256 inverse = _mm256_set1_ps(static_cast<float>(1.0 / sum));
    for_lanes(n, [&](std::int64_t at, auto access) { access.store(row + at, _mm256_mul_ps(access.load(row + at), inverse)); });
  }
  // Builtins, not <cmath>/<limits>: no inline library code in this TU (see cpu_kernels.hpp).
  return static_cast<double>(max) + __builtin_log(sum);
}

}  // namespace llmrdzv::model::detail
