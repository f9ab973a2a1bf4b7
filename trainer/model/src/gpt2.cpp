// The GPT-2 modules: attention via fused scaled-dot-product attention, GELU-tanh MLP, pre-LN
// blocks, learned positions, tied (or untied) LM head, HF initialisation, HF's shifted LM loss, and decoding
// with a KV cache for generation.
#include "llmrdzv/model/gpt2.hpp"

#include <ATen/Context.h>
#include <ATen/autocast_mode.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/cross_entropy_loss.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <ATen/ops/silu.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "block_checkpoint.hpp"

namespace llmrdzv::model {
namespace {

torch::nn::Linear linear(std::int64_t in, std::int64_t out) { return torch::nn::Linear(torch::nn::LinearOptions(in, out)); }

torch::nn::LayerNorm layer_norm(const Gpt2Config& c) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.n_embd}).eps(c.layer_norm_epsilon));
}

// y = x W^T + b on oneDNN's fp32 inner product (mkldnn::_linear_pointwise, the op Inductor uses
// on CPUs) in forward and for the input gradient. The maths is at::linear's: fp32 inputs, fp32 accumulation
// (oneDNN's default strict fp math mode), only the GEMM kernel differs. On this machine's AMD CPU the
// wheel's MKL runs its generic "zen" AVX2 sgemm, oneDNN its AVX-512 kernels: 1.3-1.8x the GFLOP/s
// at GPT-2's shapes (bench/trainer). Anything else (CUDA, non-fp32, autocast, no oneDNN) takes
// at::linear.
at::Tensor dnnl_linear_pointwise(const at::Tensor& input, const at::Tensor& weight, const std::optional<at::Tensor>& bias) {
  static const auto op =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("mkldnn::_linear_pointwise", "")
          .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&, std::string_view,
                            c10::List<std::optional<at::Scalar>>, std::optional<std::string_view>)>();
  return op.call(input, weight, bias, "none", c10::List<std::optional<at::Scalar>>(), std::nullopt);
}

// dX = dY W: an inner product with W^T as the weight. dW = dY^T X stays on at::mm (the wheel's
// BLAS, as at::linear's backward): as an inner product it needs dY^T and X^T copied contiguous, and
// measured here it is no faster overall (slower for K=256 and for the LM head's 50257 rows).
std::pair<at::Tensor, at::Tensor> dnnl_linear_backward(torch::autograd::AutogradContext* ctx, const at::Tensor& grad) {
  const auto saved = ctx->get_saved_variables();
  const at::Tensor& input = saved[0];
  const at::Tensor& weight = saved[1];
  at::Tensor grad_input, grad_weight;
  if (ctx->needs_input_grad(0)) grad_input = dnnl_linear_pointwise(grad, weight.t(), std::nullopt).view(input.sizes());
  if (ctx->needs_input_grad(1)) grad_weight = at::mm(grad.t(), input.reshape({-1, weight.size(1)}));
  return {grad_input, grad_weight};
}

struct DnnlLinear : public torch::autograd::Function<DnnlLinear> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight,
                            const at::Tensor& bias) {
    ctx->save_for_backward({input, weight});
    return dnnl_linear_pointwise(input, weight, bias);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const at::Tensor grad = grad_outputs[0].reshape({-1, grad_outputs[0].size(-1)});
    auto [grad_input, grad_weight] = dnnl_linear_backward(ctx, grad);
    return {grad_input, grad_weight, ctx->needs_input_grad(2) ? grad.sum(0) : at::Tensor()};
  }
};

// The same without a bias (the tied LM head): a custom Function's inputs must all be defined.
struct DnnlLinearNoBias : public torch::autograd::Function<DnnlLinearNoBias> {
  static at::Tensor forward(torch::autograd::AutogradContext* ctx, const at::Tensor& input, const at::Tensor& weight) {
    ctx->save_for_backward({input, weight});
    return dnnl_linear_pointwise(input, weight, std::nullopt);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    auto [grad_input, grad_weight] = dnnl_linear_backward(ctx, grad_outputs[0].reshape({-1, grad_outputs[0].size(-1)}));
    return {grad_input, grad_weight};
  }
};

