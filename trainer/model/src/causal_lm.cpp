// What every family shares: the block loop (checkpointed or not), HF's shifted LM loss, input
// checks, KV-cache decoding, and the factory: a DecoderLm of the config family's recipe.
#include "llmrdzv/model/causal_lm.hpp"

#include <ATen/core/grad_mode.h>
#include <ATen/ops/constant_pad_nd.h>
#include <ATen/ops/cross_entropy_loss.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/empty_like.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "backward_trigger.hpp"
#include "block_checkpoint.hpp"
#include "fast_linear.hpp"
#include "linear_cross_entropy.hpp"
#include "family_recipes.hpp"
#include "llmrdzv/model/decoder_lm.hpp"

namespace llmrdzv::model {

CausalLmImpl::CausalLmImpl(ModelConfig config) : config_(std::move(config)) {}

void CausalLmImpl::init_weights() {
  const WeightInitializer init = weight_initializer();
  for (auto& item : named_parameters()) init(item.key(), item.value());
}

void CausalLmImpl::check_input_ids(const torch::Tensor& input_ids, std::int64_t past) const {
  if (input_ids.dim() != 2 || input_ids.scalar_type() != at::kLong) {
    throw std::invalid_argument("input_ids must be a 2-D int64 tensor [batch, time]");
  }
  const std::int64_t time = input_ids.size(1);
  if (time < 1 || past + time > config_.max_positions()) {
    throw std::invalid_argument("sequence length " + std::to_string(past + time) + " is outside [1, " +
                                std::to_string(config_.max_positions()) + "] (the model's positions)");
  }
  if (input_ids.is_cpu() && input_ids.numel() > 0) {
    const std::int64_t lo = input_ids.min().item<std::int64_t>(), hi = input_ids.max().item<std::int64_t>();
    if (lo < 0 || hi >= config_.vocab_size()) {
      throw std::invalid_argument("token id " + std::to_string(lo < 0 ? lo : hi) + " is outside the vocabulary (vocab_size " +
                                  std::to_string(config_.vocab_size()) + ")");
    }
  }
}

bool CausalLmImpl::lookup_gradient_rows_only(const torch::Tensor& weight) const {
  return config_.tie_word_embeddings() && weight.is_cpu() && weight.scalar_type() == at::kFloat && weight.requires_grad() &&
         at::GradMode::is_enabled();
}

torch::Tensor CausalLmImpl::embed_tokens(const torch::nn::Embedding& table, const torch::Tensor& input_ids) const {
  const torch::Tensor& weight = table->weight;
  const bool sparse_gradient = lookup_gradient_rows_only(weight);
  if (sparse_gradient && tied_box_.defined()) {
    return detail::tied_embedding(weight, input_ids, table->options.padding_idx().value_or(-1), tied_box_);
  }
  return at::embedding(weight, input_ids, table->options.padding_idx().value_or(-1), /*scale_grad_by_freq=*/false,
                       sparse_gradient);
}

std::map<const void*, int> CausalLmImpl::parameter_units() const {
  std::map<const void*, int> units;
  for (const auto& p : parameters()) units[p.unsafeGetTensorImpl()] = 0;
  int unit = 1;
  for (const auto& module : *blocks()) {
    for (const auto& p : module->parameters()) units[p.unsafeGetTensorImpl()] = unit;
    ++unit;
  }
  return units;
}

torch::Tensor CausalLmImpl::run_blocks(torch::Tensor hidden) {
  const bool checkpoint = checkpointing_ && is_training();
  int unit = 1;
  for (const auto& module : *blocks()) {
    auto& block = *module->as<DecoderBlockImpl>();
    if (unit_hooks_) unit_hooks_.before_forward(unit);
    hidden = checkpoint ? detail::checkpointed_block_forward(block, hidden) : block.forward(hidden);
    if (unit_hooks_) {
      hidden = detail::before_backward(hidden, [hook = unit_hooks_.before_backward, unit] { hook(unit); });
      unit_hooks_.after_forward(unit);
    }
    ++unit;
  }
  return hidden;
}

// Unit 0's calls around one forward pass (loss() and forward()).
struct CausalLmImpl::OuterUnit {
  explicit OuterUnit(const UnitHooks& hooks) : hooks_(hooks) {
    if (hooks_) hooks_.before_forward(0);
  }
  ~OuterUnit() {
    if (hooks_) hooks_.after_forward(0);
  }
  OuterUnit(const OuterUnit&) = delete;
  OuterUnit& operator=(const OuterUnit&) = delete;

