// swiglu: Llama's silu(gate) * up as one autograd function on fp32 CPU tensors. torch runs it as
// silu, then mul, and backward as two muls and silu_backward: five passes over [tokens,
// intermediate] tensors, with silu's output kept as a third saved activation. Here forward makes
// one pass and keeps only gate and up; backward makes one pass that recomputes the sigmoid and
// writes both gradients. The AVX2 loops (cpu_kernels_avx2.cpp) carry their own vectorised exp;
// CPUs without AVX2 + FMA take the scalar loops, with std::exp.
#include "fast_swiglu.hpp"

#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/silu.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cstdint>

#include "cpu_kernels.hpp"

namespace llmrdzv::model::detail {

namespace {

// Elements per parallel task: enough to amortise the task, few enough to split a
// [512, 1536] activation over a few dozen threads.
constexpr std::int64_t kGrain = 16384;

struct FusedSwiglu : public torch::autograd::Function<FusedSwiglu> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& gate_in, const at::Tensor& up_in) {
    const at::Tensor gate = gate_in.contiguous(), up = up_in.contiguous();
    at::Tensor out = at::empty_like(gate, at::MemoryFormat::Contiguous);
    const float* g = gate.data_ptr<float>();
    const float* u = up.data_ptr<float>();
    float* y = out.data_ptr<float>();
    const auto kernel = cpu_has_avx2_fma() ? swiglu_forward_avx2 : swiglu_forward_scalar;
    at::parallel_for(0, gate.numel(), kGrain, [&](std::int64_t begin, std::int64_t end) {
      kernel(g + begin, u + begin, y + begin, end - begin);
    });
    ctx->save_for_backward({gate, up});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& gate = saved[0];
    const at::Tensor& up = saved[1];
    const at::Tensor grad = grad_outputs[0].contiguous();
    at::Tensor grad_gate = at::empty_like(gate), grad_up = at::empty_like(up);
    const float* g = gate.data_ptr<float>();
    const float* u = up.data_ptr<float>();
    const float* dy = grad.data_ptr<float>();
    float* dg = grad_gate.data_ptr<float>();
    float* du = grad_up.data_ptr<float>();
    const auto kernel = cpu_has_avx2_fma() ? swiglu_backward_avx2 : swiglu_backward_scalar;
    at::parallel_for(0, gate.numel(), kGrain, [&](std::int64_t begin, std::int64_t end) {
      kernel(g + begin, u + begin, dy + begin, dg + begin, du + begin, end - begin);
    });
    return {grad_gate, grad_up};
  }
};

}  // namespace

at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up) {
  if (gate.is_cpu() && up.is_cpu() && gate.scalar_type() == at::kFloat && up.scalar_type() == at::kFloat &&
      gate.sizes() == up.sizes() && gate.numel() > 0) {
    return FusedSwiglu::apply(gate, up);
  }
  return at::silu(gate) * up;
}

}  // namespace llmrdzv::model::detail
