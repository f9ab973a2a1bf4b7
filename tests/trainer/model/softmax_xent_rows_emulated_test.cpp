// The GPU kernel of the fused cross-entropy (trainer/model/src/cuda/softmax_xent_rows.cuh), its
// own source run on the CPU under cuda_block_emulation.hpp, against a double-precision reference:
// each row's loss (logsumexp - target's logit) and its gradient written over the row (softmax -
// one-hot, rounded to the logits' type), for vocabularies smaller than, equal to and larger than a
// block, in fp32 and bf16; ignored, negative and out-of-vocabulary targets; NaN and -inf logits;
// rows padded past the vocabulary, read 16 bytes at a time or one element at a time; rows held
// whole in the threads' registers and rows longer than that, whose later packs are read twice;
// and no write at all without gradients; and what its launcher refuses. The same kernel on a
// GPU: tests/trainer/gpu.
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "cuda_block_emulation.hpp"
#include "cuda/softmax_xent_rows.cuh"
#include "cuda_kernels.hpp"
#include "llmrdzv/kernel_support/torch_element.hpp"

#include <catch2/catch.hpp>

namespace {

using llmrdzv::model::cuda_kernels::kHeldPacks;
using llmrdzv::model::cuda_kernels::kIgnoredTarget;
using llmrdzv::model::cuda_kernels::kSoftmaxRowThreads;
using llmrdzv::model::cuda_kernels::softmax_xent_rows_kernel;

// Rows of logits [rows, stride], the first `vocab` columns of each its logits and the rest padding
// (kPadding, which the loss must never see).
template <typename T>
struct Rows {
  static constexpr float kPadding = 7.0f;
  std::int64_t vocab, stride;
  std::vector<T> logits;
  std::vector<std::int64_t> targets;
  std::vector<float> loss;
  // The kernel as launched on rows it can read 16 bytes at a time (the default where the stride
  // allows), or one element at a time.
  bool packed;

  Rows(std::int64_t rows, std::int64_t vocab_size, std::uint32_t seed, double spread, std::int64_t row_stride = 0)
      : vocab(vocab_size), stride(row_stride ? row_stride : vocab_size),
        logits(static_cast<std::size_t>(rows * stride), T(kPadding)), targets(static_cast<std::size_t>(rows)),
        packed(stride % static_cast<std::int64_t>(16 / sizeof(T)) == 0) {
    std::mt19937 gen(seed);
    std::normal_distribution<double> normal(0.0, spread);
    std::uniform_int_distribution<std::int64_t> id(0, vocab - 1);
    for (std::int64_t r = 0; r < rows; ++r) {
      for (std::int64_t i = 0; i < vocab; ++i) set(r, i, static_cast<float>(normal(gen)));
    }
    for (std::int64_t& t : targets) t = id(gen);
  }

  std::int64_t rows() const { return static_cast<std::int64_t>(targets.size()); }
  float at(std::int64_t r, std::int64_t i) const { return static_cast<float>(logits[static_cast<std::size_t>(r * stride + i)]); }
  void set(std::int64_t r, std::int64_t i, float x) { logits[static_cast<std::size_t>(r * stride + i)] = T(x); }

