// The bf16-gradient AdamW (adamw_step_bf16), the offloaded optimizer's step for bf16 models: on
// every ISA this CPU has, its masters, moments and rounded weights must be the bits of the three
// passes it replaces (widen the gradient to fp32 as torch does, adamw_step, round the masters to
// bf16 with torch's c10::BFloat16): on lengths around each ISA's width and past a thread chunk,
// with NaN, infinite, zero and subnormal gradients, with the rounded weights written over the
// gradient itself, for any thread count; and it refuses mismatched lengths.
// torch before Catch: c10's logging defines a CHECK macro that would replace Catch's.
#include <c10/util/BFloat16.h>
#include <torch/torch.h>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "llmrdzv/optim/fused_adamw.hpp"

using namespace llmrdzv::optim;

namespace {

const AdamWHyperparams kHyper{.lr = 3e-3, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1,
                              .grad_scale = 0.7};

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

struct State {
  std::vector<float> p, m, v;
  std::vector<std::uint16_t> rounded;
};

// n masters, moments and bf16 gradients (raw bits), with special gradients sprinkled in.
struct Problem {
  std::vector<float> p, m, v;
  std::vector<std::uint16_t> grad;

  explicit Problem(std::size_t n) {
    torch::manual_seed(static_cast<std::uint64_t>(n));
    const at::Tensor init = torch::randn({static_cast<std::int64_t>(n)});
    const at::Tensor g = (torch::randn({static_cast<std::int64_t>(n)}) * 0.1).to(torch::kBFloat16);
    p.assign(init.data_ptr<float>(), init.data_ptr<float>() + n);
    m.assign(n, 0.01f);
    v.assign(n, 0.001f);
    const auto* bits = reinterpret_cast<const std::uint16_t*>(g.data_ptr<at::BFloat16>());
    grad.assign(bits, bits + n);
    // NaN, +-inf, -0, the smallest subnormal, the largest finite: every 97th element from 3 on.
    const std::uint16_t special[] = {0x7FC1, 0x7F80, 0xFF80, 0x8000, 0x0001, 0x7F7F};
    for (std::size_t i = 3, k = 0; i < n; i += 97, ++k) grad[i] = special[k % 6];
  }
};

// Three passes, as the offload step made them before adamw_step_bf16.
State three_passes(const Problem& problem, int steps, Isa isa) {
  State s{problem.p, problem.m, problem.v, {}};
  std::vector<float> wide(problem.grad.size());
  for (std::size_t i = 0; i < wide.size(); ++i) wide[i] = static_cast<float>(c10::BFloat16(problem.grad[i], c10::BFloat16::from_bits()));
  for (int step = 1; step <= steps; ++step) adamw_step({s.p, wide, s.m, s.v}, kHyper, step, {.isa = isa, .threads = 2});
  for (const float x : s.p) s.rounded.push_back(c10::BFloat16(x).x);
  return s;
}

State one_pass(const Problem& problem, int steps, Isa isa, unsigned threads, bool in_place) {
  State s{problem.p, problem.m, problem.v, std::vector<std::uint16_t>(problem.grad.size(), 0xABCD)};
  std::vector<std::uint16_t> grad = problem.grad;
  for (int step = 1; step <= steps; ++step) {
    grad = problem.grad;  // the same gradient each step (in place, the last step's weights replaced it)
    std::span<std::uint16_t> out = in_place ? std::span<std::uint16_t>(grad) : std::span<std::uint16_t>(s.rounded);
    adamw_step_bf16({s.p, grad, s.m, s.v, out}, kHyper, step, {.isa = isa, .threads = threads});
  }
  if (in_place) s.rounded = grad;
  return s;
}

}  // namespace

