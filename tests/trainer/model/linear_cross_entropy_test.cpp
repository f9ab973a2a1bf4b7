// The fused, chunked LM head + cross-entropy against the plain one (the full logits, torch's
// cross_entropy over logits.float()): the same loss and the same gradients of the hidden states
// and the head, for one chunk and for chunks that cut the positions unevenly, with ignored
// targets, in fp32, bf16 and fp16 (under a loss scale), scaled by the loss's own gradient; a
// batch with nothing counted; and a model's loss() against forward()'s loss. The CPU's softmax rows
// (cpu_kernels.hpp, scalar and AVX2) against a double-precision reference.
#include <ATen/ops/allclose.h>
#include <ATen/ops/cross_entropy_loss.h>
#include <ATen/ops/equal.h>
#include <ATen/ops/logsumexp.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/randint.h>
#include <torch/autograd.h>
#include <torch/utils.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "cpu_kernels.hpp"
#include "linear_cross_entropy.hpp"
#include "llmrdzv/model/causal_lm.hpp"
#include "loss_problem.hpp"
#include "tiny_gpt2.hpp"

// Last: c10/util/Logging.h defines its own CHECK macro, Catch's must win.
#include <catch2/catch.hpp>

using namespace llmrdzv;
using loss_problem::Outcome;
using loss_problem::Problem;
using loss_problem::run;

namespace {

void require_close(const Outcome& a, const Outcome& b, double rtol, double atol) {
  CHECK(loss_problem::outcomes_close(a, b, rtol, atol));
}

}  // namespace

TEST_CASE("the fused LM head + cross-entropy equals the plain one in fp32, in one chunk or many", "[model][loss]") {
  const Problem p(at::kFloat);
  const Outcome plain = run(p, false, 0, 3.0);
  // 101 * 37 logits in one chunk; 8 rows per chunk (37 = 4 x 8 + 5); one row per chunk.
  for (const std::int64_t chunk : {std::int64_t{1} << 26, std::int64_t{8 * 101}, std::int64_t{1}}) {
    INFO("chunk of " << chunk << " logits");
    require_close(run(p, true, chunk, 3.0), plain, 1e-5, 1e-7);
  }
}

TEST_CASE("the fused LM head + cross-entropy follows the plain one in bf16 (softmax in fp32)", "[model][loss]") {
  const Problem p(at::kBFloat16);
  const Outcome plain = run(p, false, 0, 0.3);
  for (const std::int64_t chunk : {std::int64_t{1} << 26, std::int64_t{10 * 101}}) {
    INFO("chunk of " << chunk << " logits");
    // The loss is the same fp32 arithmetic on the same bf16 logits; the gradients round to bf16
    // at the same points (several chunks sum the head's gradient in fp32 and round once).
    require_close(run(p, true, chunk, 0.3), plain, 1e-2, 1e-3);
  }
}

TEST_CASE("the fused LM head + cross-entropy follows the plain one in fp16 under a loss scale, where 1 / count "
          "would underflow", "[model][loss]") {
  // 4096 counted positions over 1000 tokens: softmax entries ~1e-3, divided by the count ~2e-7,
  // below fp16's normal range; torch's path multiplies by the loss scale (1024) before rounding.
  const Problem p(at::kHalf, 4096, 16, 1000);
  const Outcome plain = run(p, false, 0, 1024.0);
  const Outcome fused = run(p, true, std::int64_t{1} << 20, 1024.0);
  require_close(fused, plain, 2e-2, 1e-3);
  // Every entry of the head's gradient that the plain path keeps, the fused one keeps too.
  CHECK((plain.grad_weight != 0).sum().item<std::int64_t>() == (fused.grad_weight != 0).sum().item<std::int64_t>());
}

TEST_CASE("a batch with every target ignored has torch's NaN loss and zero gradients", "[model][loss]") {
  Problem p(at::kFloat);
  p.targets.fill_(-100);
  const Outcome fused = run(p, true, std::int64_t{1} << 26, 1.0);
  CHECK(std::isnan(fused.loss.item<float>()));
  CHECK(fused.grad_hidden.abs().sum().item<float>() == 0.0f);
  CHECK(fused.grad_weight.abs().sum().item<float>() == 0.0f);
}

TEST_CASE("the fused loss without gradients is the loss, and bad shapes are refused", "[model][loss]") {
  const Problem p(at::kFloat);
  torch::NoGradGuard no_grad;
  const at::Tensor expected =
      at::cross_entropy_loss(at::mm(p.hidden, p.weight.t()), p.targets, std::nullopt, at::Reduction::Mean, -100);
  CHECK(at::allclose(model::detail::linear_cross_entropy(p.hidden, p.weight, p.targets, 303), expected, 1e-6, 1e-7));
  CHECK_THROWS_AS(model::detail::linear_cross_entropy(p.hidden, p.weight.t(), p.targets), std::invalid_argument);
  CHECK_THROWS_AS(model::detail::linear_cross_entropy(p.hidden, p.weight, p.targets.narrow(0, 0, 3)), std::invalid_argument);
}

namespace {

struct RowVariant {
  std::string name;
  double (*logsumexp_row)(float*, std::int64_t, bool);
};

std::vector<RowVariant> row_variants() {
  std::vector<RowVariant> all{{"scalar", model::detail::logsumexp_row_scalar}};
  if (model::detail::cpu_has_avx2_fma()) {
    all.push_back({"avx2", model::detail::logsumexp_row_avx2});
  } else {
    WARN("this CPU has no AVX2 + FMA: only the scalar softmax rows are checked");
  }
  return all;
}

}  // namespace