  // Runs the kernel <<<rows, kSoftmaxRowThreads>>> over the rows, in place.
  void run(bool gradients) {
    constexpr int pack = 16 / sizeof(T);
    REQUIRE((!packed || (reinterpret_cast<std::uintptr_t>(logits.data()) % 16 == 0 && stride % pack == 0)));
    loss.assign(targets.size(), -1.0f);
    T* data = logits.data();
    const std::int64_t* ids = targets.data();
    float* out = loss.data();
    const std::int64_t v = vocab, ld = stride;
    if (packed) {
      cuda_emulation::launch(static_cast<unsigned>(rows()), kSoftmaxRowThreads,
                             [=] { softmax_xent_rows_kernel<T, pack>(data, v, ld, ids, out, gradients); });
    } else {
      cuda_emulation::launch(static_cast<unsigned>(rows()), kSoftmaxRowThreads,
                             [=] { softmax_xent_rows_kernel<T, 1>(data, v, ld, ids, out, gradients); });
    }
  }
};

struct Reference {
  double loss;
  std::vector<double> gradient;  // softmax - one-hot
};

template <typename T>
Reference reference(const Rows<T>& rows, std::int64_t r, std::int64_t target) {
  double max = -std::numeric_limits<double>::infinity();
  for (std::int64_t i = 0; i < rows.vocab; ++i) max = std::max(max, static_cast<double>(rows.at(r, i)));
  double sum = 0.0;
  for (std::int64_t i = 0; i < rows.vocab; ++i) sum += std::exp(static_cast<double>(rows.at(r, i)) - max);
  const double lse = max + std::log(sum);
  Reference ref{lse - static_cast<double>(rows.at(r, target)), {}};
  for (std::int64_t i = 0; i < rows.vocab; ++i) {
    ref.gradient.push_back(std::exp(static_cast<double>(rows.at(r, i)) - lse) - (i == target ? 1.0 : 0.0));
  }
  return ref;
}

// Every row against the reference: the loss within `loss_tol` (relative to the row's logsumexp
// scale), each gradient entry within `grad_rel` of its size plus 1e-7, the padding zero.
template <typename T>
void check_rows(std::int64_t rows_n, std::int64_t vocab, double spread, double loss_tol, double grad_rel,
                std::int64_t stride = 0, bool packed = true) {
  Rows<T> rows(rows_n, vocab, static_cast<std::uint32_t>(vocab * 31 + rows_n), spread, stride);
  rows.packed = packed;
  std::vector<Reference> refs;
  for (std::int64_t r = 0; r < rows.rows(); ++r) refs.push_back(reference(rows, r, rows.targets[static_cast<std::size_t>(r)]));
  rows.run(true);
  for (std::int64_t r = 0; r < rows.rows(); ++r) {
    const Reference& ref = refs[static_cast<std::size_t>(r)];
    INFO("vocab " << vocab << " stride " << rows.stride << (packed ? " packed" : " one by one") << " row " << r);
    CHECK(std::abs(rows.loss[static_cast<std::size_t>(r)] - ref.loss) <= loss_tol * (1.0 + std::abs(ref.loss)));
    std::int64_t bad = 0, padding = 0;
    for (std::int64_t i = 0; i < vocab; ++i) {
      const double want = ref.gradient[static_cast<std::size_t>(i)];
      if (std::abs(rows.at(r, i) - want) > grad_rel * std::abs(want) + 1e-7) ++bad;
    }
    for (std::int64_t i = vocab; i < rows.stride; ++i) padding += rows.at(r, i) != 0.0f;
    CHECK(bad == 0);
    CHECK(padding == 0);
  }
}

}  // namespace

TEST_CASE("the GPU softmax rows, emulated, give each row's loss and gradient as computed in double (fp32)",
          "[model][loss][cuda]") {
  // Fewer elements than threads, a block's worth exactly, one more, and a GPT-2-sized row.
  for (const std::int64_t vocab : {1, 7, 511, 512, 513, 5000, 50257}) {
    check_rows<float>(vocab > 5000 ? 2 : 5, vocab, 3.0, 2e-6, 2e-5, 0, /*packed=*/false);
    if (vocab % 4 == 0) check_rows<float>(5, vocab, 3.0, 2e-6, 2e-5);
  }
  check_rows<float>(3, 1000, 40.0, 2e-6, 2e-4);  // a wide spread: the running max moves often
}

TEST_CASE("the GPU softmax rows, emulated, round bf16 gradients to the nearest bf16 of the exact value",
          "[model][loss][cuda]") {
  // A bf16 value has 8 significant bits: one rounding is within 2^-8 of the value; the fp32
  // maths before it moves the result by far less, so 2^-7 bounds it with room.
  for (const std::int64_t vocab : {3, 512, 1031, 50257}) {
    check_rows<c10::BFloat16>(3, vocab, 2.0, 2e-6, 1.0 / 128, 0, /*packed=*/false);
  }
  check_rows<c10::BFloat16>(3, 512, 2.0, 2e-6, 1.0 / 128);  // 16-byte packs only
}