TEST_CASE("the bf16-gradient AdamW gives the bits of widening, the fp32 kernel and torch's rounding, on every ISA") {
  for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{8}, std::size_t{9}, std::size_t{15},
                              std::size_t{16}, std::size_t{17}, std::size_t{2} * 65536 + 13}) {
    const Problem problem(n);
    for (const Isa isa : supported_isas()) {
      INFO("n " << n << " isa " << isa_name(isa));
      const State want = three_passes(problem, 3, isa);
      for (const bool in_place : {false, true}) {
        INFO((in_place ? "rounded over the gradient" : "rounded apart"));
        const State got = one_pass(problem, 3, isa, 2, in_place);
        CHECK(same_bits(got.p, want.p));
        CHECK(same_bits(got.m, want.m));
        CHECK(same_bits(got.v, want.v));
        CHECK(same_bits(got.rounded, want.rounded));
      }
    }
  }
}

TEST_CASE("the bf16-gradient AdamW gives the same bits on any thread count, and NaN weights round to 0x7FC0") {
  const Problem problem(3 * 65536 + 5);
  const State one = one_pass(problem, 2, best_isa(), 1, false);
  CHECK(same_bits(one_pass(problem, 2, best_isa(), 3, false).rounded, one.rounded));
  CHECK(same_bits(one_pass(problem, 2, best_isa(), 3, false).p, one.p));
  // The NaN gradient at element 3 made its master NaN: torch rounds any NaN to 0x7FC0.
  CHECK(one.p[3] != one.p[3]);
  CHECK(one.rounded[3] == 0x7FC0);
}

TEST_CASE("adamw_step_bf16 refuses arrays of different lengths and an output shifted over the gradient, naming them") {
  std::vector<float> p(4), m(4), v(4);
  std::vector<std::uint16_t> g(4), out(3), both(5);
  CHECK_THROWS_WITH(adamw_step_bf16({p, g, m, v, out}, kHyper, 1),
                    "adamw: param, grad, exp_avg, exp_avg_sq and rounded must have the same length (got 4, 4, 4, 4, 3)");
  const std::span<std::uint16_t> all(both);
  CHECK_THROWS_WITH(adamw_step_bf16({p, all.first(4), m, v, all.last(4)}, kHyper, 1),
                    "adamw: rounded must be the gradient's own array or not overlap it");
  CHECK_NOTHROW(adamw_step_bf16({p, all.first(4), m, v, all.first(4)}, kHyper, 1));
}

TEST_CASE("with lr 0 the bf16-gradient AdamW rounds each master as torch does: ties to even, NaN, infinities") {
  // Masters unchanged by the update (lr 0, no decay), whose low 16 bits sit on and around the
  // halfway point, above even and odd upper halves, of both signs; and the special values.
  std::vector<float> p;
  for (const std::uint32_t upper : {0x3F80u, 0x3F81u, 0xBF80u, 0xBF81u, 0x7F7Fu, 0x0000u, 0x0001u}) {
    for (const std::uint32_t lower : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu}) {
      const std::uint32_t bits = upper << 16 | lower;
      float x;
      std::memcpy(&x, &bits, sizeof x);
      p.push_back(x);
    }
  }
  for (const float x : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::quiet_NaN(), -std::numeric_limits<float>::quiet_NaN(), -0.0f}) {
    p.push_back(x);
  }
  std::vector<std::uint16_t> want;
  for (const float x : p) want.push_back(c10::BFloat16(x).x);
  AdamWHyperparams still = kHyper;
  still.lr = 0;
  still.weight_decay = 0;
  for (const Isa isa : supported_isas()) {
    INFO(isa_name(isa));
    std::vector<float> masters = p, m(p.size(), 0.f), v(p.size(), 0.f);
    std::vector<std::uint16_t> grad(p.size(), 0x3F80), rounded(p.size());
    adamw_step_bf16({masters, grad, m, v, rounded}, still, 1, {.isa = isa, .threads = 1});
    CHECK(same_bits(masters, p));
    CHECK(same_bits(rounded, want));
  }
}