 private:
  const UnitHooks& hooks_;
};

CausalLmOutput CausalLmImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& labels) {
  check_input_ids(input_ids, 0);
  if (labels.defined() && labels.sizes() != input_ids.sizes()) {
    throw std::invalid_argument("labels must have input_ids' shape");
  }
  const OuterUnit outer(unit_hooks_);
  const torch::Tensor hidden = finish(run_blocks(embed(input_ids, 0)));
  CausalLmOutput out;
  out.logits = head(hidden);
  if (labels.defined()) out.loss = causal_lm_loss(out.logits, labels);
  return out;
}

torch::Tensor CausalLmImpl::loss(const torch::Tensor& input_ids, const torch::Tensor& labels) {
  check_input_ids(input_ids, 0);
  if (!labels.defined() || labels.sizes() != input_ids.sizes()) {
    throw std::invalid_argument("labels must have input_ids' shape");
  }
  const OuterUnit outer(unit_hooks_);
  if (!fused_loss()) return causal_lm_loss(head(finish(run_blocks(embed(input_ids, 0)))), labels);
  // A tied head hands its weight gradient to the lookup through this box (embed_tokens).
  tied_box_ = lookup_gradient_rows_only(head_weight()) ? detail::make_tied_box() : torch::Tensor();
  const torch::Tensor box = tied_box_;
  torch::Tensor hidden;
  try {
    hidden = finish(run_blocks(embed(input_ids, 0)));
  } catch (...) {
    tied_box_ = torch::Tensor();
    throw;
  }
  tied_box_ = torch::Tensor();
  return detail::linear_cross_entropy(hidden.reshape({-1, hidden.size(-1)}), head_weight(),
                                      shifted_labels(labels).to(hidden.device()), std::int64_t{1} << 26, box);
}

torch::Tensor CausalLmImpl::head(const torch::Tensor& hidden) { return detail::fast_linear(hidden, head_weight()); }

KvCache CausalLmImpl::new_cache(std::int64_t batch, std::int64_t positions) const {
  const at::Tensor& like = head_weight();
  const CacheShape shape = cache_shape();
  const std::int64_t capacity = positions > 0 ? std::min(positions, config_.max_positions()) : config_.max_positions();
  KvCache cache;
  for (std::int64_t i = 0; i < config_.num_layers(); ++i) {
    cache.keys.push_back(at::empty({batch, shape.kv_heads, capacity, shape.head_dim}, like.options()));
    cache.values.push_back(at::empty_like(cache.keys.back()));
  }
  return cache;
}

torch::Tensor CausalLmImpl::decode(const torch::Tensor& input_ids, KvCache& cache) {
  check_input_ids(input_ids, cache.length);
  if (cache.length > 0 && input_ids.size(1) != 1) {
    throw std::invalid_argument("decode takes one new position at a time once the cache holds the prompt");
  }
  const at::Tensor& weights = head_weight();
  const auto layers = static_cast<std::size_t>(config_.num_layers());
  if (cache.keys.size() != layers || cache.values.size() != layers || cache.keys[0].size(0) != input_ids.size(0) ||
      cache.keys[0].device() != weights.device() || cache.keys[0].scalar_type() != weights.scalar_type()) {
    throw std::invalid_argument("the KV cache was made for another model, batch size, device or dtype (new_cache)");
  }
  if (cache.length + input_ids.size(1) > cache.keys[0].size(2)) {
    throw std::invalid_argument("the KV cache holds " + std::to_string(cache.keys[0].size(2)) + " positions; " +
                                std::to_string(cache.length + input_ids.size(1)) + " do not fit (new_cache's positions)");
  }
  const std::int64_t past = cache.length;
  torch::Tensor hidden = embed(input_ids, past);
  std::size_t layer = 0;
  for (const auto& module : *blocks()) {
    hidden = module->as<DecoderBlockImpl>()->forward_cached(hidden, cache.keys[layer], cache.values[layer], past);
    ++layer;
  }
  cache.length = past + input_ids.size(1);
  return head(finish(hidden).select(1, -1));
}

CausalLm make_causal_lm(const ModelConfig& config, WeightInit init) {
  validate(config, "model config");
  return DecoderLm(config, config.visit([](const auto& c) { return detail::decoder_recipe(c); }), init);
}

// As transformers' ForCausalLMLoss: the labels move one left with -100 padded in at the end, so the
// logits are used in place ([B*T, V] view) instead of copying logits[:, :-1] (and copying the
// gradient back in backward); the last position of each row is ignored, the mean is the same.
torch::Tensor shifted_labels(const torch::Tensor& labels) {
  return at::constant_pad_nd(labels.slice(1, 1, labels.size(1)), {0, 1}, -100).reshape({-1});
}

torch::Tensor causal_lm_loss(const torch::Tensor& logits, const torch::Tensor& labels) {
  return at::cross_entropy_loss(logits.to(at::kFloat).reshape({-1, logits.size(2)}), shifted_labels(labels).to(logits.device()),
                                std::nullopt, at::Reduction::Mean, /*ignore_index=*/-100);
}

}  // namespace llmrdzv::model
