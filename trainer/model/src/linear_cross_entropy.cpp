// The chunked LM head + cross-entropy of linear_cross_entropy.hpp, as an autograd function whose
// forward computes the gradients and whose backward scales them. Each chunk's softmax runs row by
// row in cache on the CPU (cpu_kernels.hpp), in the trainer's CUDA kernel on a GPU
// (cuda_kernels.hpp, with the head padded to an aligned vocabulary and its gradient summed in
// fp32 by cuBLAS), and on torch's ops elsewhere.
#include "linear_cross_entropy.hpp"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/embedding_backward.h>
#include <ATen/ops/index_add.h>
#include <ATen/ops/logsumexp.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/zeros.h>
#include <torch/autograd.h>

#include <ATen/Parallel.h>
#include <ATen/autocast_mode.h>
#if LLMRDZV_HAVE_CUDA_KERNELS
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cpu_kernels.hpp"
#include "cuda_kernels.hpp"
#if LLMRDZV_HAVE_HEAD_GRADIENT_SUM
#include "cuda_head_gradient.hpp"
#endif
#include "llmrdzv/kernel_support/env_switch.hpp"
#if LLMRDZV_HAVE_CUDA_KERNELS
#include "llmrdzv/kernel_support/torch_element.hpp"
#endif
#include "llmrdzv/model/cuda_kernels_status.hpp"
#include "fast_linear.hpp"