TEST_CASE("the softmax rows give each row's logsumexp and softmax as computed in double", "[model][loss]") {
  torch::manual_seed(11);
  for (const RowVariant& variant : row_variants()) {
    // Around the vector width, a vocabulary's size, and a spread where most exps vanish.
    for (const std::int64_t n : {1, 5, 8, 13, 16, 17, 1027, 50272}) {
      for (const double spread : {1.0, 10.0, 300.0}) {
        INFO(variant.name << ", " << n << " logits, spread " << spread);
        const at::Tensor logits = torch::randn({n}) * spread;
        const at::Tensor exact = logits.to(at::kDouble);
        const double lse_exact = at::logsumexp(exact, {0}).item<double>();
        const at::Tensor softmax_exact = at::softmax(exact, 0);

        at::Tensor row = logits.clone();
        const double lse_only = variant.logsumexp_row(row.data_ptr<float>(), n, false);
        CHECK(at::equal(row, logits));  // without softmax the row is left alone
        const double lse = variant.logsumexp_row(row.data_ptr<float>(), n, true);
        CHECK(lse == lse_only);
        CHECK(std::abs(lse - lse_exact) <= 1e-6 * std::max(1.0, std::abs(lse_exact)));
        // Each entry within 4 ulp of itself (the exp and the division round), plus what rounding
        // the shifted logit x - max to fp32 moves its exp: half an ulp of |x - max|, relatively
        // (torch's x - logsumexp rounds the same way); or within 1e-37 where the exact entry is
        // below fp32's normal range.
        const at::Tensor error = (row.to(at::kDouble) - softmax_exact).abs();
        const at::Tensor shifted = (exact - exact.max()).abs();
        const at::Tensor bound = softmax_exact * (4 + shifted / 2) * std::numeric_limits<float>::epsilon() + 1e-37;
        CHECK((error - bound).max().item<double>() <= 0);
      }
    }
  }
}

TEST_CASE("a NaN logit anywhere in a row makes its logsumexp NaN", "[model][loss]") {
  for (const RowVariant& variant : row_variants()) {
    for (const std::int64_t at : {0, 3, 8, 20, 22}) {  // first, inside a register, the tail
      INFO(variant.name << ", NaN at " << at << " of 23");
      at::Tensor row = torch::randn({23});
      row[at] = std::numeric_limits<float>::quiet_NaN();
      CHECK(std::isnan(variant.logsumexp_row(row.data_ptr<float>(), 23, true)));
    }
  }
}

TEST_CASE("a target id outside the vocabulary is refused by name, not read past the logits", "[model][loss]") {
  Problem p(at::kFloat);
  p.targets[3] = 101;  // vocab 101: ids 0..100
  CHECK_THROWS_WITH(model::detail::linear_cross_entropy(p.hidden, p.weight, p.targets),
                    "linear_cross_entropy: target id 101 is outside the vocabulary of 101");
}

TEST_CASE("a model's loss() is forward()'s loss, with the same gradients", "[model][loss]") {
  torch::manual_seed(3);
  model::CausalLm m = model::make_causal_lm(testing::tiny_gpt2());
  const at::Tensor ids = at::randint(67, {3, 20}, at::TensorOptions().dtype(at::kLong));
  const auto grads = [&](const at::Tensor& loss) {
    for (auto& p : m->parameters()) p.mutable_grad().reset();
    loss.backward();
    std::vector<at::Tensor> out;
    for (auto& p : m->parameters()) out.push_back(p.grad().clone());
    return out;
  };
  const at::Tensor plain = m->forward(ids, ids).loss;
  const std::vector<at::Tensor> plain_grads = grads(plain);
  const at::Tensor fused = m->loss(ids, ids);
  const std::vector<at::Tensor> fused_grads = grads(fused);
  CHECK(at::allclose(fused, plain, 1e-6, 1e-7));
  REQUIRE(fused_grads.size() == plain_grads.size());
  for (std::size_t k = 0; k < plain_grads.size(); ++k) {
    INFO("parameter " << k);
    CHECK(at::allclose(fused_grads[k], plain_grads[k], 1e-5, 1e-7));
  }
  // Two passes accumulate; the tied table's gradient (the head's, with the lookup's rows added in
  // place) stays dense.
  for (auto& p : m->parameters()) p.mutable_grad().reset();
  m->loss(ids, ids).backward();
  m->loss(ids, ids).backward();
  const std::vector<at::Tensor> parameters = m->parameters();
  for (std::size_t k = 0; k < parameters.size(); ++k) {
    INFO("parameter " << k);
    CHECK_FALSE(parameters[k].grad().is_sparse());
    CHECK(at::allclose(parameters[k].grad(), fused_grads[k] * 2, 1e-5, 1e-7));
  }
}

TEST_CASE("the fused loss hands its saved gradients over once: a second backward through it is refused", "[model][loss]") {
  const Problem p(at::kFloat);
  const at::Tensor h = p.hidden.detach().clone().requires_grad_(true);
  const at::Tensor w = p.weight.detach().clone().requires_grad_(true);
  const at::Tensor loss = model::detail::linear_cross_entropy(h, w, p.targets, std::int64_t{1} << 26);
  loss.backward({}, /*retain_graph=*/true);
  const at::Tensor first = w.grad().clone();
  CHECK_THROWS_WITH(loss.backward(), Catch::Contains("backward through the same graph twice"));
  CHECK(at::equal(w.grad(), first));  // the first gradient was not scaled again
}
