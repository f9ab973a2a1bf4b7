// A small LM-head + cross-entropy problem (hidden states, head weight, targets with every fifth
// position ignored) and the loss with its gradients, by the fused path or by torch's plain
// cross_entropy over the full fp32 logits: shared by the model tests (CPU) and the GPU tests.
// Include after torch and before Catch (c10's CHECK must not replace Catch's).
#pragma once

#include <ATen/ops/allclose.h>
#include <ATen/ops/cross_entropy_loss.h>
#include <ATen/ops/randint.h>
#include <torch/autograd.h>
#include <torch/utils.h>

#include <cstdint>

#include "linear_cross_entropy.hpp"

namespace loss_problem {

struct Problem {
  at::Tensor hidden, weight, targets;
  // Drawn on the CPU (the same values for every device), then moved to `device`.
  Problem(at::ScalarType type, std::int64_t rows = 37, std::int64_t width = 24, std::int64_t vocab = 101,
          at::Device device = at::kCPU) {
    torch::manual_seed(7);
    hidden = torch::randn({rows, width}).to(type).to(device).requires_grad_(true);
    weight = (torch::randn({vocab, width}) * 0.3).to(type).to(device).requires_grad_(true);
    targets = at::randint(vocab, {rows}, at::TensorOptions().dtype(at::kLong));
    targets.index_put_({torch::arange(0, rows, 5)}, -100);  // every fifth position ignored
    targets = targets.to(device);
  }
};

struct Outcome {
  at::Tensor loss, grad_hidden, grad_weight;
};

// `scale` stands for what multiplies the loss before backward (fp16's scale / micro-batches).
inline Outcome run(const Problem& p, bool fused, std::int64_t chunk_elements, double scale) {
  const at::Tensor h = p.hidden.detach().clone().requires_grad_(true);
  const at::Tensor w = p.weight.detach().clone().requires_grad_(true);
  const at::Tensor loss = fused ? llmrdzv::model::detail::linear_cross_entropy(h, w, p.targets, chunk_elements)
                                : at::cross_entropy_loss(at::mm(h, w.t()).to(at::kFloat), p.targets, std::nullopt,
                                                         at::Reduction::Mean, -100);
  (loss * scale).backward();
  return {loss.detach(), h.grad(), w.grad()};
}

// The same loss and gradients, in the same types, within rtol/atol (at::allclose's).
inline bool outcomes_close(const Outcome& a, const Outcome& b, double rtol, double atol) {
  return a.loss.scalar_type() == at::kFloat && at::allclose(a.loss, b.loss, rtol, atol) &&
         a.grad_hidden.scalar_type() == b.grad_hidden.scalar_type() &&
         a.grad_weight.scalar_type() == b.grad_weight.scalar_type() &&
         at::allclose(a.grad_hidden.to(at::kFloat), b.grad_hidden.to(at::kFloat), rtol, atol) &&
         at::allclose(a.grad_weight.to(at::kFloat), b.grad_weight.to(at::kFloat), rtol, atol);
}

// The loss within rtol (at::allclose's, atol 0), and each gradient within `relative` of the other
// as a whole: |a - b| <= relative * |b| in the L2 norm. For gradients whose entries are far below
// any useful absolute tolerance (a GPT-2-sized vocabulary spreads each position's unit of gradient
// over 50k entries), where an elementwise atol would pass even all-zero gradients.
inline bool outcomes_close_in_norm(const Outcome& a, const Outcome& b, double rtol, double relative) {
  const auto near = [relative](const at::Tensor& x, const at::Tensor& y) {
    const at::Tensor xf = x.to(at::kFloat), yf = y.to(at::kFloat);
    return (xf - yf).norm().item<double>() <= relative * yf.norm().item<double>() && yf.norm().item<double>() > 0;
  };
  return a.loss.scalar_type() == at::kFloat && at::allclose(a.loss, b.loss, rtol, 0.0) &&
         a.grad_hidden.scalar_type() == b.grad_hidden.scalar_type() &&
         a.grad_weight.scalar_type() == b.grad_weight.scalar_type() && near(a.grad_hidden, b.grad_hidden) &&
         near(a.grad_weight, b.grad_weight);
}

}  // namespace loss_problem