namespace llmrdzv::model::detail {
namespace {

constexpr std::int64_t kIgnored = -100;

struct Result {
  at::Tensor loss;  // fp32 scalar
  // Undefined unless asked for: the gradients of the summed (not yet averaged) loss, whose values
  // stay near 1 in any type; backward applies 1 / count and the loss's own gradient in fp32.
  at::Tensor grad_hidden, grad_weight;
  at::Tensor gradient_scale;  // 1 / counted positions (1 when none is counted: zero gradients)
};

// A chunk's softmax on the CPU, where its fp32 logits are contiguous: each row's logsumexp, loss and
// gradient (softmax less the one-hot target; zero for an ignored row) in three passes over the row
// while it stays in cache, where torch's ops make about eight over the whole chunk and run its exp
// at a few elements per nanosecond. Returns the chunk's summed loss, added up in row order.
double softmax_cross_entropy_rows(at::Tensor& logits, const at::Tensor& targets, bool gradients) {
  const std::int64_t rows = logits.size(0), vocab = logits.size(1);
  const at::Tensor target_ids = targets.contiguous();
  const std::int64_t* target = target_ids.data_ptr<std::int64_t>();
  for (std::int64_t r = 0; r < rows; ++r) {
    if (target[r] >= vocab) {
      throw std::invalid_argument("linear_cross_entropy: target id " + std::to_string(target[r]) +
                                  " is outside the vocabulary of " + std::to_string(vocab));
    }
  }
  float* data = logits.data_ptr<float>();
  std::vector<double> row_loss(static_cast<std::size_t>(rows), 0.0);
  const auto logsumexp_row = cpu_has_avx2_fma() ? logsumexp_row_avx2 : logsumexp_row_scalar;
  at::parallel_for(0, rows, 1, [&](std::int64_t begin, std::int64_t end) {
    for (std::int64_t r = begin; r < end; ++r) {
      float* row = data + r * vocab;
      if (target[r] == kIgnored) {
        if (gradients) std::fill(row, row + vocab, 0.0f);
        continue;
      }
      const std::int64_t t = std::max<std::int64_t>(target[r], 0);  // as the device path's clamp
      const float picked = row[t];
      row_loss[static_cast<std::size_t>(r)] = logsumexp_row(row, vocab, gradients) - picked;
      if (gradients) row[t] -= 1.0f;
    }
  });
  return std::accumulate(row_loss.begin(), row_loss.end(), 0.0);
}

// The GPU kernel's rows (cuda/softmax_xent_rows.cuh) where the build has it: hidden and the head
// on a CUDA device in one of fp32, bf16 or fp16 (the logits keep it), with the targets on the same
// device. The logits stay in their own type and become the gradient in place, so no fp32 copy of
// the chunk is made. LLMRDZV_CUDA_KERNELS=0 in the environment keeps torch's ops (A/B runs).
bool device_softmax_rows([[maybe_unused]] const at::Tensor& hidden, [[maybe_unused]] const at::Tensor& weight,
                         [[maybe_unused]] const at::Tensor& targets) {
#if LLMRDZV_HAVE_CUDA_KERNELS
  const at::ScalarType type = hidden.scalar_type();
  // Under autocast the head's product may come out in another type: torch's path then.
  return kernel_support::cuda_kernels_enabled() && hidden.is_cuda() && targets.device() == hidden.device() &&
         weight.device() == hidden.device() && weight.scalar_type() == type &&
         !at::autocast::is_autocast_enabled(at::kCUDA) &&
         (type == at::kFloat || type == at::kBFloat16 || type == at::kHalf);
#else
  return false;
#endif
}

// The kernel's path multiplies by the head padded with zero rows to a multiple of this many: a
// vocabulary such as GPT-2's 50257 (odd) as the leading dimension of the logits and of their
// gradient leaves cuBLAS only its unaligned kernels, which on an H200 took ~32 of a ~65 ms GPT-2
// 124M step (16 x 1024, bf16) for the head's three products.
constexpr std::int64_t kVocabPadding = 64;

// weight [V, C] with zero rows appended to `rows` rows (a fresh tensor; the same one if no row is
// missing).
at::Tensor padded_head(const at::Tensor& weight, std::int64_t rows) {
  const std::int64_t vocab = weight.size(0);
  if (rows == vocab) return weight;
  at::Tensor padded = at::empty({rows, weight.size(1)}, weight.options());
  padded.narrow(0, 0, vocab).copy_(weight);
  padded.narrow(0, vocab, rows - vocab).zero_();
  return padded;
}

// The chunk's summed loss, on the device, over the first `vocab` columns of logits [n, stride];
// with `gradients` the logits hold the gradient after (zero past `vocab`).
at::Tensor softmax_cross_entropy_rows_cuda([[maybe_unused]] at::Tensor& logits, [[maybe_unused]] std::int64_t vocab,
                                           [[maybe_unused]] const at::Tensor& targets, [[maybe_unused]] bool gradients) {
#if LLMRDZV_HAVE_CUDA_KERNELS
  const kernel_support::DeviceElement element = kernel_support::device_element(logits.scalar_type(), "the fused loss's kernel");
  const c10::cuda::CUDAGuard on_device(logits.device());
  const at::Tensor ids = targets.contiguous();
  at::Tensor row_loss = at::empty({logits.size(0)}, logits.options().dtype(at::kFloat));
  softmax_xent_rows_cuda(logits.data_ptr(), element, logits.size(0), vocab, logits.size(1), ids.data_ptr<std::int64_t>(),
                         row_loss.data_ptr<float>(), gradients,
                         c10::cuda::getCurrentCUDAStream(logits.device().index()).stream());
  return row_loss.sum();
#else
  throw std::logic_error("linear_cross_entropy: this build has no CUDA kernels");
#endif
}

// Several chunks' 16-bit gradients on a GPU: their head gradient is summed in fp32 by cuBLAS
// (cuda_head_gradient.hpp) where the build has it (LLMRDZV_HAVE_HEAD_GRADIENT_SUM), not rounded
// per chunk and added in a pass of its own. LLMRDZV_CUDA_KERNELS=0 keeps torch's products.
bool sum_on_gpu([[maybe_unused]] const at::Tensor& grad_logits, [[maybe_unused]] const at::Tensor& hidden) {
#if LLMRDZV_HAVE_HEAD_GRADIENT_SUM
  return kernel_support::cuda_kernels_enabled() && head_gradient_sum_applies(grad_logits, hidden);
#else
  return false;
#endif
}

// sum (fp32 [V, C], made at the first chunk) += grad_logits^T hidden; false, with `sum` as it
// was, when cuBLAS had no memory for it (the chunk then takes torch's product).
bool add_head_gradient([[maybe_unused]] at::Tensor& sum, [[maybe_unused]] const at::Tensor& grad_logits,
                       [[maybe_unused]] const at::Tensor& hidden, [[maybe_unused]] std::int64_t vocab) {
#if LLMRDZV_HAVE_HEAD_GRADIENT_SUM
  if (sum.defined()) return sum_head_gradient(sum, grad_logits, hidden, /*first=*/false);
  at::Tensor fresh = at::empty({vocab, hidden.size(1)}, hidden.options().dtype(at::kFloat));
  if (!sum_head_gradient(fresh, grad_logits, hidden, /*first=*/true)) return false;
  sum = std::move(fresh);
  return true;
#else
  throw std::logic_error("linear_cross_entropy: this build has no cuBLAS sum of the head's gradient");
#endif
}

Result compute(const at::Tensor& hidden, const at::Tensor& weight, const at::Tensor& targets, std::int64_t chunk_elements,
               bool gradients) {
  const std::int64_t rows = hidden.size(0), vocab = weight.size(0);
  const bool kernel = device_softmax_rows(hidden, weight, targets);
  // The kernel's products run on a padded head (kVocabPadding): logits [n, padded] whose columns
  // past the vocabulary come out 0 and get a zero gradient, and a head gradient [padded, C] whose
  // first `vocab` rows are the gradient.
  const std::int64_t padded = kernel ? (vocab + kVocabPadding - 1) / kVocabPadding * kVocabPadding : vocab;
  const at::Tensor head = kernel ? padded_head(weight, padded) : weight;
  // The budget counts fp32 logits, the torch path's copy; the kernel keeps them in the head's
  // type, so the same memory holds more rows (fewer chunks, fewer fp32 sums of the head's gradient).
  const std::int64_t budget = kernel ? chunk_elements * 4 / static_cast<std::int64_t>(hidden.element_size()) : chunk_elements;
  const std::int64_t chunk_rows = std::max<std::int64_t>(1, budget / std::max<std::int64_t>(1, padded));
  const at::Tensor valid = targets != kIgnored;
  // Counted positions, kept on the device: no host read inside the step.
  const at::Tensor count = valid.sum().to(at::kFloat);
  at::Tensor loss_sum = at::zeros({}, hidden.options().dtype(at::kFloat));
  Result r;
  at::Tensor grad_weight_sum;  // fp32 over several chunks
  if (gradients) r.grad_hidden = at::empty_like(hidden);
  const bool several = chunk_rows < rows;
  for (std::int64_t first = 0; first < rows; first += chunk_rows) {
    const std::int64_t n = std::min(chunk_rows, rows - first);
    const at::Tensor h = hidden.narrow(0, first, n);
    at::Tensor logits = fast_linear(h, head);  // [n, padded], a fresh contiguous tensor in the head's type
    at::Tensor g;  // the chunk's gradient (softmax - one-hot), in the head's type
    if (kernel) {
      loss_sum += softmax_cross_entropy_rows_cuda(logits, vocab, targets.narrow(0, first, n), gradients);
      g = logits;
    } else {
      at::Tensor p = logits.to(at::kFloat);
      if (p.is_cpu() && p.is_contiguous()) {
        loss_sum += softmax_cross_entropy_rows(p, targets.narrow(0, first, n), gradients);
      } else {
        const at::Tensor counted = valid.narrow(0, first, n);
        const at::Tensor target = targets.narrow(0, first, n).clamp_min(0).unsqueeze(1);
        const at::Tensor lse = at::logsumexp(p, {1});
        loss_sum += ((lse - p.gather(1, target).squeeze(1)) * counted).sum();
        if (gradients) {
          p.sub_(lse.unsqueeze(1)).exp_();  // softmax
          p.scatter_add_(1, target, -counted.to(at::kFloat).unsqueeze(1));
          p.mul_(counted.to(at::kFloat).unsqueeze(1));  // ignored rows: 0
        }
      }
      if (gradients) g = p.to(weight.scalar_type());
    }
    if (!gradients) continue;
    r.grad_hidden.narrow(0, first, n).copy_(fast_mm(g, head));
    if (several && sum_on_gpu(g, h) && add_head_gradient(grad_weight_sum, g, h, padded)) continue;
    const at::Tensor gw = fast_mm(g.t(), h);
    if (!several) {
      r.grad_weight = gw;
    } else if (grad_weight_sum.defined()) {
      grad_weight_sum.add_(gw);
    } else {
      grad_weight_sum = gw.to(at::kFloat, /*non_blocking=*/false, /*copy=*/true);
    }
  }
  if (gradients && several) r.grad_weight = grad_weight_sum;  // rounded once, in backward
  // The padding's rows dropped (no rows at all: no gradient was made).
  if (gradients && r.grad_weight.defined()) r.grad_weight = r.grad_weight.narrow(0, 0, vocab);
  r.loss = loss_sum / count;  // NaN when nothing is counted, as torch's mean
  if (gradients) r.gradient_scale = count.clamp_min(1).reciprocal();
  return r;
}

class LinearCrossEntropy : public torch::autograd::Function<LinearCrossEntropy> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& hidden, const at::Tensor& weight,
                            const at::Tensor& targets, std::int64_t chunk_elements, const at::Tensor& tied_box, bool tied) {
    Result r = compute(hidden, weight, targets, chunk_elements, /*gradients=*/true);
    ctx->saved_data["grad_hidden"] = r.grad_hidden;
    ctx->saved_data["grad_weight"] = r.grad_weight;
    ctx->saved_data["gradient_scale"] = r.gradient_scale;
    ctx->saved_data["hidden_type"] = hidden.scalar_type();
    ctx->saved_data["weight_type"] = weight.scalar_type();
    if (tied) ctx->saved_data["tied_box"] = tied_box;
    return r.loss;
  }

