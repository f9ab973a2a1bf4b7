// LayerNorm's backward kernels (trainer/model/src/cuda/layer_norm_backward.cuh), their own source
// run on the CPU under cuda_block_emulation.hpp, against LayerNorm's gradients computed in double
// from the same mean and 1 / std: the input's gradient row by row, and the weight's and bias's
// summed over rows by blocks that each take a stride of rows and then by the column-sum kernel;
// for widths below, at and past a block's threads and up to the widest taken (4096), grids of one
// block, a few and one per row, in fp32 and bf16; and what the launcher refuses. The same kernels
// on a GPU, against torch's backward: tests/trainer/gpu.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cuda_block_emulation.hpp"
#include "cuda/layer_norm_backward.cuh"
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
  std::vector<T> x, dy, gamma;
  std::vector<float> mean, rstd;

  Problem(std::int64_t rows_n, int width_n, std::uint32_t seed) : rows(rows_n), width(width_n) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> normal(0.0, 1.0);
    const auto n = static_cast<std::size_t>(rows * width);
    for (std::size_t i = 0; i < n; ++i) x.push_back(T(static_cast<float>(2.0 + 3.0 * normal(gen))));
    for (std::size_t i = 0; i < n; ++i) dy.push_back(T(static_cast<float>(normal(gen))));
    for (int c = 0; c < width; ++c) gamma.push_back(T(static_cast<float>(1.0 + 0.5 * normal(gen))));
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
        g.dx[static_cast<std::size_t>(r * width + c)] = inverse_std * (gc - mean_g - x_hat * mean_gx);
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
    const float *mean_p = mean.data(), *rstd_p = rstd.data();
    float *pg = partial_gamma.data(), *pb = partial_beta.data();
    T *dx_p = dx.data(), *dgamma_p = dgamma.data(), *dbeta_p = dbeta.data();
    const std::int64_t n = rows;
    const int w = width;
    cuda_emulation::launch(blocks, k::kLayerNormThreads, [=] {
      k::layer_norm_backward_rows_kernel<T, K>(dy_p, x_p, mean_p, rstd_p, gamma_p, n, w, dx_p, pg, pb);
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
void check(std::int64_t rows, int width, unsigned blocks, double rel) {
  INFO("rows " << rows << " width " << width << " blocks " << blocks << " K " << K);
  const Problem<T> p(rows, width, static_cast<std::uint32_t>(rows * 7919 + width));
  const Gradients want = p.reference();
  std::vector<T> dx, dgamma, dbeta;
  p.template run<K>(blocks, dx, dgamma, dbeta);
  CHECK(misses(dx, want.dx, rel) == 0);
  CHECK(misses(dgamma, want.dgamma, rel) == 0);
  CHECK(misses(dbeta, want.dbeta, rel) == 0);
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

#if LLMRDZV_HAVE_CUDA_KERNELS
TEST_CASE("LayerNorm's backward launcher refuses widths it cannot take and an empty grid, before reaching a GPU",
          "[model][layer_norm][cuda][errors]") {
  using llmrdzv::model::detail::layer_norm_backward_cuda;
  using llmrdzv::model::detail::LayerNormBackward;
  const auto bf16 = llmrdzv::kernel_support::DeviceElement::bf16;
  const auto args = [](std::int64_t rows, std::int64_t width, std::int64_t blocks) {
    return LayerNormBackward{nullptr, nullptr, nullptr, nullptr, nullptr, rows, width, blocks,
                             nullptr, nullptr, nullptr, nullptr, nullptr};
  };
  CHECK_THROWS_WITH(layer_norm_backward_cuda(args(8, 4097, 4), bf16, nullptr), "layer_norm_backward_cuda: width 4097 is outside 1..4096");
  CHECK_THROWS_WITH(layer_norm_backward_cuda(args(8, 0, 4), bf16, nullptr), "layer_norm_backward_cuda: width 0 is outside 1..4096");
  CHECK_THROWS_WITH(layer_norm_backward_cuda(args(8, 768, 0), bf16, nullptr), "layer_norm_backward_cuda: 0 blocks");
  CHECK_NOTHROW(layer_norm_backward_cuda(args(0, 768, 1), bf16, nullptr));  // no rows: no launch
}
#endif
