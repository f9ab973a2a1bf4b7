// LayerNorm's kernels (trainer/model/src/cuda/layer_norm_forward.cuh, layer_norm_backward.cuh),
// their own source run on the CPU under cuda_block_emulation.hpp, against LayerNorm computed in
// double. Forward: each row's mean, 1 / std and output, with and without the residual add fused
// before it (whose sum must be the rounded add, bit for bit). Backward, from the same mean and
// 1 / std: the input's gradient row by row (plus a gradient passed through, as a residual's), and
// the weight's and bias's summed over rows by blocks that each take a stride of rows and then by
// the column-sum kernel. For widths below, at and past a block's threads and up to the widest
// taken (4096), grids of one block, a few and one per row, in fp32, bf16 and fp16; and what the
// launchers refuse. The same kernels on a GPU, against torch's: tests/trainer/gpu.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cuda_block_emulation.hpp"
#include "cuda/layer_norm_forward.cuh"
#include "cuda_kernels.hpp"

#include <catch2/catch.hpp>

namespace {

namespace k = llmrdzv::model::cuda_kernels;

struct Gradients {
  std::vector<double> dx, dgamma, dbeta;
};

template <typename T>
struct Problem {
  std::int64_t rows;
  int width;
  std::vector<T> x, dy, gamma, dresidual;
  std::vector<float> mean, rstd;

  // With `through`, a gradient dresidual that passes the LayerNorm (as a residual's) is added to dx.
  Problem(std::int64_t rows_n, int width_n, std::uint32_t seed, bool through = false) : rows(rows_n), width(width_n) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    const auto n = static_cast<std::size_t>(rows * width);
    for (std::size_t i = 0; i < n; ++i) x.push_back(T(static_cast<float>(2.0 + 3.0 * normal(gen))));
    for (std::size_t i = 0; i < n; ++i) dy.push_back(T(static_cast<float>(normal(gen))));
    for (int c = 0; c < width; ++c) gamma.push_back(T(static_cast<float>(1.0 + 0.5 * normal(gen))));
    if (through) {
      for (std::size_t i = 0; i < n; ++i) dresidual.push_back(T(static_cast<float>(normal(gen))));
    }
    // As forward keeps them: the row's mean and 1 / sqrt(variance + eps), in fp32.
    for (std::int64_t r = 0; r < rows; ++r) {
      double sum = 0.0, squares = 0.0;
      for (int c = 0; c < width; ++c) sum += value(x, r, c);
      const double mu = sum / width;
      for (int c = 0; c < width; ++c) squares += (value(x, r, c) - mu) * (value(x, r, c) - mu);
      mean.push_back(static_cast<float>(mu));
      rstd.push_back(static_cast<float>(1.0 / std::sqrt(squares / width + 1e-5)));
    }
  }

  double value(const std::vector<T>& v, std::int64_t r, int c) const {
    return static_cast<double>(static_cast<float>(v[static_cast<std::size_t>(r * width + c)]));
  }

  Gradients reference() const {
    Gradients g{std::vector<double>(x.size()), std::vector<double>(static_cast<std::size_t>(width)),
                std::vector<double>(static_cast<std::size_t>(width))};
    for (std::int64_t r = 0; r < rows; ++r) {
      const double mu = mean[static_cast<std::size_t>(r)], inverse_std = rstd[static_cast<std::size_t>(r)];
      double mean_g = 0.0, mean_gx = 0.0;
      for (int c = 0; c < width; ++c) {
        const double x_hat = (value(x, r, c) - mu) * inverse_std;
        const double gc = value(dy, r, c) * static_cast<double>(static_cast<float>(gamma[static_cast<std::size_t>(c)]));
        mean_g += gc / width;
        mean_gx += gc * x_hat / width;
        g.dgamma[static_cast<std::size_t>(c)] += value(dy, r, c) * x_hat;
        g.dbeta[static_cast<std::size_t>(c)] += value(dy, r, c);
      }
      for (int c = 0; c < width; ++c) {
        const double x_hat = (value(x, r, c) - mu) * inverse_std;
        const double gc = value(dy, r, c) * static_cast<double>(static_cast<float>(gamma[static_cast<std::size_t>(c)]));
        const auto i = static_cast<std::size_t>(r * width + c);
        g.dx[i] = inverse_std * (gc - mean_g - x_hat * mean_gx) + (dresidual.empty() ? 0.0 : value(dresidual, r, c));
      }
    }
    return g;
  }

