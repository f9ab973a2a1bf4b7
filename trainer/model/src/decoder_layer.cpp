// One decoder layer of any recipe: the norms by kind and placement, attention (fused or separate
// projections, biases, per-head q/k RMSNorm, rotary positions computed as HF computes them, grouped
// key/value heads, a sliding window as a banded causal mask, logit soft-capping) and the MLP by kind.
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/dropout.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/outer.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/where.h>

#include <cmath>
#include <limits>
#include <numbers>

#include "fast_dropout.hpp"
#include "fast_layer_norm.hpp"
#include "fast_linear.hpp"
#include "fast_rms_norm.hpp"
#include "fast_rotary.hpp"
#include "fast_swiglu.hpp"
#include "llmrdzv/model/decoder_lm.hpp"
#include "module_paths.hpp"

namespace llmrdzv::model {
namespace {

using detail::fast_dropout;
using detail::fast_linear;
using detail::make_norm;
using detail::register_at;

torch::nn::Linear linear(std::int64_t in, std::int64_t out, bool bias) {
  return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias));
}

// 1 / theta^(2i / d), in fp32 as HF computes it; "linear" divides it by the factor; "llama3"
// divides the low frequencies (wavelength 2 pi / f over original / low_freq_factor), keeps the high
// ones (under original / high_freq_factor) and blends between, op for op as transformers does, so
// the fp32 results are the same bits.
at::Tensor rope_inverse_frequencies(const RopeChoice& rope, std::int64_t head_dim) {
  const at::Tensor inv_freq =
      1.0 / at::pow(rope.theta, at::arange(0, head_dim, 2, at::kFloat) / static_cast<double>(head_dim));
  if (rope.type == "linear") return inv_freq / rope.factor;
  if (rope.type != "llama3") return inv_freq;
  const double factor = rope.factor, low = rope.low_freq_factor, high = rope.high_freq_factor;
  const auto original = static_cast<double>(rope.original_max_positions);
  const at::Tensor wavelength = inv_freq.reciprocal() * (2 * std::numbers::pi);
  const at::Tensor scaled = at::where(wavelength > original / low, inv_freq / factor, inv_freq);
  const at::Tensor smooth = (wavelength.reciprocal() * original - low) / (high - low);
  const at::Tensor blended = (1 - smooth) * scaled / factor + smooth * scaled;
  const at::Tensor medium = at::logical_and(wavelength >= original / high, wavelength <= original / low);
  return at::where(medium, blended, scaled);
}

// Queries at positions past..past+T-1 see keys 0..q (causal), and with a window only the `window`
// positions up to q: a [T, keys] boolean mask (true: attend).
at::Tensor attention_mask(std::optional<std::int64_t> window, std::int64_t past, std::int64_t time, std::int64_t keys,
                          const at::Device& device) {
  const at::Tensor q = at::arange(past, past + time, at::TensorOptions(at::kLong).device(device)).unsqueeze(1);
  const at::Tensor k = at::arange(0, keys, at::TensorOptions(at::kLong).device(device)).unsqueeze(0);
  const at::Tensor causal = k <= q;
  return window ? at::logical_and(causal, k > q - *window) : causal;
}

}  // namespace

namespace detail {

// Registers a norm of the recipe's kind at `path` (nothing for an empty path).
Norm make_norm(torch::nn::Module& owner, const DecoderRecipe& r, const std::string& path, std::int64_t size) {
  Norm norm;
  if (path.empty()) return norm;
  if (r.norm == NormKind::layer_norm) {
    const auto options = torch::nn::LayerNormOptions({size}).eps(r.norm_eps).elementwise_affine(r.norm_affine);
    norm.layer = register_at(owner, path, torch::nn::LayerNorm(options));
  } else {
    norm.rms = register_at(owner, path, RmsNorm(size, r.norm_eps, r.norm == NormKind::rms_norm_one_plus));
  }
  return norm;
}

}  // namespace detail

RmsNormImpl::RmsNormImpl(std::int64_t size, double eps, bool one_plus) : eps_(eps), one_plus_(one_plus) {
  weight = register_parameter("weight", one_plus ? torch::zeros({size}) : torch::ones({size}));
}

// Gemma's (1 + weight) multiplies the fp32 norm before the cast back: the same as RMSNorm with the
// weight 1 + weight where the activations are fp32 (then the fused kernel serves both).
torch::Tensor RmsNormImpl::forward(const torch::Tensor& hidden) {
  if (!one_plus_) return detail::rms_norm(hidden, weight, eps_);
  if (hidden.scalar_type() == at::kFloat) return detail::rms_norm(hidden, weight.to(at::kFloat) + 1.0, eps_);
  return detail::rms_norm(hidden.to(at::kFloat), weight.to(at::kFloat) + 1.0, eps_).to(hidden.scalar_type());
}

