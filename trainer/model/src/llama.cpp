// The Llama modules: RMSNorm (fused on the CPU, fast_rms_norm.hpp), rotary embeddings computed as
// HF computes them (fp32 angles from position * inv_freq, halves rotated; fused on the CPU,
// fast_rotary.hpp), grouped-query attention through SDPA's enable_gqa, SwiGLU MLP (fused on the
// CPU, fast_swiglu.hpp).
#include "llmrdzv/model/llama.hpp"

#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/outer.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <ATen/ops/where.h>

#include <cmath>
#include <numbers>

#include "fast_linear.hpp"
#include "fast_rms_norm.hpp"
#include "fast_rotary.hpp"
#include "fast_swiglu.hpp"

namespace llmrdzv::model {
namespace {

using detail::activate;
using detail::fast_linear;

torch::nn::Linear linear(std::int64_t in, std::int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

// 1 / theta^(2i / d), in fp32 as HF computes it; "linear" divides it by the factor; "llama3"
// divides the low frequencies (wavelength 2 pi / f over original / low_freq_factor), keeps the high
// ones (under original / high_freq_factor) and blends between, op for op as transformers does, so
// the fp32 results are the same bits.
at::Tensor rope_inverse_frequencies(const LlamaConfig& config, std::int64_t head_dim) {
  const at::Tensor inv_freq =
      1.0 / at::pow(config.rope_theta, at::arange(0, head_dim, 2, at::kFloat) / static_cast<double>(head_dim));
  if (config.rope_type == "linear") return inv_freq / config.rope_factor;
  if (config.rope_type != "llama3") return inv_freq;
  const double factor = config.rope_factor, low = config.rope_low_freq_factor, high = config.rope_high_freq_factor;
  const auto original = static_cast<double>(config.rope_original_max_position_embeddings);
  const at::Tensor wavelength = inv_freq.reciprocal() * (2 * std::numbers::pi);
  const at::Tensor scaled = at::where(wavelength > original / low, inv_freq / factor, inv_freq);
  const at::Tensor smooth = (wavelength.reciprocal() * original - low) / (high - low);
  const at::Tensor blended = (1 - smooth) * scaled / factor + smooth * scaled;
  const at::Tensor medium = at::logical_and(wavelength >= original / high, wavelength <= original / low);
  return at::where(medium, blended, scaled);
}

}  // namespace

RmsNormImpl::RmsNormImpl(std::int64_t size, double eps) : eps_(eps) {
  weight = register_parameter("weight", torch::ones({size}));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& hidden) { return detail::rms_norm(hidden, weight, eps_); }

LlamaAttentionImpl::LlamaAttentionImpl(const LlamaConfig& config)
    : head_dim_(config.head_size()),
      dropout_(config.attention_dropout),
      grouped_(config.kv_heads() != config.num_attention_heads) {
  const std::int64_t h = config.hidden_size, q = config.num_attention_heads * head_dim_, kv = config.kv_heads() * head_dim_;
  q_proj = register_module("q_proj", linear(h, q, config.attention_bias));
  k_proj = register_module("k_proj", linear(h, kv, config.attention_bias));
  v_proj = register_module("v_proj", linear(h, kv, config.attention_bias));
  o_proj = register_module("o_proj", linear(q, h, config.attention_bias));
  inv_freq_ = rope_inverse_frequencies(config, head_dim_);
}

LlamaAttentionImpl::Rotation LlamaAttentionImpl::rotation(const torch::Tensor& x, std::int64_t past) const {
  const torch::Tensor positions = at::arange(past, past + x.size(1), x.options().dtype(at::kFloat));
  const torch::Tensor angles = at::outer(positions, inv_freq_.to(x.device()));
  const torch::Tensor both = at::cat({angles, angles}, -1);  // [T, head_dim]
  return {both.cos().to(x.scalar_type()), both.sin().to(x.scalar_type())};
}

torch::Tensor LlamaAttentionImpl::split_heads(const torch::Tensor& x, const Rotation* rotation) const {
  const torch::Tensor rows = x.view({x.size(0), x.size(1), -1, head_dim_});  // [B, T, heads, head_dim]
  return (rotation ? detail::rotary(rows, rotation->cos, rotation->sin) : rows).transpose(1, 2);
}

torch::Tensor LlamaAttentionImpl::merge_heads(const torch::Tensor& attended) {
  return fast_linear(o_proj, attended.transpose(1, 2).reshape({attended.size(0), attended.size(2), -1}));
}

torch::Tensor LlamaAttentionImpl::forward(const torch::Tensor& hidden) {
  const Rotation rotated = rotation(hidden, 0);
  const torch::Tensor q = split_heads(fast_linear(q_proj, hidden), &rotated);
  const torch::Tensor k = split_heads(fast_linear(k_proj, hidden), &rotated);
  const torch::Tensor v = split_heads(fast_linear(v_proj, hidden), nullptr);
  return merge_heads(at::scaled_dot_product_attention(q, k, v, std::nullopt, is_training() ? dropout_ : 0.0,
                                                      /*is_causal=*/true, 1.0 / std::sqrt(static_cast<double>(head_dim_)),
                                                      grouped_));
}

torch::Tensor LlamaAttentionImpl::forward_cached(const torch::Tensor& hidden, torch::Tensor& keys,
                                                 torch::Tensor& values, std::int64_t past) {
  const std::int64_t end = past + hidden.size(1);
  const Rotation rotated = rotation(hidden, past);
  keys.slice(2, past, end).copy_(split_heads(fast_linear(k_proj, hidden), &rotated));
  values.slice(2, past, end).copy_(split_heads(fast_linear(v_proj, hidden), nullptr));
  const torch::Tensor q = split_heads(fast_linear(q_proj, hidden), &rotated);
  return merge_heads(at::scaled_dot_product_attention(q, keys.slice(2, 0, end), values.slice(2, 0, end), std::nullopt,
                                                      0.0, /*is_causal=*/past == 0,
                                                      1.0 / std::sqrt(static_cast<double>(head_dim_)), grouped_));
}

LlamaMlpImpl::LlamaMlpImpl(const LlamaConfig& config) : activation_(config.hidden_act) {
  gate_proj = register_module("gate_proj", linear(config.hidden_size, config.intermediate_size, config.mlp_bias));
  up_proj = register_module("up_proj", linear(config.hidden_size, config.intermediate_size, config.mlp_bias));
  down_proj = register_module("down_proj", linear(config.intermediate_size, config.hidden_size, config.mlp_bias));
}

torch::Tensor LlamaMlpImpl::forward(const torch::Tensor& hidden) {
  const torch::Tensor gate = fast_linear(gate_proj, hidden), up = fast_linear(up_proj, hidden);
  return fast_linear(down_proj, activation_ == "silu" ? detail::swiglu(gate, up) : activate(activation_, gate) * up);
}

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const LlamaConfig& config) {
  self_attn = register_module("self_attn", LlamaAttention(config));
  mlp = register_module("mlp", LlamaMlp(config));
  input_layernorm = register_module("input_layernorm", RmsNorm(config.hidden_size, config.rms_norm_eps));
  post_attention_layernorm = register_module("post_attention_layernorm", RmsNorm(config.hidden_size, config.rms_norm_eps));
}

torch::Tensor LlamaDecoderLayerImpl::forward(const torch::Tensor& hidden) {
  const torch::Tensor x = hidden + self_attn(input_layernorm(hidden));
  return x + mlp(post_attention_layernorm(x));
}

torch::Tensor LlamaDecoderLayerImpl::forward_cached(const torch::Tensor& hidden, torch::Tensor& keys,
                                                    torch::Tensor& values, std::int64_t past) {
  const torch::Tensor x = hidden + self_attn->forward_cached(input_layernorm(hidden), keys, values, past);
  return x + mlp(post_attention_layernorm(x));
}

LlamaModelImpl::LlamaModelImpl(const LlamaConfig& config) {
  auto tokens = torch::nn::EmbeddingOptions(config.vocab_size, config.hidden_size);
  if (config.pad_token_id) tokens.padding_idx(*config.pad_token_id);
  embed_tokens = register_module("embed_tokens", torch::nn::Embedding(tokens));
  layers = register_module("layers", torch::nn::ModuleList());
  for (std::int64_t i = 0; i < config.num_hidden_layers; ++i) layers->push_back(LlamaDecoderLayer(config));
  norm = register_module("norm", RmsNorm(config.hidden_size, config.rms_norm_eps));
}

LlamaForCausalLmImpl::LlamaForCausalLmImpl(const LlamaConfig& config, WeightInit init) : CausalLmImpl(config) {
  validate(config, "model config");
  model = register_module("model", LlamaModel(config));
  if (!config.tie_word_embeddings) lm_head = register_module("lm_head", linear(config.hidden_size, config.vocab_size, false));
  if (init == WeightInit::hf) init_weights();
}

torch::Tensor LlamaForCausalLmImpl::embed(const torch::Tensor& input_ids, std::int64_t /*past*/) {
  return embed_tokens(model->embed_tokens, input_ids);  // positions enter through the rotary embeddings
}

const torch::Tensor& LlamaForCausalLmImpl::head_weight() const {
  return lm_head ? lm_head->weight : model->embed_tokens->weight;
}

CausalLmImpl::CacheShape LlamaForCausalLmImpl::cache_shape() const {
  const LlamaConfig& c = config().as<LlamaConfig>();
  return {c.kv_heads(), c.head_size()};
}

void LlamaForCausalLmImpl::init_weights() {
  at::NoGradGuard no_grad;
  const LlamaConfig& c = config().as<LlamaConfig>();
  for (auto& item : named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    if (name.ends_with(".bias")) p.zero_();
    else if (name.ends_with("layernorm.weight") || name == "model.norm.weight") p.fill_(1.0);
    else p.normal_(0.0, c.initializer_range);
  }
  if (c.pad_token_id) model->embed_tokens->weight[*c.pad_token_id].zero_();
}

}  // namespace llmrdzv::model