  // Both kernels as the launcher runs them, the row kernel on `blocks` blocks with K columns per
  // thread; the results in T.
  template <int K>
  void run(unsigned blocks, std::vector<T>& dx, std::vector<T>& dgamma, std::vector<T>& dbeta) const {
    dx.assign(x.size(), T(-1.0f));
    dgamma.assign(static_cast<std::size_t>(width), T(-1.0f));
    dbeta.assign(static_cast<std::size_t>(width), T(-1.0f));
    std::vector<float> partial_gamma(static_cast<std::size_t>(blocks) * static_cast<std::size_t>(width), -1.0f);
    std::vector<float> partial_beta(partial_gamma.size(), -1.0f);
    const T *dy_p = dy.data(), *x_p = x.data(), *gamma_p = gamma.data();
    const T* through_p = dresidual.empty() ? nullptr : dresidual.data();
    const float *mean_p = mean.data(), *rstd_p = rstd.data();
    float *pg = partial_gamma.data(), *pb = partial_beta.data();
    T *dx_p = dx.data(), *dgamma_p = dgamma.data(), *dbeta_p = dbeta.data();
    const std::int64_t n = rows;
    const int w = width;
    cuda_emulation::launch(blocks, k::kLayerNormThreads, [=] {
      k::layer_norm_backward_rows_kernel<T, K>(dy_p, x_p, mean_p, rstd_p, gamma_p, through_p, n, w, dx_p, pg, pb);
    });
    const auto column_blocks = static_cast<unsigned>((width + k::kColumnSumColumns - 1) / k::kColumnSumColumns);
    const int parts = static_cast<int>(blocks);
    cuda_emulation::launch(column_blocks, k::kColumnSumColumns * k::kColumnSumGroups,
                           [=] { k::partial_row_sums_kernel<T>(pg, pb, parts, w, dgamma_p, dbeta_p); });
  }
};

// Entries of `got` against `want`: each within rel * (|want| + scale), scale the largest |want|
// over a hundred (so entries near zero are held to the table's size, not their own).
template <typename T>
std::int64_t misses(const std::vector<T>& got, const std::vector<double>& want, double rel) {
  double largest = 0.0;
  for (const double w : want) largest = std::max(largest, std::abs(w));
  std::int64_t bad = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::abs(static_cast<double>(static_cast<float>(got[i])) - want[i]) > rel * (std::abs(want[i]) + largest / 100)) ++bad;
  }
  return bad;
}

template <typename T, int K>
void check(std::int64_t rows, int width, unsigned blocks, double rel, bool through = false) {
  INFO("rows " << rows << " width " << width << " blocks " << blocks << " K " << K << " through " << through);
  const Problem<T> p(rows, width, static_cast<std::uint32_t>(rows * 7919 + width), through);
  const Gradients want = p.reference();
  std::vector<T> dx, dgamma, dbeta;
  p.template run<K>(blocks, dx, dgamma, dbeta);
  CHECK(misses(dx, want.dx, rel) == 0);
  CHECK(misses(dgamma, want.dgamma, rel) == 0);
  CHECK(misses(dbeta, want.dbeta, rel) == 0);
}

