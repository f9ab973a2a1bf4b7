// The column-sum kernels of a linear layer's bias gradient (trainer/model/src/cuda/column_sums.cuh),
// their own source run on the CPU under cuda_block_emulation.hpp, against sums in double: widths
// below, at and past a block's column tile, row counts that do and do not fill the first pass's
// four running sums, one part, a few and one per row, no rows at all; in fp32, bf16 and fp16. GELU's
// backward as their entry (cuda/gelu_backward.cuh): its gradient against the derivative in double,
// and the bias gradient as the sum of what it stored. Also how the trainer sizes the grid, and what
// the launchers refuse. The same kernels on a GPU, against torch's backward: tests/trainer/gpu.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cuda_block_emulation.hpp"
#include "cuda/column_sums.cuh"
#include "cuda/gelu_backward.cuh"
#include "cuda_kernels.hpp"

#include <catch2/catch.hpp>

namespace {

namespace k = llmrdzv::model::cuda_kernels;
using llmrdzv::model::detail::column_sum_parts;

// Both passes as the launchers run them over `entry`; the sums in T.
template <typename T, typename Entry>
std::vector<T> column_sums_of(const Entry& entry, std::int64_t rows, int width, int parts) {
  const int tiles = (width + k::kColumnTileThreads - 1) / k::kColumnTileThreads;
  std::vector<float> partial(static_cast<std::size_t>(parts) * static_cast<std::size_t>(width), -1.0f);
  std::vector<T> out(static_cast<std::size_t>(width), T(-1.0f));
  float* p = partial.data();
  T* o = out.data();
  cuda_emulation::launch(static_cast<unsigned>(tiles * parts), k::kColumnTileThreads,
                         [=] { k::column_partial_sums_kernel(entry, rows, width, tiles, parts, p); });
  cuda_emulation::launch(static_cast<unsigned>((width + k::kColumnSumColumns - 1) / k::kColumnSumColumns),
                         k::kColumnSumColumns * k::kColumnSumGroups,
                         [=] { k::partial_row_sums_kernel<T>(p, nullptr, parts, width, o, nullptr); });
  return out;
}

template <typename T>
std::vector<T> column_sums(const std::vector<T>& table, std::int64_t rows, int width, int parts) {
  return column_sums_of<T>(k::TableEntries<T>{table.data()}, rows, width, parts);
}

// Each column's sum within rel of the double sum, relative to the sum of its entries' magnitudes.
template <typename T>
void check(std::int64_t rows, int width, int parts, double rel) {
  INFO("rows " << rows << " width " << width << " parts " << parts);
  std::mt19937 gen(static_cast<std::uint32_t>(rows * 131 + width * 7 + parts));
  std::normal_distribution<float> normal(0.5f, 2.0f);
  std::vector<T> table;
  for (std::int64_t i = 0; i < rows * width; ++i) table.push_back(T(normal(gen)));
  const std::vector<T> got = column_sums(table, rows, width, parts);
  std::int64_t bad = 0;
  for (int c = 0; c < width; ++c) {
    double sum = 0.0, magnitude = 0.0;
    for (std::int64_t r = 0; r < rows; ++r) {
      const double v = static_cast<float>(table[static_cast<std::size_t>(r * width + c)]);
      sum += v;
      magnitude += std::abs(v);
    }
    const double value = static_cast<float>(got[static_cast<std::size_t>(c)]);
    if (std::abs(value - sum) > rel * (std::abs(sum) + 1e-3 * magnitude) + 1e-6 * magnitude) ++bad;
  }
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("The bias-gradient column sums, emulated, give the sums in double (fp32)", "[model][column_sums][cuda]") {
  for (const int width : {1, 7, 255, 256, 257, 768}) {
    for (const int parts : {1, 3}) {
      check<float>(37, width, parts, 1e-5);  // 37 / 3: each part's rows fill the four sums and leave a tail
      check<float>(12, width, parts, 1e-5);  // 12 / 3 = 4: no tail
    }
  }
  check<float>(5, 300, 5, 1e-5);    // one part per row
  check<float>(2, 3072, 1, 1e-5);   // GPT-2's MLP width
  check<float>(40, 19, 16, 1e-5);   // parts that leave some with fewer than four rows
}

TEST_CASE("The bias-gradient column sums, emulated, in bf16 and fp16: one rounding from the fp32 sum",
          "[model][column_sums][cuda]") {
  check<c10::BFloat16>(64, 768, 4, 1.0 / 128);
  check<c10::BFloat16>(9, 257, 2, 1.0 / 128);
  check<c10::Half>(33, 300, 3, 1.0 / 512);
}

TEST_CASE("The bias-gradient column sums of no rows are zeros", "[model][column_sums][cuda]") {
  const std::vector<float> got = column_sums(std::vector<float>{}, 0, 300, 1);
  for (const float v : got) CHECK(v == 0.0f);
}

TEST_CASE("GELU's backward as the column sums' entry: dy * gelu'(x) for the tanh approximation, and its column sums",
          "[model][column_sums][gelu][cuda]") {
  const auto check_gelu = [](auto zero, std::int64_t rows, int width, int parts, double rel) {
    using T = decltype(zero);
    INFO("rows " << rows << " width " << width << " parts " << parts);
    std::mt19937 gen(static_cast<std::uint32_t>(rows + width));
    std::normal_distribution<float> normal(0.0f, 2.0f);
    std::vector<T> dy, x;
    for (std::int64_t i = 0; i < rows * width; ++i) {
      dy.push_back(T(normal(gen)));
      x.push_back(T(normal(gen)));
    }
    x[0] = T(0.0f);  // gelu'(0) = 1/2
    std::vector<T> dx(dy.size(), T(-1.0f));
    const std::vector<T> sums = column_sums_of<T>(k::GeluTanhBackward<T>{dy.data(), x.data(), dx.data()}, rows, width, parts);
    const double beta = std::sqrt(2.0 / M_PI), kappa = 0.044715;
    std::int64_t bad_dx = 0, bad_sum = 0;
    for (int c = 0; c < width; ++c) {
      double sum = 0.0, magnitude = 0.0;
      for (std::int64_t r = 0; r < rows; ++r) {
        const auto i = static_cast<std::size_t>(r * width + c);
        const double v = static_cast<float>(x[i]);
        const double t = std::tanh(beta * (v + kappa * v * v * v));
        const double want = static_cast<float>(dy[i]) *
                            (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * beta * (1 + 3 * kappa * v * v));
        const double got = static_cast<float>(dx[i]);
        // fp32's tanh near -1 leaves 1 + t a few ulps of 1 off: an error of ~1e-7 of dy where gelu' is near 0.
        if (std::abs(got - want) > rel * std::abs(want) + 1e-6 * std::abs(static_cast<float>(dy[i]))) {
          ++bad_dx;
          UNSCOPED_INFO("x " << v << " dy " << static_cast<float>(dy[i]) << " got " << got << " want " << want);
        }
        sum += got;
        magnitude += std::abs(got);
      }
      if (std::abs(static_cast<float>(sums[static_cast<std::size_t>(c)]) - sum) > rel * std::abs(sum) + 1e-5 * magnitude) ++bad_sum;
    }
    CHECK(bad_dx == 0);
    CHECK(bad_sum == 0);
    CHECK(static_cast<float>(dx[0]) == static_cast<float>(T(0.5f * static_cast<float>(dy[0]))));
  };
  check_gelu(0.0f, 37, 300, 3, 1e-5);
  check_gelu(0.0f, 12, 3072, 2, 1e-5);
  check_gelu(c10::BFloat16(0.0f), 33, 768, 4, 1.0 / 128);
  check_gelu(c10::Half(0.0f), 9, 257, 2, 1.0 / 512);
}

TEST_CASE("The bias gradient's grid: about eight blocks per multiprocessor, no more parts than rows",
          "[model][column_sums]") {
  CHECK(column_sum_parts(16384, 768, 132) == 352);  // 3 column tiles on an H100's 132 multiprocessors
  CHECK(column_sum_parts(16384, 3072, 132) == 88);  // 12 tiles
  CHECK(column_sum_parts(16384, 6400, 132) == 42);  // GPT-2 XL's MLP: 25 tiles
  CHECK(column_sum_parts(16384, 1 << 20, 132) == 1);
  CHECK(column_sum_parts(5, 768, 132) == 5);
  CHECK(column_sum_parts(0, 768, 132) == 1);
}

#if LLMRDZV_HAVE_CUDA_KERNELS
TEST_CASE("The column-sum launchers refuse an empty width, no parts and a grid too big, before reaching a GPU",
          "[model][column_sums][cuda][errors]") {
  using llmrdzv::model::detail::column_sums_cuda;
  using llmrdzv::model::detail::ColumnSums;
  const auto bf16 = llmrdzv::kernel_support::DeviceElement::bf16;
  const auto args = [](std::int64_t width, std::int64_t parts) { return ColumnSums{nullptr, 8, width, parts, nullptr, nullptr}; };
  CHECK_THROWS_WITH(column_sums_cuda(args(0, 4), bf16, nullptr), "column_sums_cuda: width 0 is outside 1..1073741824");
  CHECK_THROWS_WITH(column_sums_cuda(args((1LL << 30) + 1, 1), bf16, nullptr),
                    "column_sums_cuda: width 1073741825 is outside 1..1073741824");
  CHECK_THROWS_WITH(column_sums_cuda(args(768, 0), bf16, nullptr),
                    "column_sums_cuda: 0 parts of 3 column tiles is not a grid of 1..2147483647 blocks");
  CHECK_THROWS_WITH(column_sums_cuda(args(768, 1LL << 30), bf16, nullptr),
                    "column_sums_cuda: 1073741824 parts of 3 column tiles is not a grid of 1..2147483647 blocks");

  using llmrdzv::model::detail::gelu_tanh_backward_column_sums_cuda;
  using llmrdzv::model::detail::GeluBackwardColumnSums;
  const auto gelu = [](std::int64_t width, std::int64_t parts) {
    return GeluBackwardColumnSums{nullptr, nullptr, 8, width, parts, nullptr, nullptr, nullptr};
  };
  CHECK_THROWS_WITH(gelu_tanh_backward_column_sums_cuda(gelu(0, 4), bf16, nullptr),
                    "gelu_tanh_backward_column_sums_cuda: width 0 is outside 1..1073741824");
  CHECK_THROWS_WITH(gelu_tanh_backward_column_sums_cuda(gelu(3072, 0), bf16, nullptr),
                    "gelu_tanh_backward_column_sums_cuda: 0 parts of 12 column tiles is not a grid of 1..2147483647 blocks");
}
#endif