// LLMRDZV_DNNL_LINEAR=0 in the environment turns the oneDNN path off (A/B runs, or a suspected
// oneDNN problem).
bool dnnl_applies(const at::Tensor& input, const at::Tensor& weight) {
  static const bool available = [] {
    const char* env = std::getenv("LLMRDZV_DNNL_LINEAR");
    if (env && std::string_view(env) == "0") return false;
    return at::hasMKLDNN() && c10::Dispatcher::singleton().findSchema({"mkldnn::_linear_pointwise", ""}).has_value();
  }();
  return available && input.is_cpu() && weight.is_cpu() && input.scalar_type() == at::kFloat &&
         weight.scalar_type() == at::kFloat && input.dim() >= 2 && !at::autocast::is_autocast_enabled(at::kCPU);
}

torch::Tensor fast_linear(const torch::Tensor& input, const torch::Tensor& weight, const torch::Tensor& bias = {}) {
  if (!dnnl_applies(input, weight)) return at::linear(input, weight, bias.defined() ? std::optional<at::Tensor>(bias) : std::nullopt);
  return bias.defined() ? DnnlLinear::apply(input, weight, bias) : DnnlLinearNoBias::apply(input, weight);
}

torch::Tensor fast_linear(const torch::nn::Linear& linear, const torch::Tensor& input) {
  return fast_linear(input, linear->weight, linear->bias);
}

torch::Tensor activate(const std::string& name, const torch::Tensor& x) {
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return at::gelu(x, "tanh");
  if (name == "gelu") return at::gelu(x);
  if (name == "relu") return at::relu(x);
  return at::silu(x);  // validate() admits nothing else
}

}  // namespace

Gpt2AttentionImpl::Gpt2AttentionImpl(const Gpt2Config& config, std::int64_t layer_idx)
    : n_head_(config.n_head), attn_dropout_(config.attn_pdrop) {
  c_attn = register_module("c_attn", linear(config.n_embd, 3 * config.n_embd));
  c_proj = register_module("c_proj", linear(config.n_embd, config.n_embd));
  resid_dropout_ = register_module("resid_dropout", torch::nn::Dropout(config.resid_pdrop));
  scale_ = config.scale_attn_weights ? 1.0 / std::sqrt(static_cast<double>(config.head_dim())) : 1.0;
  if (config.scale_attn_by_inverse_layer_idx) scale_ /= static_cast<double>(layer_idx + 1);
}

std::vector<torch::Tensor> Gpt2AttentionImpl::heads(const torch::Tensor& hidden) {
  const std::int64_t batch = hidden.size(0), time = hidden.size(1), channels = hidden.size(2);
  std::vector<torch::Tensor> qkv = fast_linear(c_attn, hidden).split(channels, 2);
  for (auto& t : qkv) t = t.view({batch, time, n_head_, channels / n_head_}).transpose(1, 2);
  return qkv;
}

torch::Tensor Gpt2AttentionImpl::project_out(const torch::Tensor& attended) {
  const std::int64_t batch = attended.size(0), time = attended.size(2);
  return resid_dropout_(fast_linear(c_proj, attended.transpose(1, 2).reshape({batch, time, -1})));
}

torch::Tensor Gpt2AttentionImpl::forward(const torch::Tensor& hidden) {
  const std::vector<torch::Tensor> qkv = heads(hidden);
  return project_out(at::scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], std::nullopt,
                                                      is_training() ? attn_dropout_ : 0.0,
                                                      /*is_causal=*/true, scale_));
}

torch::Tensor Gpt2AttentionImpl::forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                                                std::int64_t past) {
  const std::vector<torch::Tensor> qkv = heads(hidden);
  const std::int64_t end = past + hidden.size(1);
  keys.slice(2, past, end).copy_(qkv[1]);
  values.slice(2, past, end).copy_(qkv[2]);
  // The prompt (past 0) needs the causal mask; one new position attends to everything before it.
  return project_out(at::scaled_dot_product_attention(qkv[0], keys.slice(2, 0, end), values.slice(2, 0, end),
                                                      std::nullopt, 0.0, /*is_causal=*/past == 0, scale_));
}