// The forward kernel on rows of x (x + residual with `residual`) against LayerNorm in double over
// the same rows; the fused add's sum must be the rounded add, bit for bit.
template <typename T, int K>
void check_forward(std::int64_t rows, int width, unsigned blocks, bool residual, double rel, double offset = 2.0) {
  INFO("forward: rows " << rows << " width " << width << " blocks " << blocks << " K " << K << " residual " << residual);
  std::mt19937 gen(static_cast<std::uint32_t>(rows * 31 + width));
  std::normal_distribution<double> normal(0.0, 1.0);
  const auto n = static_cast<std::size_t>(rows * width);
  std::vector<T> x, res, gamma, beta;
  for (std::size_t i = 0; i < n; ++i) x.push_back(T(static_cast<float>(offset + 3.0 * normal(gen))));
  if (residual) {
    for (std::size_t i = 0; i < n; ++i) res.push_back(T(static_cast<float>(normal(gen))));
  }
  for (int c = 0; c < width; ++c) gamma.push_back(T(static_cast<float>(1.0 + 0.5 * normal(gen))));
  for (int c = 0; c < width; ++c) beta.push_back(T(static_cast<float>(0.5 * normal(gen))));
  std::vector<T> sum(n, T(-1.0f)), y(n, T(-1.0f));
  std::vector<float> mean(static_cast<std::size_t>(rows), -1.0f), rstd(static_cast<std::size_t>(rows), -1.0f);
  {
    const T *x_p = x.data(), *r_p = residual ? res.data() : nullptr, *g_p = gamma.data(), *b_p = beta.data();
    T *s_p = sum.data(), *y_p = y.data();
    float *m_p = mean.data(), *rs_p = rstd.data();
    const std::int64_t count = rows;
    const int w = width;
    cuda_emulation::launch(blocks, k::kLayerNormThreads, [=] {
      k::layer_norm_forward_rows_kernel<T, K>(x_p, r_p, g_p, b_p, count, w, 1e-5f, s_p, y_p, m_p, rs_p);
    });
  }
  const auto f = [](T v) { return static_cast<double>(static_cast<float>(v)); };
  std::int64_t bad_sum = 0, bad_stats = 0;
  std::vector<double> want(n);
  for (std::int64_t r = 0; r < rows; ++r) {
    std::vector<double> v(static_cast<std::size_t>(width));
    for (int c = 0; c < width; ++c) {
      const auto i = static_cast<std::size_t>(r * width + c);
      if (residual) {
        const T added(static_cast<float>(x[i]) + static_cast<float>(res[i]));
        if (f(sum[i]) != f(added)) ++bad_sum;
        v[static_cast<std::size_t>(c)] = f(added);
      } else {
        if (f(sum[i]) != -1.0) ++bad_sum;  // not touched without a residual
        v[static_cast<std::size_t>(c)] = f(x[i]);
      }
    }
    double mu = 0.0, var = 0.0;
    for (const double e : v) mu += e / width;
    for (const double e : v) var += (e - mu) * (e - mu) / width;
    const double inverse_std = 1.0 / std::sqrt(var + 1e-5);
    if (std::abs(mean[static_cast<std::size_t>(r)] - mu) > 1e-5 * (std::abs(mu) + 1.0 / inverse_std)) ++bad_stats;
    if (std::abs(rstd[static_cast<std::size_t>(r)] - inverse_std) > 1e-4 * inverse_std) ++bad_stats;
    for (int c = 0; c < width; ++c) {
      want[static_cast<std::size_t>(r * width + c)] =
          (v[static_cast<std::size_t>(c)] - mu) * inverse_std * f(gamma[static_cast<std::size_t>(c)]) + f(beta[static_cast<std::size_t>(c)]);
    }
  }
  CHECK(bad_sum == 0);
  CHECK(bad_stats == 0);
  CHECK(misses(y, want, rel) == 0);
}

}  // namespace

TEST_CASE("LayerNorm's backward kernels, emulated, give the gradients computed in double (fp32)",
          "[model][layer_norm][cuda]") {
  // Widths under, at and past a block's 256 threads, each with as many columns per thread as the
  // launcher gives it; one block for all rows, a few, and one per row.
  for (const unsigned blocks : {1u, 3u, 9u}) {
    check<float, 4>(9, 1, blocks, 1e-5);
    check<float, 4>(9, 7, blocks, 1e-5);
    check<float, 4>(9, 256, blocks, 1e-5);
    check<float, 4>(9, 300, blocks, 1e-5);
  }
  check<float, 4>(6, 768, 4, 1e-5);    // GPT-2 124M
  check<float, 8>(4, 1600, 3, 1e-5);   // GPT-2 XL
  check<float, 16>(2, 4096, 2, 1e-5);  // the widest taken
  check<float, 16>(5, 40, 2, 1e-5);    // more columns per thread than the width needs
}

TEST_CASE("LayerNorm's backward kernels, emulated, in bf16: each result one rounding from the fp32 maths",
          "[model][layer_norm][cuda]") {
  // Inputs and outputs in bf16 (8 significant bits), the maths in fp32: 2^-7 bounds one rounding.
  check<c10::BFloat16, 4>(7, 768, 3, 1.0 / 128);
  check<c10::BFloat16, 8>(3, 1600, 2, 1.0 / 128);
  check<c10::Half, 4>(5, 300, 5, 1.0 / 512);
}

TEST_CASE("LayerNorm's backward kernels, emulated, add a gradient passed through to the input's",
          "[model][layer_norm][cuda]") {
  check<float, 4>(9, 300, 3, 1e-5, /*through=*/true);
  check<float, 4>(6, 768, 4, 1e-5, true);
  check<c10::BFloat16, 4>(7, 768, 3, 1.0 / 128, true);
}

