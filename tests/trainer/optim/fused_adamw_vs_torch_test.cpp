// The fused AdamW must make the same updates as torch::optim::AdamW (1e-6 relative) step by
// step, with weight decay and bias correction, on odd sizes and on shards with unaligned
// boundaries, for every kernel variant this CPU can run, and independently of thread count.
// torch before Catch: c10's logging defines a CHECK macro that would replace Catch's.
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <vector>

#include "llmrdzv/optim/fused_adamw.hpp"

using namespace llmrdzv::optim;

namespace {

const AdamWHyperparams kHyper{.lr = 3e-3, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8,
                              .weight_decay = 0.1};

std::vector<float> to_vector(const torch::Tensor& t) {
  auto c = t.contiguous();
  return {c.data_ptr<float>(), c.data_ptr<float>() + c.numel()};
}

// Largest |ours - ref| / max(|ref|, rms(ref)). Our m and v come out bit-identical to torch's;
// p differs by rounding because torch's vectorised sqrt is not correctly rounded (measured: 17%
// of elements 1 ulp off the exact sqrt, which our kernels compute), so an element that crosses
// zero keeps an error at the scale of its operands: each element is compared relative to its own
// magnitude or, if smaller, the array's root-mean-square.
double max_relative_error(const std::vector<float>& ours, const torch::Tensor& ref) {
  const auto want = to_vector(ref);
  REQUIRE(ours.size() == want.size());
  double sum_squares = 0;
  for (float w : want) sum_squares += double(w) * w;
  const double rms = std::sqrt(sum_squares / double(want.size()));
  double worst = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    const double scale = std::max<double>(std::fabs(want[i]), rms);
    worst = std::max(worst, std::fabs(double(ours[i]) - double(want[i])) / scale);
  }
  return worst;
}

struct Moments {
  std::vector<float> p, m, v;
};

// Applies one step to `state` as `bounds.size() - 1` separately updated shards.
void sharded_step(Moments& state, const std::vector<float>& g, const std::vector<std::size_t>& bounds,
                  std::int64_t step, const KernelOptions& options) {
  for (std::size_t s = 0; s + 1 < bounds.size(); ++s) {
    const std::size_t b = bounds[s], n = bounds[s + 1] - b;
    adamw_step({std::span(state.p).subspan(b, n), std::span<const float>(g).subspan(b, n),
                std::span(state.m).subspan(b, n), std::span(state.v).subspan(b, n)},
               kHyper, step, options);
  }
}

// Runs `steps` AdamW steps on n parameters with torch and with ours; ours updates the arrays as
// `shards` contiguous pieces split at deliberately odd offsets. Step by step, ours starts from
// torch's state before the step and must land on torch's state after it within 1e-6. An
// independent trajectory of ours over all steps must stay within 1e-5: single-ulp rounding
// differences of p (see max_relative_error) random-walk over many steps.
void compare_with_torch(std::int64_t n, int steps, int shards, const KernelOptions& options) {
  torch::manual_seed(1234 + n);
  auto torch_param = torch::randn({n}).set_requires_grad(true);
  Moments trajectory{to_vector(torch_param), std::vector<float>(n), std::vector<float>(n)};
  torch::optim::AdamW reference(
      {torch_param}, torch::optim::AdamWOptions(kHyper.lr)
                         .betas({kHyper.beta1, kHyper.beta2})
                         .eps(kHyper.eps)
                         .weight_decay(kHyper.weight_decay));
  std::vector<std::size_t> bounds{0};
  for (int s = 1; s < shards; ++s) bounds.push_back(std::size_t(n) * s / shards + (s % 2 ? 3 : 0));
  bounds.push_back(std::size_t(n));

  Moments before = trajectory;
  for (int step = 1; step <= steps; ++step) {
    auto grad = torch::randn({n}) * (step % 3 + 1) * 0.1;
    torch_param.mutable_grad() = grad.clone();
    reference.step();
    const auto g = to_vector(grad);
    sharded_step(before, g, bounds, step, options);
    sharded_step(trajectory, g, bounds, step, options);

    auto& state = static_cast<torch::optim::AdamWParamState&>(
        *reference.state().at(torch_param.unsafeGetTensorImpl()));
    INFO("n=" << n << " step=" << step << " isa=" << isa_name(options.isa));
    REQUIRE(max_relative_error(before.p, torch_param.detach()) <= 1e-6);
    REQUIRE(max_relative_error(before.m, state.exp_avg()) <= 1e-6);
    REQUIRE(max_relative_error(before.v, state.exp_avg_sq()) <= 1e-6);
    REQUIRE(max_relative_error(trajectory.p, torch_param.detach()) <= 1e-5);
    REQUIRE(max_relative_error(trajectory.m, state.exp_avg()) <= 1e-6);
    REQUIRE(max_relative_error(trajectory.v, state.exp_avg_sq()) <= 1e-6);
    before = {to_vector(torch_param), to_vector(state.exp_avg()), to_vector(state.exp_avg_sq())};
  }
}

}  // namespace

