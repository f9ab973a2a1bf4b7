// The GPT-2 modules: attention via fused scaled-dot-product attention, GELU-tanh MLP, pre-LN
// blocks, learned positions, tied (or untied) LM head, HF initialisation and checkpoint layout.
#include "llmrdzv/model/gpt2.hpp"

#include <ATen/ops/arange.h>
#include <ATen/ops/scaled_dot_product_attention.h>

#include <cmath>
#include <utility>

#include "fast_dropout.hpp"
#include "fast_layer_norm.hpp"
#include "fast_linear.hpp"

namespace llmrdzv::model {
namespace {

using detail::linear_activate;
using detail::fast_dropout;
using detail::fast_linear;

torch::nn::Linear linear(std::int64_t in, std::int64_t out) { return torch::nn::Linear(torch::nn::LinearOptions(in, out)); }

torch::nn::LayerNorm new_layer_norm(const Gpt2Config& c) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({c.n_embd}).eps(c.layer_norm_epsilon));
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
  return fast_dropout(resid_dropout_, fast_linear(c_proj, attended.transpose(1, 2).reshape({batch, time, -1})));
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
  return fast_dropout(dropout_, fast_linear(c_proj, linear_activate(c_fc, activation_, hidden)));
}

Gpt2BlockImpl::Gpt2BlockImpl(const Gpt2Config& config, std::int64_t layer_idx) {
  ln_1 = register_module("ln_1", new_layer_norm(config));
  attn = register_module("attn", Gpt2Attention(config, layer_idx));
  ln_2 = register_module("ln_2", new_layer_norm(config));
  mlp = register_module("mlp", Gpt2Mlp(config));
}

// x = hidden + attention; x + mlp(ln_2(x)), the first add fused with ln_2 on a GPU. That kernel's
// backward reads x as saved: x must not be changed in place afterwards (autograd would refuse).
torch::Tensor Gpt2BlockImpl::finish_block(const torch::Tensor& hidden, const torch::Tensor& attended) {
  const auto [x, normed] = detail::add_layer_norm(ln_2, hidden, attended);
  return x + mlp(normed);
}

torch::Tensor Gpt2BlockImpl::forward(const torch::Tensor& hidden) {
  return finish_block(hidden, attn(detail::layer_norm(ln_1, hidden)));
}

torch::Tensor Gpt2BlockImpl::forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                                            std::int64_t past) {
  return finish_block(hidden, attn->forward_cached(detail::layer_norm(ln_1, hidden), keys, values, past));
}

Gpt2ModelImpl::Gpt2ModelImpl(const Gpt2Config& config) {
  wte = register_module("wte", torch::nn::Embedding(config.vocab_size, config.n_embd));
  wpe = register_module("wpe", torch::nn::Embedding(config.n_positions, config.n_embd));
  drop = register_module("drop", torch::nn::Dropout(config.embd_pdrop));
  h = register_module("h", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < config.n_layer; ++i) h->push_back(Gpt2Block(config, i));
  ln_f = register_module("ln_f", new_layer_norm(config));
}

Gpt2LmHeadModelImpl::Gpt2LmHeadModelImpl(const Gpt2Config& config, WeightInit init) : CausalLmImpl(config) {
  validate(config, "model config");
  transformer = register_module("transformer", Gpt2Model(config));
  if (!config.tie_word_embeddings) {
    lm_head = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(config.n_embd, config.vocab_size).bias(false)));
  }
  if (init == WeightInit::hf) init_weights();
}

torch::Tensor Gpt2LmHeadModelImpl::embed(const torch::Tensor& input_ids, std::int64_t past) {
  const torch::Tensor positions = at::arange(past, past + input_ids.size(1), input_ids.options().dtype(at::kLong));
  return fast_dropout(transformer->drop, embed_tokens(transformer->wte, input_ids) + transformer->wpe(positions));
}

torch::Tensor Gpt2LmHeadModelImpl::finish(const torch::Tensor& hidden) { return detail::layer_norm(transformer->ln_f, hidden); }

const torch::Tensor& Gpt2LmHeadModelImpl::head_weight() const {
  return lm_head ? lm_head->weight : transformer->wte->weight;
}

CausalLmImpl::CacheShape Gpt2LmHeadModelImpl::cache_shape() const {
  const Gpt2Config& c = config().as<Gpt2Config>();
  return {c.n_head, c.head_dim()};
}

// HF stores these as Conv1D, [in, out]: the transpose of torch Linear's [out, in].
bool Gpt2LmHeadModelImpl::hf_transposed(std::string_view name) const {
  return name.ends_with("attn.c_attn.weight") || name.ends_with("attn.c_proj.weight") ||
         name.ends_with("mlp.c_fc.weight") || name.ends_with("mlp.c_proj.weight");
}

// The causal-mask buffers of old checkpoints.
bool Gpt2LmHeadModelImpl::hf_ignored(std::string_view name) const {
  return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias");
}

void Gpt2LmHeadModelImpl::init_weights() {
  at::NoGradGuard no_grad;
  const Gpt2Config& c = config().as<Gpt2Config>();
  const double std = c.initializer_range;
  const double proj_std = std / std::sqrt(2.0 * static_cast<double>(c.n_layer));
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

}  // namespace llmrdzv::model
