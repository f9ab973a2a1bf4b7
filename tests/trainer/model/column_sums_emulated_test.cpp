// The column-sum kernels of a linear layer's bias gradient (trainer/model/src/cuda/column_sums.cuh),
// their own source run on the CPU under cuda_block_emulation.hpp, against sums in double: widths
// below, at and past a block's column tile, row counts that do and do not fill the first pass's
// four running sums, one part, a few and one per row, no rows at all; in fp32, bf16 and fp16. Also
// how the trainer sizes the grid, and what the launcher refuses. The same kernels on a GPU,
// against torch's backward: tests/trainer/gpu.
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "cuda_block_emulation.hpp"
#include "cuda/column_sums.cuh"
#include "cuda_kernels.hpp"

#include <catch2/catch.hpp>

namespace {

namespace k = llmrdzv::model::cuda_kernels;
using llmrdzv::model::detail::column_sum_parts;

// Both passes as column_sums_cuda launches them; `out` in T.
template <typename T>
std::vector<T> column_sums(const std::vector<T>& table, std::int64_t rows, int width, int parts) {
  const int tiles = (width + k::kColumnTileThreads - 1) / k::kColumnTileThreads;
  std::vector<float> partial(static_cast<std::size_t>(parts) * static_cast<std::size_t>(width), -1.0f);
  std::vector<T> out(static_cast<std::size_t>(width), T(-1.0f));
  const T* in = table.data();
  float* p = partial.data();
  T* o = out.data();
  cuda_emulation::launch(static_cast<unsigned>(tiles * parts), k::kColumnTileThreads,
                         [=] { k::column_partial_sums_kernel<T>(in, rows, width, tiles, parts, p); });
  cuda_emulation::launch(static_cast<unsigned>((width + k::kColumnSumColumns - 1) / k::kColumnSumColumns),
                         k::kColumnSumColumns * k::kColumnSumGroups,
                         [=] { k::partial_row_sums_kernel<T>(p, nullptr, parts, width, o, nullptr); });
  return out;
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

TEST_CASE("The bias gradient's grid: about four blocks per multiprocessor, no more parts than rows",
          "[model][column_sums]") {
  CHECK(column_sum_parts(16384, 768, 132) == 176);  // 3 column tiles on an H100's 132 multiprocessors
  CHECK(column_sum_parts(16384, 3072, 132) == 44);  // 12 tiles
  CHECK(column_sum_parts(16384, 6400, 132) == 21);  // GPT-2 XL's MLP: 25 tiles
  CHECK(column_sum_parts(16384, 1 << 20, 132) == 1);
  CHECK(column_sum_parts(5, 768, 132) == 5);
  CHECK(column_sum_parts(0, 768, 132) == 1);
}

#if LLMRDZV_HAVE_CUDA_KERNELS
TEST_CASE("The column-sum launcher refuses an empty width, no parts and a grid too big, before reaching a GPU",
          "[model][column_sums][cuda][errors]") {
  using llmrdzv::model::detail::column_sums_cuda;
  using llmrdzv::model::detail::ColumnSums;
  const auto bf16 = llmrdzv::kernel_support::DeviceElement::bf16;
  const auto args = [](std::int64_t width, std::int64_t parts) { return ColumnSums{nullptr, 8, width, parts, nullptr, nullptr}; };
  CHECK_THROWS_WITH(column_sums_cuda(args(0, 4), bf16, nullptr), "column_sums_cuda: width 0 is outside 1..2147483647");
  CHECK_THROWS_WITH(column_sums_cuda(args(768, 0), bf16, nullptr),
                    "column_sums_cuda: 0 parts of 3 column tiles is not a grid of 1..2147483647 blocks");
  CHECK_THROWS_WITH(column_sums_cuda(args(768, 1LL << 30), bf16, nullptr),
                    "column_sums_cuda: 1073741824 parts of 3 column tiles is not a grid of 1..2147483647 blocks");
}
#endif
