// The OPT modules: attention with the query scaled before the product (as OPT does), pre- or
// post-LN blocks, learned positions offset by 2, the optional embedding projections.
#include "llmrdzv/model/opt.hpp"

#include <ATen/ops/arange.h>
#include <ATen/ops/scaled_dot_product_attention.h>

#include <cmath>

#include "fast_dropout.hpp"
#include "fast_layer_norm.hpp"
#include "fast_linear.hpp"

namespace llmrdzv::model {
namespace {

using detail::linear_activate;
using detail::fast_dropout;
using detail::fast_linear;

torch::nn::Linear linear(std::int64_t in, std::int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

torch::nn::LayerNorm new_layer_norm(const OptConfig& c) {
  return torch::nn::LayerNorm(
      torch::nn::LayerNormOptions({c.hidden_size}).elementwise_affine(c.layer_norm_elementwise_affine));
}

}  // namespace

OptAttentionImpl::OptAttentionImpl(const OptConfig& config)
    : heads_(config.num_attention_heads),
      scale_(1.0 / std::sqrt(static_cast<double>(config.head_dim()))),
      dropout_(config.attention_dropout) {
  const std::int64_t h = config.hidden_size;
  k_proj = register_module("k_proj", linear(h, h, config.enable_bias));
  v_proj = register_module("v_proj", linear(h, h, config.enable_bias));
  q_proj = register_module("q_proj", linear(h, h, config.enable_bias));
  out_proj = register_module("out_proj", linear(h, h, config.enable_bias));
}

torch::Tensor OptAttentionImpl::split_heads(const torch::Tensor& x) const {
  return x.view({x.size(0), x.size(1), heads_, -1}).transpose(1, 2);
}

torch::Tensor OptAttentionImpl::merge_heads(const torch::Tensor& attended) {
  return fast_linear(out_proj, attended.transpose(1, 2).reshape({attended.size(0), attended.size(2), -1}));
}

// OPT scales the query before the product and attends with scale 1, in HF's order of operations.
torch::Tensor OptAttentionImpl::forward(const torch::Tensor& hidden) {
  const torch::Tensor q = split_heads(fast_linear(q_proj, hidden) * scale_);
  return merge_heads(at::scaled_dot_product_attention(q, split_heads(fast_linear(k_proj, hidden)),
                                                      split_heads(fast_linear(v_proj, hidden)), std::nullopt,
                                                      is_training() ? dropout_ : 0.0, /*is_causal=*/true, 1.0));
}

torch::Tensor OptAttentionImpl::forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                                               std::int64_t past) {
  const std::int64_t end = past + hidden.size(1);
  keys.slice(2, past, end).copy_(split_heads(fast_linear(k_proj, hidden)));
  values.slice(2, past, end).copy_(split_heads(fast_linear(v_proj, hidden)));
  const torch::Tensor q = split_heads(fast_linear(q_proj, hidden) * scale_);
  return merge_heads(at::scaled_dot_product_attention(q, keys.slice(2, 0, end), values.slice(2, 0, end), std::nullopt,
                                                      0.0, /*is_causal=*/past == 0, 1.0));
}

OptDecoderLayerImpl::OptDecoderLayerImpl(const OptConfig& config)
    : norm_before_(config.do_layer_norm_before), activation_(config.activation_function) {
  self_attn = register_module("self_attn", OptAttention(config));
  self_attn_layer_norm = register_module("self_attn_layer_norm", new_layer_norm(config));
  fc1 = register_module("fc1", linear(config.hidden_size, config.ffn_dim, config.enable_bias));
  fc2 = register_module("fc2", linear(config.ffn_dim, config.hidden_size, config.enable_bias));
  final_layer_norm = register_module("final_layer_norm", new_layer_norm(config));
  dropout_ = register_module("dropout", torch::nn::Dropout(config.dropout));
}

torch::Tensor OptDecoderLayerImpl::attention_input(const torch::Tensor& hidden) {
  return norm_before_ ? detail::layer_norm(self_attn_layer_norm, hidden) : hidden;
}

// Each residual add and the LayerNorm after it are one add_layer_norm (one kernel on a GPU): pre-LN
// keeps the sum as the residual stream and feeds the norm to the MLP; post-LN (OPT-350m) keeps only
// the norm.
torch::Tensor OptDecoderLayerImpl::after_attention(const torch::Tensor& hidden, const torch::Tensor& attended) {
  const auto mlp = [&](const torch::Tensor& input) {
    return fast_dropout(dropout_, fast_linear(fc2, linear_activate(fc1, activation_, input)));
  };
  if (norm_before_) {
    const auto [x, normed] = detail::add_layer_norm(final_layer_norm, hidden, fast_dropout(dropout_, attended));
    return x + mlp(normed);
  }
  const torch::Tensor x = detail::add_layer_norm(self_attn_layer_norm, hidden, fast_dropout(dropout_, attended)).second;
  return detail::add_layer_norm(final_layer_norm, x, mlp(x)).second;
}

torch::Tensor OptDecoderLayerImpl::forward(const torch::Tensor& hidden) {
  return after_attention(hidden, self_attn(attention_input(hidden)));
}

torch::Tensor OptDecoderLayerImpl::forward_cached(const torch::Tensor& hidden, torch::Tensor& keys,
                                                  torch::Tensor& values, std::int64_t past) {
  return after_attention(hidden, self_attn->forward_cached(attention_input(hidden), keys, values, past));
}

OptDecoderImpl::OptDecoderImpl(const OptConfig& config) {
  auto tokens = torch::nn::EmbeddingOptions(config.vocab_size, config.embed_dim());
  if (config.pad_token_id) tokens.padding_idx(*config.pad_token_id);
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(tokens));
  embed_positions = register_module(
      "embed_positions", torch::nn::Embedding(config.max_position_embeddings + OptConfig::kPositionOffset, config.hidden_size));
  if (config.embed_dim() != config.hidden_size) {
    project_out = register_module("project_out", linear(config.hidden_size, config.embed_dim(), false));
    project_in = register_module("project_in", linear(config.embed_dim(), config.hidden_size, false));
  }
  if (config.has_final_layer_norm()) final_layer_norm = register_module("final_layer_norm", new_layer_norm(config));
  layers = register_module("layers", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < config.num_hidden_layers; ++i) layers->push_back(OptDecoderLayer(config));
}

