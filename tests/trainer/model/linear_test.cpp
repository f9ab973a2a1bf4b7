// fast_linear and fast_mm, on whichever CPU GEMM this build and CPU choose (BLIS, oneDNN + the
// wheel's BLAS, or torch's), against torch's linear and mm computed in double: outputs and every
// gradient, for 2-D and 3-D inputs, with and without a bias, and operands that are transposed,
// strided or broadcast; and the choice itself.
#include <ATen/ops/allclose.h>
#include <torch/torch.h>

#include <cstdlib>
#include <vector>

#include "fast_linear.hpp"
#include "llmrdzv/model/cpu_gemm.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

namespace cpu = llmrdzv::model::detail;

namespace {

// Within fp32 rounding of sums of a few dozen products of unit-sized terms.
bool close(const at::Tensor& ours, const at::Tensor& exact) {
  return ours.scalar_type() == at::kFloat && at::allclose(ours.to(at::kDouble), exact, 1e-5, 1e-5);
}

}  // namespace

TEST_CASE("fast_linear equals torch's linear and its gradients in fp32", "[model][linear]") {
  torch::manual_seed(5);
  // 3-D and 2-D inputs, and single rows (one position decoded with the KV cache).
  const std::vector<std::vector<std::int64_t>> shapes{{5, 7, 24}, {13, 24}, {1, 1, 24}, {1, 24}};
  for (const bool bias : {true, false}) {
    for (const auto& shape : shapes) {
      for (const bool contiguous : {true, false}) {
        INFO("bias " << bias << ", input " << at::IntArrayRef(shape) << ", contiguous " << contiguous);
        at::Tensor x = torch::randn(shape);
        if (!contiguous) x = x.transpose(-1, -2).contiguous().transpose(-1, -2);  // same values, column-major
        x.requires_grad_(true);
        const at::Tensor w = torch::randn({33, 24}).requires_grad_(true);
        const at::Tensor b = bias ? torch::randn({33}).requires_grad_(true) : at::Tensor();
        const at::Tensor y = cpu::fast_linear(x, w, b);
        const at::Tensor weights = torch::randn(y.sizes());  // a loss that weighs every output
        (y * weights).sum().backward();

        const at::Tensor xd = x.detach().to(at::kDouble).requires_grad_(true);
        const at::Tensor wd = w.detach().to(at::kDouble).requires_grad_(true);
        const at::Tensor bd = bias ? b.detach().to(at::kDouble).requires_grad_(true) : at::Tensor();
        const at::Tensor yd = torch::nn::functional::linear(xd, wd, bd);
        (yd * weights.to(at::kDouble)).sum().backward();

        CHECK(y.sizes() == yd.sizes());
        CHECK(close(y, yd.detach()));
        CHECK(close(x.grad(), xd.grad()));
        CHECK(close(w.grad(), wd.grad()));
        if (bias) CHECK(close(b.grad(), bd.grad()));
      }
    }
  }
}

TEST_CASE("fast_mm takes transposed, strided and broadcast operands", "[model][linear]") {
  torch::manual_seed(6);
  const at::Tensor transposed = torch::randn({40, 30}).t();                    // [30, 40], column-major
  const at::Tensor strided = torch::randn({80, 20}).slice(0, 0, 80, 2);        // [40, 20], every other row
  const at::Tensor broadcast = torch::randn({1, 20}).expand({40, 20});         // row stride 0
  const at::Tensor narrow = torch::randn({40, 50}).slice(1, 10, 30);           // [40, 20], row stride 50
  for (const at::Tensor& b : {strided, broadcast, narrow}) {
    const at::Tensor ours = cpu::fast_mm(transposed, b);
    CHECK(close(ours, at::mm(transposed.to(at::kDouble), b.to(at::kDouble))));
  }
  // And products with a row or a column of one.
  const at::Tensor row = torch::randn({1, 40}), column = torch::randn({20, 1});
  CHECK(close(cpu::fast_mm(row, strided), at::mm(row.to(at::kDouble), strided.to(at::kDouble))));
  CHECK(close(cpu::fast_mm(strided, column), at::mm(strided.to(at::kDouble), column.to(at::kDouble))));
}

TEST_CASE("the CPU's fp32 matrix products run on BLIS where the build has it, the CPU lacks AVX-512 and BLIS has kernels for it",
          "[model][linear]") {
  const std::string backend = llmrdzv::model::cpu_gemm_backend();
  const std::string blis = llmrdzv::model::blis_configuration();
  INFO("backend: " << backend << ", BLIS configuration: " << blis << ", torch's CPU capability: "
                   << at::get_cpu_capability());
#if LLMRDZV_HAVE_BLIS
  const bool avx512 = at::get_cpu_capability().starts_with("AVX512");
  CHECK(!blis.empty());
  CHECK(backend.starts_with("BLIS") == (!avx512 && blis != "generic"));
  if (backend.starts_with("BLIS")) CHECK(backend == "BLIS (its " + blis + " kernels)");
  if (!avx512 && blis == "generic") CHECK_THAT(backend, Catch::EndsWith("(BLIS has no kernels for this CPU)"));
  // Where the test forces a configuration (BLIS_ARCH_TYPE), that one is in use.
  if (const char* expected = std::getenv("LLMRDZV_EXPECT_BLIS")) CHECK(blis == expected);
#else
  WARN("built without BLIS (libblis-openmp-dev): the products run on " << backend);
  CHECK_FALSE(backend.starts_with("BLIS"));
#endif
}