TEST_CASE("the GPU softmax rows, emulated, on rows padded past the vocabulary: the padding is never read and "
          "gets a zero gradient", "[model][loss][cuda]") {
  // GPT-2's head as the trainer multiplies it on a GPU: 50257 logits in rows of 50304, 16-byte packs
  // and the last column alone; then vocabularies shorter than a pack, or a pack and a bit.
  check_rows<c10::BFloat16>(3, 50257, 2.0, 2e-6, 1.0 / 128, 50304);
  check_rows<c10::Half>(2, 1031, 2.0, 2e-6, 1.0 / 256, 1088);
  check_rows<float>(3, 5, 3.0, 2e-6, 2e-5, 64);
  check_rows<float>(3, 5, 3.0, 2e-6, 2e-5, 7, /*packed=*/false);
  check_rows<c10::BFloat16>(2, 9, 2.0, 2e-6, 1.0 / 128, 64);
  check_rows<c10::BFloat16>(2, 3, 2.0, 2e-6, 1.0 / 128, 64);  // no whole pack: the tail alone
  // Ignored and out-of-vocabulary rows zero their padding too; without gradients it stays as it was.
  Rows<c10::BFloat16> rows(3, 100, 8, 2.0, 128);
  rows.targets = {kIgnoredTarget, 100, 4};
  Rows<c10::BFloat16> kept = rows;
  rows.run(true);
  kept.run(false);
  for (std::int64_t r = 0; r < 3; ++r) {
    for (std::int64_t i = 100; i < 128; ++i) {
      INFO("row " << r << " column " << i);
      REQUIRE(rows.at(r, i) == 0.0f);
      REQUIRE(kept.at(r, i) == Rows<c10::BFloat16>::kPadding);
    }
  }
  CHECK(rows.loss[0] == 0.0f);
  CHECK(std::isnan(rows.loss[1]));
  CHECK(rows.loss[2] == kept.loss[2]);
}

TEST_CASE("the GPU softmax rows, emulated: rows held whole in registers and rows longer than that, whose "
          "packs past the held ones are read again", "[model][loss][cuda]") {
  constexpr std::int64_t bf16_held = std::int64_t{kHeldPacks} * 8 * kSoftmaxRowThreads;  // columns held in bf16
  // bf16: exactly the held columns; one tail column past them; one pack past them (read again);
  // a Llama-3-sized row, mostly read again. (GPT-2's padded rows: the padding test above.)
  for (const std::int64_t vocab : {bf16_held, bf16_held + 1, bf16_held + 8, std::int64_t{128256}}) {
    check_rows<c10::BFloat16>(2, vocab, 2.0, 2e-6, 1.0 / 128, (vocab + 7) / 8 * 8);
  }
  // fp32 GPT-2 rows as the padded head gives them: half held, half read twice.
  check_rows<float>(2, 50257, 3.0, 2e-6, 2e-5, 50304);
}

TEST_CASE("the GPU softmax rows, emulated: ignored rows are zero, other negative targets count as 0, "
          "a target past the vocabulary gives NaN and touches nothing outside its row", "[model][loss][cuda]") {
  Rows<float> rows(4, 600, 5, 2.0);
  rows.targets = {kIgnoredTarget, -7, 600, 3};
  const Reference negative = reference(rows, 1, 0), fine = reference(rows, 3, 3);
  rows.run(true);
  CHECK(rows.loss[0] == 0.0f);
  CHECK(std::abs(rows.loss[1] - negative.loss) <= 1e-5 * (1.0 + negative.loss));
  CHECK(std::isnan(rows.loss[2]));
  CHECK(std::abs(rows.loss[3] - fine.loss) <= 1e-5 * (1.0 + fine.loss));
  for (std::int64_t i = 0; i < rows.vocab; ++i) {
    INFO("column " << i);
    REQUIRE(rows.at(0, i) == 0.0f);
    REQUIRE(rows.at(2, i) == 0.0f);
    REQUIRE(std::abs(rows.at(1, i) - negative.gradient[static_cast<std::size_t>(i)]) <= 1e-6);
  }
}