TEST_CASE("LayerNorm's forward kernel, emulated, gives each row's mean, 1 / std and output computed in double (fp32)",
          "[model][layer_norm][cuda]") {
  for (const unsigned blocks : {1u, 3u, 9u}) {
    check_forward<float, 4>(9, 1, blocks, false, 1e-5);
    check_forward<float, 4>(9, 7, blocks, false, 1e-5);
    check_forward<float, 4>(9, 256, blocks, false, 1e-5);
    check_forward<float, 4>(9, 300, blocks, false, 1e-5);
  }
  check_forward<float, 4>(6, 768, 4, false, 1e-5);
  check_forward<float, 8>(4, 1600, 3, false, 1e-5);
  check_forward<float, 16>(2, 4096, 2, false, 1e-5);
  check_forward<float, 16>(5, 40, 2, false, 1e-5);
  // A mean a thousand times the spread: the variance is taken about the mean, not as E[x^2] - mean^2
  // (which loses ~5% of it here); fp32's rounding of the mean alone costs ~1e-4 of the spread.
  check_forward<float, 4>(4, 768, 2, false, 2e-3, 3000.0);
}

TEST_CASE("LayerNorm's forward kernel, emulated, fused with the residual add: the rounded sum, then its LayerNorm",
          "[model][layer_norm][cuda]") {
  check_forward<float, 4>(9, 300, 3, true, 1e-5);
  check_forward<float, 4>(6, 768, 4, true, 1e-5);
  check_forward<c10::BFloat16, 4>(7, 768, 3, true, 1.0 / 128);
  check_forward<c10::BFloat16, 8>(3, 1600, 2, true, 1.0 / 128);
  check_forward<c10::Half, 4>(5, 300, 5, true, 1.0 / 512);
  check_forward<c10::BFloat16, 4>(7, 768, 3, false, 1.0 / 128);
}

#if LLMRDZV_HAVE_CUDA_KERNELS
TEST_CASE("LayerNorm's launchers refuse widths they cannot take and an empty grid, before reaching a GPU",
          "[model][layer_norm][cuda][errors]") {
  using llmrdzv::model::detail::layer_norm_backward_cuda;
  using llmrdzv::model::detail::LayerNormBackward;
  const auto bf16 = llmrdzv::kernel_support::DeviceElement::bf16;
  const auto args = [](std::int64_t rows, std::int64_t width, std::int64_t blocks) {
    return LayerNormBackward{nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, rows, width, blocks,
                             nullptr, nullptr, nullptr, nullptr, nullptr};
  };
  CHECK_THROWS_WITH(layer_norm_backward_cuda(args(8, 4097, 4), bf16, nullptr), "layer_norm_backward_cuda: width 4097 is outside 1..4096");
  CHECK_THROWS_WITH(layer_norm_backward_cuda(args(8, 0, 4), bf16, nullptr), "layer_norm_backward_cuda: width 0 is outside 1..4096");
  CHECK_THROWS_WITH(layer_norm_backward_cuda(args(8, 768, 0), bf16, nullptr), "layer_norm_backward_cuda: 0 blocks");
  CHECK_NOTHROW(layer_norm_backward_cuda(args(0, 768, 1), bf16, nullptr));  // no rows: no launch

  using llmrdzv::model::detail::layer_norm_forward_cuda;
  using llmrdzv::model::detail::LayerNormForward;
  const auto forward = [](std::int64_t rows, std::int64_t width, std::int64_t blocks) {
    return LayerNormForward{nullptr, nullptr, nullptr, nullptr, rows, width, blocks, 1e-5f, nullptr, nullptr, nullptr, nullptr};
  };
  CHECK_THROWS_WITH(layer_norm_forward_cuda(forward(8, 4097, 4), bf16, nullptr), "layer_norm_forward_cuda: width 4097 is outside 1..4096");
  CHECK_THROWS_WITH(layer_norm_forward_cuda(forward(8, 0, 4), bf16, nullptr), "layer_norm_forward_cuda: width 0 is outside 1..4096");
  CHECK_THROWS_WITH(layer_norm_forward_cuda(forward(8, 768, 0), bf16, nullptr), "layer_norm_forward_cuda: 0 blocks");
  CHECK_NOTHROW(layer_norm_forward_cuda(forward(0, 768, 1), bf16, nullptr));
}
#endif