OptModelImpl::OptModelImpl(const OptConfig& config) { decoder = register_module("decoder", OptDecoder(config)); }

OptForCausalLmImpl::OptForCausalLmImpl(const OptConfig& config, WeightInit init) : CausalLmImpl(config) {
  validate(config, "model config");
  model = register_module("model", OptModel(config));
  if (!config.tie_word_embeddings) lm_head = register_module("lm_head", linear(config.embed_dim(), config.vocab_size, false));
  if (init == WeightInit::hf) init_weights();
}

// Every position is real (no padding in training blocks), so HF's positions from the attention
// mask are 0..T-1, looked up at row position + 2.
torch::Tensor OptForCausalLmImpl::embed(const torch::Tensor& input_ids, std::int64_t past) {
  OptDecoderImpl& decoder = *model->decoder;
  const torch::Tensor positions =
      at::arange(past + OptConfig::kPositionOffset, past + OptConfig::kPositionOffset + input_ids.size(1),
                 input_ids.options().dtype(at::kLong));
  torch::Tensor tokens = embed_tokens(decoder.embed_tokens, input_ids);
  if (decoder.project_in) tokens = fast_linear(decoder.project_in, tokens);
  return tokens + decoder.embed_positions(positions);
}

torch::Tensor OptForCausalLmImpl::finish(const torch::Tensor& hidden) {
  OptDecoderImpl& decoder = *model->decoder;
  torch::Tensor x = decoder.final_layer_norm ? detail::layer_norm(decoder.final_layer_norm, hidden) : hidden;
  return decoder.project_out ? fast_linear(decoder.project_out, x) : x;
}

const torch::Tensor& OptForCausalLmImpl::head_weight() const {
  return lm_head ? lm_head->weight : model->decoder->embed_tokens->weight;
}

CausalLmImpl::CacheShape OptForCausalLmImpl::cache_shape() const {
  const OptConfig& c = config().as<OptConfig>();
  return {c.num_attention_heads, c.head_dim()};
}

void OptForCausalLmImpl::init_weights() {
  at::NoGradGuard no_grad;
  const OptConfig& c = config().as<OptConfig>();
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    if (name.ends_with(".bias")) p.zero_();
    else if (name.find("layer_norm") != std::string::npos) p.fill_(1.0);
    else p.normal_(0.0, c.init_std);
  }
  if (c.pad_token_id) model->decoder->embed_tokens->weight[*c.pad_token_id].zero_();
}

}  // namespace llmrdzv::model