TEST_CASE("the GPU softmax rows, emulated: a NaN logit makes the row's loss NaN, -inf logits get zero probability",
          "[model][loss][cuda]") {
  Rows<float> rows(2, 700, 9, 1.0);
  rows.targets = {10, 20};
  rows.set(0, 650, std::numeric_limits<float>::quiet_NaN());
  for (std::int64_t i = 0; i < 700; i += 3) rows.set(1, i, -std::numeric_limits<float>::infinity());
  const Reference masked = reference(rows, 1, 20);
  rows.run(true);
  CHECK(std::isnan(rows.loss[0]));
  CHECK(std::abs(rows.loss[1] - masked.loss) <= 1e-5 * (1.0 + masked.loss));
  for (std::int64_t i = 0; i < 700; i += 3) CHECK(rows.at(1, i) == 0.0f);
  CHECK(std::abs(rows.at(1, 20) - masked.gradient[20]) <= 1e-6);
}

TEST_CASE("the GPU softmax rows, emulated, without gradients leave the logits as they were", "[model][loss][cuda]") {
  Rows<c10::BFloat16> rows(3, 2049, 4, 2.0);
  const std::vector<c10::BFloat16> before = rows.logits;
  std::vector<Reference> refs;
  for (std::int64_t r = 0; r < 3; ++r) refs.push_back(reference(rows, r, rows.targets[static_cast<std::size_t>(r)]));
  rows.run(false);
  for (std::size_t i = 0; i < before.size(); ++i) REQUIRE(rows.logits[i].x == before[i].x);
  for (std::size_t r = 0; r < 3; ++r) CHECK(std::abs(rows.loss[r] - refs[r].loss) <= 2e-6 * (1.0 + refs[r].loss));
}

TEST_CASE("a tensor's type names the kernels' element type, and any type they lack is refused by name",
          "[model][loss][cuda][errors]") {
  using llmrdzv::kernel_support::device_element;
  using llmrdzv::kernel_support::DeviceElement;
  CHECK(device_element(c10::ScalarType::Float, "k") == DeviceElement::f32);
  CHECK(device_element(c10::ScalarType::BFloat16, "k") == DeviceElement::bf16);
  CHECK(device_element(c10::ScalarType::Half, "k") == DeviceElement::f16);
  CHECK_THROWS_WITH(device_element(c10::ScalarType::Double, "the fused loss's kernel"),
                    "the fused loss's kernel takes no Double tensors");
}

#if LLMRDZV_HAVE_CUDA_KERNELS
TEST_CASE("the GPU softmax rows' launcher refuses more rows than one grid takes and a row stride short of the "
          "vocabulary, before reaching a GPU",
          "[model][loss][cuda][errors]") {
  CHECK_THROWS_WITH(llmrdzv::model::detail::softmax_xent_rows_cuda(nullptr, llmrdzv::kernel_support::DeviceElement::bf16,
                                                                   std::int64_t{1} << 31, 50257, 50304, nullptr, nullptr,
                                                                   true, nullptr),
                    Catch::Contains("more rows than one grid takes"));
  CHECK_THROWS_WITH(llmrdzv::model::detail::softmax_xent_rows_cuda(nullptr, llmrdzv::kernel_support::DeviceElement::bf16,
                                                                   4, 50257, 50256, nullptr, nullptr, true, nullptr),
                    Catch::Contains("row stride shorter than the vocabulary"));
  // Nothing to do: no launch, no error.
  CHECK_NOTHROW(llmrdzv::model::detail::softmax_xent_rows_cuda(nullptr, llmrdzv::kernel_support::DeviceElement::f32, 0,
                                                               50257, 50257, nullptr, nullptr, true, nullptr));
}
#endif