TEST_CASE("fused AdamW matches torch::optim::AdamW step by step on every supported ISA") {
  for (Isa isa : supported_isas()) {
    for (std::int64_t n : {1, 7, 16, 17, 1000, 65536 + 13}) {
      compare_with_torch(n, 40, 1, {.isa = isa, .threads = 2});
    }
  }
}

TEST_CASE("fused AdamW matches torch when the array is updated as unaligned shards") {
  for (Isa isa : supported_isas()) {
    compare_with_torch(100003, 25, 3, {.isa = isa, .threads = 2});
    compare_with_torch(1001, 25, 4, {.isa = isa, .threads = 1});
  }
}

TEST_CASE("fused AdamW gives bit-identical results for any thread count") {
  const std::size_t n = 3 * 65536 + 5;
  torch::manual_seed(7);
  const auto init = to_vector(torch::randn({std::int64_t(n)}));
  const auto grad = to_vector(torch::randn({std::int64_t(n)}));
  auto run = [&](unsigned threads) {
    std::vector<float> p = init, m(n, 0.f), v(n, 0.f);
    for (int step = 1; step <= 3; ++step) adamw_step({p, grad, m, v}, kHyper, step, {.threads = threads});
    return p;
  };
  const auto one = run(1);
  CHECK(one != init);
  CHECK(run(2) == one);
  CHECK(run(3) == one);
}

// The SIMD kernels make the scalar one's operations (nothing fused beyond its fmadds, the library
// being built with -ffp-contract=off), so every ISA gives its bits; the GPU's mixed-precision
// AdamW gives them too (cuda_adamw_emulated_test.cpp, and tests/trainer/gpu on the hardware).
TEST_CASE("every ISA's fused AdamW gives the scalar kernel's bits") {
  const std::size_t n = 2 * 65536 + 13;
  torch::manual_seed(5);
  const auto init = to_vector(torch::randn({std::int64_t(n)}));
  const auto grad = to_vector(torch::randn({std::int64_t(n)}) * 0.1);
  auto run = [&](Isa isa) {
    std::vector<float> p = init, m(n, 0.f), v(n, 0.f);
    AdamWHyperparams hp = kHyper;
    hp.grad_scale = 0.7;
    for (int step = 1; step <= 3; ++step) adamw_step({p, grad, m, v}, hp, step, {.isa = isa, .threads = 2});
    return std::vector<std::vector<float>>{p, m, v};
  };
  const auto scalar = run(Isa::scalar);
  for (Isa isa : supported_isas()) {
    INFO(isa_name(isa));
    CHECK(run(isa) == scalar);
  }
}

TEST_CASE("grad_scale gives the bits of a gradient multiplied beforehand") {
  const std::size_t n = 65536 + 37;
  torch::manual_seed(11);
  const auto init = to_vector(torch::randn({std::int64_t(n)}));
  const auto grad = to_vector(torch::randn({std::int64_t(n)}) * 3);
  const double coefficient = 0.4142135623730951;  // not a power of two: the products round
  std::vector<float> premultiplied = grad;
  for (float& g : premultiplied) g *= static_cast<float>(coefficient);  // what clip_grad_norm_'s mul_ leaves
  for (Isa isa : supported_isas()) {
    INFO(isa_name(isa));
    std::vector<float> p1 = init, m1(n, 0.f), v1(n, 0.f), p2 = init, m2(n, 0.f), v2(n, 0.f);
    AdamWHyperparams scaled = kHyper;
    scaled.grad_scale = coefficient;
    for (int step = 1; step <= 3; ++step) {
      adamw_step({p1, grad, m1, v1}, scaled, step, {.isa = isa, .threads = 2});
      adamw_step({p2, premultiplied, m2, v2}, kHyper, step, {.isa = isa, .threads = 2});
    }
    CHECK(p1 != init);
    CHECK(p1 == p2);
    CHECK(m1 == m2);
    CHECK(v1 == v2);
  }
}

TEST_CASE("the traffic-only ceiling pass leaves every array unchanged") {
  for (Isa isa : supported_isas()) {
    const std::size_t n = 65536 + 21;
    std::vector<float> p(n), g(n), m(n), v(n);
    for (std::size_t i = 0; i < n; ++i) p[i] = float(i), g[i] = -float(i), m[i] = 0.5f * i, v[i] = 2.f * i;
    const auto p0 = p, g0 = g, m0 = m, v0 = v;
    adamw_traffic_pass({p, g, m, v}, {.isa = isa, .threads = 2});
    CHECK(p == p0);
    CHECK(g == g0);
    CHECK(m == m0);
    CHECK(v == v0);
  }
}