torch::Tensor Norm::operator()(const torch::Tensor& x) const {
  return layer ? detail::layer_norm(layer, x) : rms.ptr()->forward(x);
}

std::pair<torch::Tensor, torch::Tensor> Norm::add(const torch::Tensor& x, const torch::Tensor& delta) const {
  if (layer) return detail::add_layer_norm(layer, x, delta);
  torch::Tensor sum = x + delta;
  torch::Tensor normed = rms.ptr()->forward(sum);
  return {std::move(sum), std::move(normed)};
}

DecoderLayerImpl::DecoderLayerImpl(std::shared_ptr<const DecoderRecipe> recipe, std::int64_t index)
    : recipe_(std::move(recipe)), choice_(recipe_->layers.at(static_cast<std::size_t>(index))) {
  const DecoderRecipe& r = *recipe_;
  const DecoderNames& n = r.names;
  const std::int64_t h = r.hidden_size, q = r.heads * r.head_dim, kv = r.kv_heads * r.head_dim;
  if (r.placement != NormPlacement::post) attention_norm_ = make_norm(*this, r, n.attention_norm, h);
  if (!n.qkv.empty()) {
    qkv_ = register_at(*this, n.qkv, linear(h, q + 2 * kv, r.q_bias));
  } else {
    q_ = register_at(*this, n.q, linear(h, q, r.q_bias));
    k_ = register_at(*this, n.k, linear(h, kv, r.k_bias));
    v_ = register_at(*this, n.v, linear(h, kv, r.v_bias));
  }
  o_ = register_at(*this, n.o, linear(q, h, r.o_bias));
  if (r.qk_norm) {
    const bool one_plus = r.norm == NormKind::rms_norm_one_plus;
    q_norm_ = register_at(*this, n.q_norm, RmsNorm(r.head_dim, r.norm_eps, one_plus));
    k_norm_ = register_at(*this, n.k_norm, RmsNorm(r.head_dim, r.norm_eps, one_plus));
  }
  if (r.placement == NormPlacement::post) attention_norm_ = make_norm(*this, r, n.attention_norm, h);
  if (r.placement == NormPlacement::sandwich) attention_out_norm_ = make_norm(*this, r, n.attention_out_norm, h);
  if (r.placement != NormPlacement::post) mlp_norm_ = make_norm(*this, r, n.mlp_norm, h);
  switch (r.mlp) {
    case MlpKind::plain:
      fc_in_ = register_at(*this, n.fc_in, linear(h, r.intermediate_size, r.mlp_bias));
      fc_out_ = register_at(*this, n.fc_out, linear(r.intermediate_size, h, r.mlp_bias));
      break;
    case MlpKind::gated:
      gate_ = register_at(*this, n.gate, linear(h, r.intermediate_size, r.mlp_bias));
      up_ = register_at(*this, n.up, linear(h, r.intermediate_size, r.mlp_bias));
      down_ = register_at(*this, n.down, linear(r.intermediate_size, h, r.mlp_bias));
      break;
    case MlpKind::fused_gated:
      gate_up_ = register_at(*this, n.gate_up, linear(h, 2 * r.intermediate_size, r.mlp_bias));
      down_ = register_at(*this, n.down, linear(r.intermediate_size, h, r.mlp_bias));
      break;
  }
  if (r.placement == NormPlacement::post) mlp_norm_ = make_norm(*this, r, n.mlp_norm, h);
  if (r.placement == NormPlacement::sandwich) mlp_out_norm_ = make_norm(*this, r, n.mlp_out_norm, h);
  residual_dropout_ = register_module("residual_dropout", torch::nn::Dropout(r.residual_dropout));
  if (!r.learned_positions) inv_freq_ = rope_inverse_frequencies(choice_.rope.value_or(r.rope), r.head_dim);
}

DecoderLayerImpl::Heads DecoderLayerImpl::heads(const torch::Tensor& x, std::int64_t past) {
  const DecoderRecipe& r = *recipe_;
  const std::int64_t batch = x.size(0), time = x.size(1);
  torch::Tensor q, k, v;
  if (qkv_) {
    const std::vector<torch::Tensor> parts =
        fast_linear(qkv_, x).split_with_sizes({r.heads * r.head_dim, r.kv_heads * r.head_dim, r.kv_heads * r.head_dim}, 2);
    q = parts[0], k = parts[1], v = parts[2];
  } else {
    q = fast_linear(q_, x), k = fast_linear(k_, x), v = fast_linear(v_, x);
  }
  if (r.scale_query_first) q = q * choice_.attention_scale;
  q = q.view({batch, time, r.heads, r.head_dim});
  k = k.view({batch, time, r.kv_heads, r.head_dim});
  v = v.view({batch, time, r.kv_heads, r.head_dim});
  if (q_norm_) {
    q = q_norm_(q);
    k = k_norm_(k);
  }
  if (inv_freq_.defined()) {
    const torch::Tensor positions = at::arange(past, past + time, x.options().dtype(at::kFloat));
    const torch::Tensor angles = at::outer(positions, inv_freq_.to(x.device()));
    const torch::Tensor both = at::cat({angles, angles}, -1);  // [T, head_dim]
    const torch::Tensor cos = both.cos().to(x.scalar_type()), sin = both.sin().to(x.scalar_type());
    q = detail::rotary(q, cos, sin);
    k = detail::rotary(k, cos, sin);
  }
  return {q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)};
}

