// rotary: Llama's rotary embeddings as one autograd function on fp32 CPU tensors. HF's
// x * cos + rotate_half(x) * sin is a slice, neg, cat, two muls and an add forward (six passes
// over q or k) and as many backward. Here each head's row is rotated in one pass: with x1, x2 its
// halves, out1 = x1 * cos - x2 * sin and out2 = x2 * cos + x1 * sin. The products are rounded
// before the sum (this file is built with -ffp-contract=off), exactly as torch's separate mul and
// add kernels round them, so the result is HF's bit for bit. Backward is the inverse rotation,
// which gives autograd's sum over the composite's paths bit for bit too.
#include "fast_rotary.hpp"

#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/neg.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <cstdint>

namespace llmrdzv::model::detail {
namespace {

// Rotates every head_dim row of x ([batch, time, heads, head_dim], contiguous) by its time's cos
// and sin rows (c1, c2 and s1, s2 their halves): forward out1 = x1 c1 - x2 s1, out2 = x2 c2 + x1 s2;
// the inverse (backward) out1 = x1 c1 + x2 s2, out2 = x2 c2 - x1 s1.
template <bool Inverse>
void rotate_rows(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin, at::Tensor& out) {
  const std::int64_t time = x.size(1), heads = x.size(2), dim = x.size(3), half = dim / 2;
  const std::int64_t rows = x.numel() / dim;
  const float* in = x.data_ptr<float>();
  const float* c = cos.data_ptr<float>();
  const float* s = sin.data_ptr<float>();
  float* y = out.data_ptr<float>();
  at::parallel_for(0, rows, std::max<std::int64_t>(1, 16384 / dim), [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t row = begin; row < end; ++row) {
      const std::int64_t t = (row / heads) % time;
      const float* x1 = in + row * dim;
      const float* x2 = x1 + half;
      const float* c1 = c + t * dim;
      const float* c2 = c1 + half;
      const float* s1 = s + t * dim;
      const float* s2 = s1 + half;
      float* y1 = y + row * dim;
      float* y2 = y1 + half;
      for (std::int64_t i = 0; i < half; ++i) {
        if constexpr (Inverse) {
          y1[i] = x1[i] * c1[i] + x2[i] * s2[i];
          y2[i] = x2[i] * c2[i] - x1[i] * s1[i];
        } else {
          y1[i] = x1[i] * c1[i] - x2[i] * s1[i];
          y2[i] = x2[i] * c2[i] + x1[i] * s2[i];
        }
      }
    }
  });
}

struct FusedRotary : public torch::autograd::Function<FusedRotary> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cos,
                            const at::Tensor& sin) {
    const at::Tensor input = x.contiguous(), c = cos.contiguous(), s = sin.contiguous();
    at::Tensor out = at::empty_like(input);
    rotate_rows<false>(input, c, s, out);
    ctx->save_for_backward({c, s});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor grad = grad_outputs[0].contiguous();
    at::Tensor grad_x = at::empty_like(grad);
    rotate_rows<true>(grad, saved[0], saved[1], grad_x);
    return {grad_x, at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor rotary(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const bool fused = x.is_cpu() && x.scalar_type() == at::kFloat && cos.scalar_type() == at::kFloat &&
                     sin.scalar_type() == at::kFloat && x.dim() == 4 && x.size(3) % 2 == 0 && cos.dim() == 2 &&
                     cos.sizes() == sin.sizes() && cos.size(0) == x.size(1) && cos.size(1) == x.size(3) &&
                     !cos.requires_grad() && !sin.requires_grad();
  if (fused) return FusedRotary::apply(x, cos, sin);
  // HF's composite, on x viewed as [batch, heads, time, head_dim] so that cos and sin broadcast.
  const at::Tensor heads = x.transpose(1, 2);
  const std::int64_t half = x.size(3) / 2;
  const at::Tensor rotated = at::cat({-heads.slice(-1, half), heads.slice(-1, 0, half)}, -1);
  return (heads * cos + rotated * sin).transpose(1, 2);
}

}  // namespace llmrdzv::model::detail
