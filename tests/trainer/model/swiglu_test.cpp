// The fused SwiGLU (fast_swiglu: silu(gate) * up in one pass forward and one backward on fp32 CPU
// tensors, with an AVX2 variant that carries its own vectorised exp) against torch's silu and mul
// computed in double: output and both input gradients, for every variant this CPU runs, at sizes
// around the vector width, over the range where the sigmoid saturates, with NaN propagated; other
// types take torch's ops.
#include <torch/torch.h>

#include <catch2/catch.hpp>  // after torch: c10's CHECK must not replace Catch's

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fast_swiglu.hpp"
#include "cpu_kernels.hpp"

namespace fused = llmrdzv::model::detail;

namespace {

struct Variant {
  std::string name;
  void (*forward)(const float*, const float*, float*, std::int64_t);
  void (*backward)(const float*, const float*, const float*, float*, float*, std::int64_t);
};

std::vector<Variant> variants() {
  std::vector<Variant> all{{"scalar", fused::swiglu_forward_scalar, fused::swiglu_backward_scalar}};
  if (fused::cpu_has_avx2_fma()) {
    all.push_back({"avx2", fused::swiglu_forward_avx2, fused::swiglu_backward_avx2});
  } else {
    WARN("this CPU has no AVX2 + FMA: only the scalar SwiGLU loops are checked");
  }
  return all;
}

// Gate values over the whole range: random ones, both signs of zero, and where exp(-gate)
// underflows or overflows in fp32.
torch::Tensor gate_values(std::int64_t n) {
  torch::Tensor gate = torch::randn({n}) * 6;
  const std::vector<float> edges{0.0f, -0.0f, 1e-30f, -1e-30f, 20.0f, -20.0f, 87.5f, -87.5f, 88.5f, -88.5f, 100.0f, -100.0f, 1e4f, -1e4f};
  for (std::size_t i = 0; i < edges.size() && static_cast<std::int64_t>(i) < n; ++i) gate[i * 3 % n] = edges[i];
  return gate;
}

// |ours - reference| <= 4 ulp of `scale`, the size of the terms that make the reference (the
// reference itself unless they cancel), or under 1e-30: where exp(-gate) overflows, torch's own
// fp32 silu is 0 while the exact value is a tiny negative number.
void check_close(const torch::Tensor& ours, const torch::Tensor& reference, const torch::Tensor& scale, const char* what) {
  const torch::Tensor error = (ours.to(torch::kDouble) - reference).abs();
  const torch::Tensor bound = scale.abs() * (4 * std::numeric_limits<float>::epsilon()) + 1e-30;
  const auto worst = (error - bound).max().item<double>();
  INFO(what << ": worst excess over the bound " << worst);
  CHECK(worst <= 0);
}

}  // namespace

TEST_CASE("the SwiGLU loops give silu(gate) * up and its gradients within 4 ulp of their terms", "[swiglu]") {
  torch::manual_seed(21);
  for (const Variant& v : variants()) {
    for (std::int64_t n : {1, 7, 8, 9, 31, 1000, 4099}) {
      INFO(v.name << ", " << n << " elements");
      const torch::Tensor gate = gate_values(n), up = torch::randn({n}), grad = torch::randn({n});
      torch::Tensor out = torch::empty({n}), grad_gate = torch::empty({n}), grad_up = torch::empty({n});
      v.forward(gate.data_ptr<float>(), up.data_ptr<float>(), out.data_ptr<float>(), n);
      v.backward(gate.data_ptr<float>(), up.data_ptr<float>(), grad.data_ptr<float>(), grad_gate.data_ptr<float>(),
                 grad_up.data_ptr<float>(), n);

      const torch::Tensor g64 = gate.to(torch::kDouble), u64 = up.to(torch::kDouble), dy64 = grad.to(torch::kDouble);
      const torch::Tensor sigmoid = torch::sigmoid(g64);
      const torch::Tensor silu_up = g64 * sigmoid * u64, silu_dy = dy64 * g64 * sigmoid;
      check_close(out, silu_up, silu_up, "output");
      check_close(grad_up, silu_dy, silu_dy, "up's gradient");
      // The slope 1 + gate * (1 - sigmoid), as torch's silu_backward computes it in fp32, carries
      // the sigmoid's rounding (an ulp of 1) times gate, and cancels near gate = -1.28: the bound
      // scales with 1 + |gate|.
      const torch::Tensor terms = dy64 * u64 * sigmoid;
      check_close(grad_gate, terms * (1 + g64 * (1 - sigmoid)), terms * (1 + g64.abs()), "gate's gradient");
    }
  }
}

TEST_CASE("the SwiGLU loops carry NaN and infinite inputs through", "[swiglu]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const Variant& v : variants()) {
    INFO(v.name);
    // Nine elements: a full AVX2 register and a tail of one.
    const std::vector<float> gate{nan, 1, inf, 2, 3, 4, 5, 6, nan};
    const std::vector<float> up{1, nan, 1, 1, 1, 1, 1, 1, 1};
    std::vector<float> out(9), grad_gate(9), grad_up(9);
    const std::vector<float> grad(9, 1.0f);
    v.forward(gate.data(), up.data(), out.data(), 9);
    v.backward(gate.data(), up.data(), grad.data(), grad_gate.data(), grad_up.data(), 9);
    CHECK(std::isnan(out[0]));
    CHECK(std::isnan(out[1]));
    CHECK(out[2] == inf);  // silu(inf) = inf
    CHECK(std::isnan(out[8]));
    CHECK(std::isnan(grad_gate[0]));
    CHECK(std::isnan(grad_up[0]));
    CHECK(std::isnan(grad_gate[1]));
    CHECK(std::isnan(grad_gate[8]));
    CHECK(std::isfinite(grad_up[3]));
  }
}

TEST_CASE("swiglu() is one autograd function on fp32 CPU tensors and torch's ops otherwise", "[swiglu]") {
  torch::manual_seed(22);
  at::set_num_threads(2);  // [64, 1536] splits over tasks and threads
  const torch::Tensor gate = (torch::randn({64, 1536}) * 3).requires_grad_();
  const torch::Tensor up = torch::randn({64, 1536}).requires_grad_();
  const torch::Tensor upstream = torch::randn({64, 1536});
  const torch::Tensor y = fused::swiglu(gate, up);
  CHECK(y.grad_fn()->name().find("FusedSwiglu") != std::string::npos);
  (y * upstream).sum().backward();

  const torch::Tensor g = gate.detach().clone().requires_grad_(), u = up.detach().clone().requires_grad_();
  const torch::Tensor expected = torch::silu(g) * u;
  (expected * upstream).sum().backward();
  CHECK(torch::allclose(y, expected, 1e-6, 1e-7));
  CHECK(torch::allclose(gate.grad(), g.grad(), 1e-6, 1e-7));
  CHECK(torch::allclose(up.grad(), u.grad(), 1e-6, 1e-7));

  // A transposed (non-contiguous) gate is read as its values.
  const torch::Tensor wide = torch::randn({24, 10});
  const torch::Tensor up_t = torch::randn({10, 24});
  CHECK(torch::allclose(fused::swiglu(wide.t(), up_t), torch::silu(wide.t()) * up_t, 1e-6, 1e-7));

  const torch::Tensor half_gate = gate.detach().to(torch::kBFloat16), half_up = up.detach().to(torch::kBFloat16);
  CHECK(torch::equal(fused::swiglu(half_gate, half_up), torch::silu(half_gate) * half_up));
}
