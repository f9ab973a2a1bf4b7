// rms_norm: RMSNorm fused for fp32 CPU tensors. HF's LlamaRMSNorm is five torch ops forward (pow,
// mean, add, rsqrt, two muls) and about ten elementwise passes backward, each over the whole
// activation; here forward makes one pass per row (sum of squares, then the scaled product) and
// backward one (the row's dot product, then the input gradient), with the weight's gradient summed
// per thread. Both keep each row's 1 / rms, so backward does not recompute it. Eight partial sums
// per row let the compiler vectorise the reductions; the fp32 results differ from the composite
// only in the order of the row's additions.
#include "fast_rms_norm.hpp"

#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

namespace llmrdzv::model::detail {
namespace {

constexpr int kLanes = 8;

// Sum of a[i] * b[i] over n elements, in kLanes partial sums.
float dot(const float* a, const float* b, std::int64_t n) {
  std::array<float, kLanes> part{};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) part[l] += a[i + l] * b[i + l];
  }
  float sum = 0;
  for (int l = 0; l < kLanes; ++l) sum += part[l];
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

// Rows per parallel task: about 32K elements each, and at most 64 tasks, so backward's per-task
// weight gradients stay small. It depends on the shape alone, never on the thread count, so the
// results do not either.
std::int64_t rows_per_task(std::int64_t rows, std::int64_t width) {
  constexpr std::int64_t kMaxTasks = 64;
  return std::max({std::int64_t{1}, 32768 / std::max<std::int64_t>(1, width), (rows + kMaxTasks - 1) / kMaxTasks});
}

struct FusedRmsNorm : public torch::autograd::Function<FusedRmsNorm> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            double eps) {
    const at::Tensor x = input.contiguous();
    const at::Tensor w = weight.contiguous();
    const std::int64_t width = x.size(-1), rows = x.numel() / width;
    at::Tensor out = at::empty_like(x);
    at::Tensor inverse_rms = at::empty({rows}, x.options());
    const float* in = x.data_ptr<float>();
    const float* scale = w.data_ptr<float>();
    float* y = out.data_ptr<float>();
    float* r = inverse_rms.data_ptr<float>();
    at::parallel_for(0, rows, rows_per_task(rows, width), [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t row = begin; row < end; ++row) {
        const float* xr = in + row * width;
        float* yr = y + row * width;
        const float mean_square = dot(xr, xr, width) / static_cast<float>(width);
        const float inv = 1.0f / std::sqrt(mean_square + static_cast<float>(eps));
        r[row] = inv;
        for (std::int64_t i = 0; i < width; ++i) yr[i] = scale[i] * (xr[i] * inv);
      }
    });
    ctx->save_for_backward({x, w, inverse_rms});
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& x = saved[0];
    const at::Tensor& w = saved[1];
    const at::Tensor& inverse_rms = saved[2];
    const at::Tensor gy = grad_outputs[0].contiguous();
    const std::int64_t width = x.size(-1), rows = x.numel() / width;
    at::Tensor gx = at::empty_like(x);
    const float* in = x.data_ptr<float>();
    const float* scale = w.data_ptr<float>();
    const float* r = inverse_rms.data_ptr<float>();
    const float* g = gy.data_ptr<float>();
    float* dx = gx.data_ptr<float>();
    // Each task sums its rows' weight gradient into its own row of `partial`.
    const std::int64_t step = rows_per_task(rows, width), tasks = (rows + step - 1) / step;
    at::Tensor partial = at::zeros({std::max<std::int64_t>(tasks, 1), width}, x.options());
    float* pw = partial.data_ptr<float>();
    at::parallel_for(0, tasks, 1, [&](std::int64_t first_task, std::int64_t last_task) {
      std::vector<float> scaled(static_cast<std::size_t>(width));  // gy * w of one row
      for (std::int64_t task = first_task; task < last_task; ++task) {
        float* dw = pw + task * width;
        for (std::int64_t row = task * step, end = std::min(rows, row + step); row < end; ++row) {
          const float* xr = in + row * width;
          const float* gr = g + row * width;
          float* dxr = dx + row * width;
          const float inv = r[row];
          for (std::int64_t i = 0; i < width; ++i) {
            scaled[static_cast<std::size_t>(i)] = gr[i] * scale[i];
            dw[i] += gr[i] * (xr[i] * inv);
          }
          // dx = inv * (dn - n * mean(dn * n)) with n = x * inv, dn = gy * w.
          const float mean_dn_n = dot(scaled.data(), xr, width) * inv / static_cast<float>(width);
          for (std::int64_t i = 0; i < width; ++i) {
            dxr[i] = inv * (scaled[static_cast<std::size_t>(i)] - xr[i] * inv * mean_dn_n);
          }
        }
      }
    });
    return {gx, partial.sum(0), at::Tensor()};
  }
};

}  // namespace

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& weight, double eps) {
  if (x.is_cpu() && x.scalar_type() == at::kFloat && weight.scalar_type() == at::kFloat && x.dim() >= 1 &&
      weight.dim() == 1 && x.size(-1) == weight.numel() && x.numel() > 0) {
    return FusedRmsNorm::apply(x, weight, eps);
  }
  const at::Tensor x32 = x.to(at::kFloat);
  const at::Tensor normed = x32 * at::rsqrt(x32.pow(2).mean(-1, /*keepdim=*/true) + eps);
  return weight * normed.to(x.scalar_type());
}

}  // namespace llmrdzv::model::detail