Gpt2MlpImpl::Gpt2MlpImpl(const Gpt2Config& config) : activation_(config.activation_function) {
  c_fc = register_module("c_fc", linear(config.n_embd, config.inner_dim()));
  c_proj = register_module("c_proj", linear(config.inner_dim(), config.n_embd));
  dropout_ = register_module("dropout", torch::nn::Dropout(config.resid_pdrop));
}

torch::Tensor Gpt2MlpImpl::forward(const torch::Tensor& hidden) {
  return dropout_(fast_linear(c_proj, activate(activation_, fast_linear(c_fc, hidden))));
}

Gpt2BlockImpl::Gpt2BlockImpl(const Gpt2Config& config, std::int64_t layer_idx) {
  ln_1 = register_module("ln_1", layer_norm(config));
  attn = register_module("attn", Gpt2Attention(config, layer_idx));
  ln_2 = register_module("ln_2", layer_norm(config));
  mlp = register_module("mlp", Gpt2Mlp(config));
}

torch::Tensor Gpt2BlockImpl::forward(const torch::Tensor& hidden) {
  torch::Tensor x = hidden + attn(ln_1(hidden));
  return x + mlp(ln_2(x));
}

torch::Tensor Gpt2BlockImpl::forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                                            std::int64_t past) {
  torch::Tensor x = hidden + attn->forward_cached(ln_1(hidden), keys, values, past);
  return x + mlp(ln_2(x));
}

Gpt2ModelImpl::Gpt2ModelImpl(const Gpt2Config& config) : n_positions_(config.n_positions) {
  wte = register_module("wte", torch::nn::Embedding(config.vocab_size, config.n_embd));
  wpe = register_module("wpe", torch::nn::Embedding(config.n_positions, config.n_embd));
  drop = register_module("drop", torch::nn::Dropout(config.embd_pdrop));
  h = register_module("h", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < config.n_layer; ++i) h->push_back(Gpt2Block(config, i));
  ln_f = register_module("ln_f", layer_norm(config));
}

torch::Tensor Gpt2ModelImpl::forward(const torch::Tensor& input_ids, bool checkpoint_blocks) {
  const std::int64_t time = input_ids.size(1);
  const torch::Tensor positions = at::arange(time, input_ids.options().dtype(at::kLong));
  torch::Tensor x = drop(wte(input_ids) + wpe(positions));
  for (const auto& module : *h) {
    auto& block = *module->as<Gpt2BlockImpl>();
    x = checkpoint_blocks ? detail::checkpointed_block_forward(block, x) : block.forward(x);
  }
  return ln_f(x);
}

torch::Tensor Gpt2ModelImpl::forward_cached(const torch::Tensor& input_ids, KvCache& cache) {
  const std::int64_t past = cache.length, time = input_ids.size(1);
  const torch::Tensor positions = at::arange(past, past + time, input_ids.options().dtype(at::kLong));
  torch::Tensor x = drop(wte(input_ids) + wpe(positions));
  std::size_t layer = 0;
  for (const auto& module : *h) {
    x = module->as<Gpt2BlockImpl>()->forward_cached(x, cache.keys[layer], cache.values[layer], past);
    ++layer;
  }
  cache.length = past + time;
  return ln_f(x);
}

Gpt2LmHeadModelImpl::Gpt2LmHeadModelImpl(Gpt2Config config, WeightInit init) : config_(std::move(config)) {
  validate(config_, "model config");
  transformer = register_module("transformer", Gpt2Model(config_));
  if (!config_.tie_word_embeddings) {
    lm_head = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(config_.n_embd, config_.vocab_size).bias(false)));
  }
  if (init == WeightInit::hf) init_weights();
}

const torch::Tensor& Gpt2LmHeadModelImpl::head_weight() const {
  return lm_head ? lm_head->weight : transformer->wte->weight;
}

void Gpt2LmHeadModelImpl::init_weights() {
  at::NoGradGuard no_grad;
  const double std = config_.initializer_range;
  const double proj_std = std / std::sqrt(2.0 * static_cast<double>(config_.n_layer));
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    const bool layer_norm = name.find(".ln_") != std::string::npos;
    if (name.ends_with(".bias")) {
      p.zero_();
    } else if (layer_norm) {
      p.fill_(1.0);
    } else if (name.ends_with("c_proj.weight")) {
      p.normal_(0.0, proj_std);
    } else {
      p.normal_(0.0, std);
    }
  }
}