torch::Tensor DecoderLayerImpl::attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                          std::int64_t past) {
  const DecoderRecipe& r = *recipe_;
  const std::int64_t batch = q.size(0), time = q.size(2), keys = k.size(2);
  const double scale = r.scale_query_first ? 1.0 : choice_.attention_scale;
  const double dropout = is_training() ? r.attention_dropout : 0.0;
  const bool grouped = r.kv_heads != r.heads;
  // A window shorter than the keys needs a banded mask; SDPA's causal flag serves the rest.
  const bool banded = choice_.sliding_window && keys > *choice_.sliding_window;
  std::optional<at::Tensor> mask;
  if (banded || r.attention_softcap) {
    mask = attention_mask(banded ? choice_.sliding_window : std::nullopt, past, time, keys, q.device());
  }
  torch::Tensor attended;
  if (r.attention_softcap) {
    // Eager attention as HF's (SDPA cannot cap the scores): fp32 softmax, cast back.
    const std::int64_t groups = r.heads / r.kv_heads;
    const torch::Tensor keys_all = grouped ? k.repeat_interleave(groups, 1) : k;
    const torch::Tensor values_all = grouped ? v.repeat_interleave(groups, 1) : v;
    const double cap = *r.attention_softcap;
    torch::Tensor scores = at::matmul(q, keys_all.transpose(2, 3)) * scale;
    scores = (scores / cap).tanh() * cap;
    scores = scores.masked_fill(mask->logical_not(), -std::numeric_limits<double>::infinity());
    const torch::Tensor probabilities = at::dropout(at::softmax(scores, -1, at::kFloat).to(q.scalar_type()), dropout, is_training());
    attended = at::matmul(probabilities, values_all);
  } else {
    attended = at::scaled_dot_product_attention(q, k, v, mask, dropout, /*is_causal=*/!mask && past == 0, scale, grouped);
  }
  return fast_dropout(residual_dropout_, fast_linear(o_, attended.transpose(1, 2).reshape({batch, time, -1})));
}

torch::Tensor DecoderLayerImpl::mlp(const torch::Tensor& x) {
  const DecoderRecipe& r = *recipe_;
  torch::Tensor out;
  if (r.mlp == MlpKind::plain) {
    out = fast_linear(fc_out_, detail::linear_activate(fc_in_, r.activation, x));
  } else {
    torch::Tensor gate, up;
    if (gate_up_) {
      const std::vector<torch::Tensor> halves = fast_linear(gate_up_, x).chunk(2, -1);
      gate = halves[0], up = halves[1];
    } else {
      gate = fast_linear(gate_, x), up = fast_linear(up_, x);
    }
    out = fast_linear(down_, r.activation == "silu" ? detail::swiglu(gate, up) : detail::activate(r.activation, gate) * up);
  }
  return fast_dropout(residual_dropout_, out);
}

template <typename Attend>
torch::Tensor DecoderLayerImpl::block(const torch::Tensor& hidden, Attend&& attend) {
  switch (recipe_->placement) {
    case NormPlacement::pre: {
      // The residual add and the norm after it in one (one kernel each way for LayerNorm on a GPU);
      // that kernel's backward reads x as saved: x must not change in place afterwards.
      const auto [x, normed] = mlp_norm_.add(hidden, attend(attention_norm_(hidden)));
      return x + mlp(normed);
    }
    case NormPlacement::post: {
      const torch::Tensor x = attention_norm_.add(hidden, attend(hidden)).second;
      return mlp_norm_.add(x, mlp(x)).second;
    }
    case NormPlacement::sandwich: {
      const torch::Tensor x = hidden + attention_out_norm_(attend(attention_norm_(hidden)));
      return x + mlp_out_norm_(mlp(mlp_norm_(x)));
    }
  }
  return hidden;
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& hidden) {
  return block(hidden, [&](const torch::Tensor& x) {
    const Heads h = heads(x, 0);
    return attention(h.q, h.k, h.v, 0);
  });
}

torch::Tensor DecoderLayerImpl::forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                                               std::int64_t past) {
  return block(hidden, [&](const torch::Tensor& x) {
    const Heads h = heads(x, past);
    const std::int64_t end = past + x.size(1);
    keys.slice(2, past, end).copy_(h.k);
    values.slice(2, past, end).copy_(h.v);
    return attention(h.q, keys.slice(2, 0, end), values.slice(2, 0, end), past);
  });
}

}  // namespace llmrdzv::model