  // 1 / count and the loss's own gradient (fp16's loss scale over the micro-batches, say) multiply
  // the saved gradients in fp32. Forward rounded the unscaled softmax gradient, whose entries are
  // at most 1 in size: scaled by 1 / count first, most of them would underflow in fp16.
  // The saved gradients are this function's own tensors and are handed over, not copied: an fp32
  // one is scaled in place (no second [vocab, C] table allocated and written), and a second
  // backward finds them gone.
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const at::Tensor scale = grad_outputs[0].to(at::kFloat) * ctx->saved_data["gradient_scale"].toTensor();
    const auto scaled = [&](const char* name, at::ScalarType type) {
      at::IValue held = std::exchange(ctx->saved_data[name], at::IValue());
      if (!held.isTensor()) throw std::logic_error("linear_cross_entropy: backward through the same graph twice");
      at::Tensor saved = std::move(held).toTensor();
      if (saved.scalar_type() == at::kFloat) return saved.mul_(scale).to(type);
      return (saved.to(at::kFloat) * scale).to(type);
    };
    at::Tensor grad_weight = scaled("grad_weight", ctx->saved_data["weight_type"].toScalarType());
    if (ctx->saved_data.find("tied_box") != ctx->saved_data.end()) {
      ctx->saved_data["tied_box"].toTensor().set_(grad_weight);  // the lookup's backward takes it from there
      grad_weight = at::Tensor();
    }
    return {scaled("grad_hidden", ctx->saved_data["hidden_type"].toScalarType()), grad_weight, at::Tensor(),
            at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

class TiedEmbedding : public torch::autograd::Function<TiedEmbedding> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& weight, const at::Tensor& ids,
                            std::int64_t padding_idx, at::Tensor tied_box) {
    ctx->save_for_backward({ids});
    ctx->saved_data["padding_idx"] = padding_idx;
    ctx->saved_data["vocab"] = weight.size(0);
    ctx->saved_data["tied_box"] = tied_box;
    return at::embedding(weight, ids, padding_idx);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const at::Tensor ids = ctx->get_saved_variables()[0];
    const std::int64_t padding_idx = ctx->saved_data["padding_idx"].toInt();
    const at::Tensor box = ctx->saved_data["tied_box"].toTensor();
    if (box.numel() == 0) {  // no head gradient came: at::embedding's sparse one
      return {at::embedding_backward(grad_outputs[0], ids, ctx->saved_data["vocab"].toInt(), padding_idx,
                                     /*scale_grad_by_freq=*/false, /*sparse=*/true),
              at::Tensor(), at::Tensor(), at::Tensor()};
    }
    const at::Tensor rows = grad_outputs[0].reshape({-1, box.size(1)});
    const at::Tensor flat_ids = ids.reshape({-1});
    const at::Tensor kept = flat_ids != padding_idx;
    at::Tensor sum = box.detach();  // the head's gradient, taken out of the box
    box.set_();
    if (padding_idx >= 0) {
      sum.index_add_(0, flat_ids.masked_select(kept), rows.index({kept}).to(sum.scalar_type()));
    } else {
      sum.index_add_(0, flat_ids, rows.to(sum.scalar_type()));
    }
    return {sum, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

torch::Tensor linear_cross_entropy(const torch::Tensor& hidden, const torch::Tensor& weight, const torch::Tensor& targets,
                                   std::int64_t chunk_elements, const torch::Tensor& tied_box) {
  if (hidden.dim() != 2 || weight.dim() != 2 || hidden.size(1) != weight.size(1) || targets.dim() != 1 ||
      targets.size(0) != hidden.size(0) || targets.scalar_type() != at::kLong) {
    throw std::invalid_argument("linear_cross_entropy: hidden [N, C], weight [V, C] and int64 targets [N] expected");
  }
  const bool gradients = at::GradMode::is_enabled() && (hidden.requires_grad() || weight.requires_grad());
  if (!gradients) return compute(hidden, weight, targets, chunk_elements, false).loss;
  // apply() takes defined tensors only: without a box, an empty stand-in that stays unused.
  return LinearCrossEntropy::apply(hidden, weight, targets, chunk_elements,
                                   tied_box.defined() ? tied_box : make_tied_box(), tied_box.defined());
}

torch::Tensor make_tied_box() { return at::empty({0}); }

torch::Tensor tied_embedding(const torch::Tensor& weight, const torch::Tensor& ids, std::int64_t padding_idx,
                             const torch::Tensor& tied_box) {
  return TiedEmbedding::apply(weight, ids, padding_idx, tied_box);
}

}  // namespace llmrdzv::model::detail

namespace llmrdzv::model {

// Here, beside the one kernel of the model's that decides it (device_softmax_rows); the optimizer's
// kernel is built and switched by the same CMake decision and environment variable.
std::string cuda_kernels_status() {
#if LLMRDZV_HAVE_CUDA_KERNELS
  return kernel_support::cuda_kernels_enabled() ? "on" : "off (LLMRDZV_CUDA_KERNELS=0)";
#else
  return "not in this build (built without a CUDA compiler)";
#endif
}

}  // namespace llmrdzv::model