void Gpt2LmHeadModelImpl::check_input_ids(const torch::Tensor& input_ids, std::int64_t past) const {
  if (input_ids.dim() != 2 || input_ids.scalar_type() != at::kLong) {
    throw std::invalid_argument("input_ids must be a 2-D int64 tensor [batch, time]");
  }
  const std::int64_t time = input_ids.size(1);
  if (time < 1 || past + time > config_.n_positions) {
    throw std::invalid_argument("sequence length " + std::to_string(past + time) + " is outside [1, n_positions=" +
                                std::to_string(config_.n_positions) + "]");
  }
  if (input_ids.is_cpu() && input_ids.numel() > 0) {
    const std::int64_t lo = input_ids.min().item<std::int64_t>(), hi = input_ids.max().item<std::int64_t>();
    if (lo < 0 || hi >= config_.vocab_size) {
      throw std::invalid_argument("token id " + std::to_string(lo < 0 ? lo : hi) + " is outside the vocabulary (vocab_size " +
                                  std::to_string(config_.vocab_size) + ")");
    }
  }
}

KvCache Gpt2LmHeadModelImpl::new_cache(std::int64_t batch) const {
  const at::Tensor& like = transformer->wte->weight;
  KvCache cache;
  for (std::int64_t i = 0; i < config_.n_layer; ++i) {
    cache.keys.push_back(at::empty({batch, config_.n_head, config_.n_positions, config_.head_dim()}, like.options()));
    cache.values.push_back(at::empty_like(cache.keys.back()));
  }
  return cache;
}

torch::Tensor Gpt2LmHeadModelImpl::decode(const torch::Tensor& input_ids, KvCache& cache) {
  check_input_ids(input_ids, cache.length);
  if (cache.length > 0 && input_ids.size(1) != 1) {
    throw std::invalid_argument("decode takes one new position at a time once the cache holds the prompt");
  }
  const at::Tensor& weights = transformer->wte->weight;
  const auto layers = static_cast<std::size_t>(config_.n_layer);
  if (cache.keys.size() != layers || cache.values.size() != layers || cache.keys[0].size(0) != input_ids.size(0) ||
      cache.keys[0].device() != weights.device() || cache.keys[0].scalar_type() != weights.scalar_type()) {
    throw std::invalid_argument("the KV cache was made for another model, batch size, device or dtype (new_cache)");
  }
  const torch::Tensor hidden = transformer->forward_cached(input_ids, cache);
  return fast_linear(hidden.select(1, -1), head_weight());
}

CausalLmOutput Gpt2LmHeadModelImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& labels) {
  check_input_ids(input_ids, 0);
  if (labels.defined() && labels.sizes() != input_ids.sizes()) {
    throw std::invalid_argument("labels must have input_ids' shape");
  }
  const bool checkpoint = checkpointing_ && is_training();
  const torch::Tensor hidden = transformer->forward(input_ids, checkpoint);
  CausalLmOutput out;
  out.logits = fast_linear(hidden, head_weight());
  if (labels.defined()) out.loss = causal_lm_loss(out.logits, labels);
  return out;
}

// As transformers' ForCausalLMLoss: the labels move one left with -100 padded in at the end, so the
// logits are used in place ([B*T, V] view) instead of copying logits[:, :-1] (and copying the
// gradient back in backward); the last position of each row is ignored, the mean is the same.
torch::Tensor causal_lm_loss(const torch::Tensor& logits, const torch::Tensor& labels) {
  const std::int64_t time = logits.size(1), vocab = logits.size(2);
  const torch::Tensor shift_labels =
      at::constant_pad_nd(labels.slice(1, 1, time), {0, 1}, -100).reshape({-1}).to(logits.device());
  return at::cross_entropy_loss(logits.to(at::kFloat).reshape({-1, vocab}), shift_labels, std::nullopt,
                                at::Reduction::Mean, /*ignore_index=*/-100);
}

}  // namespace llmrdzv::model
