// The model around the layers: token embeddings (projected, scaled, plus learned positions where
// the recipe says), the final norm and projection, the tied or untied head, HF's initialisation,
// and which HF tensors are stored transposed or carry no weights.
#include <ATen/ops/arange.h>
#include <ATen/ops/scalar_tensor.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>

#include "fast_dropout.hpp"
#include "fast_linear.hpp"
#include "llmrdzv/kernel_support/tensor_storage.hpp"
#include "llmrdzv/model/decoder_lm.hpp"
#include "module_paths.hpp"

namespace llmrdzv::model {

using detail::fast_linear;
using detail::register_at;

DecoderLmImpl::DecoderLmImpl(ModelConfig config, DecoderRecipe recipe, WeightInit init)
    : CausalLmImpl(std::move(config)), recipe_(std::make_shared<const DecoderRecipe>(std::move(recipe))) {
  const DecoderRecipe& r = *recipe_;
  const DecoderNames& n = r.names;
  prefix_ = n.layers.substr(0, n.layers.find('.') + 1);
  auto tokens = torch::nn::EmbeddingOptions(r.vocab_size, r.embed_dim);
  if (r.padding_idx) tokens.padding_idx(*r.padding_idx);
  tokens_ = register_at(*this, n.embed_tokens, torch::nn::Embedding(tokens));
  if (r.learned_positions) {
    positions_ = register_at(*this, n.embed_positions, torch::nn::Embedding(r.max_positions + r.position_offset, r.hidden_size));
  }
  if (r.embed_dim != r.hidden_size) {
    const auto projection = [](std::int64_t in, std::int64_t out) {
      return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(false));
    };
    project_out_ = register_at(*this, n.project_out, projection(r.hidden_size, r.embed_dim));
    project_in_ = register_at(*this, n.project_in, projection(r.embed_dim, r.hidden_size));
  }
  embedding_dropout_ = register_module("embedding_dropout", torch::nn::Dropout(r.embedding_dropout));
  // Deferred: each part's bytes go as soon as it is made: the embeddings (and projections) once
  // made, each block after it, the final norm and an untied head at the end; so at most the
  // embeddings or the head, or one block, exist at once.
  const auto made = [init](const torch::nn::Module& part) {
    if (init != WeightInit::deferred) return;
    for (const auto& p : part.parameters()) kernel_support::release_storage(p);
  };
  made(*this);
  layers_ = register_at(*this, n.layers, torch::nn::ModuleList());
  for (std::int64_t i = 0; i < r.num_layers; ++i) {
    layers_->push_back(DecoderLayer(recipe_, i));
    made(*layers_[static_cast<std::size_t>(i)]);
  }
  if (r.final_norm) final_norm_ = detail::make_norm(*this, r, n.final_norm, r.hidden_size);
  if (!r.tied_head) {
    lm_head_ = register_at(*this, n.lm_head, torch::nn::Linear(torch::nn::LinearOptions(r.embed_dim, r.vocab_size).bias(false)));
  }
  made(*this);
  if (init == WeightInit::hf) init_weights();
}

torch::Tensor DecoderLmImpl::embed(const torch::Tensor& input_ids, std::int64_t past) {
  const DecoderRecipe& r = *recipe_;
  torch::Tensor x = embed_tokens(tokens_, input_ids);
  if (project_in_) x = fast_linear(project_in_, x);
  // sqrt(hidden) as an fp32 tensor cast to the activations' type, as HF's embed_scale buffer is.
  if (r.scale_embeddings) {
    x = x * at::scalar_tensor(std::sqrt(static_cast<double>(r.hidden_size)), x.options().dtype(at::kFloat)).to(x.scalar_type());
  }
  if (positions_) {
    const std::int64_t first = past + r.position_offset;
    x = x + positions_(at::arange(first, first + input_ids.size(1), input_ids.options().dtype(at::kLong)));
  }
  return detail::fast_dropout(embedding_dropout_, x);
}

torch::Tensor DecoderLmImpl::finish(const torch::Tensor& hidden) {
  const torch::Tensor x = final_norm_ ? final_norm_(hidden) : hidden;
  return project_out_ ? fast_linear(project_out_, x) : x;
}

const torch::Tensor& DecoderLmImpl::head_weight() const { return lm_head_ ? lm_head_->weight : tokens_->weight; }

torch::Tensor DecoderLmImpl::head(const torch::Tensor& hidden) {
  const torch::Tensor logits = fast_linear(hidden, head_weight());
  if (!recipe_->final_softcap) return logits;
  const double cap = *recipe_->final_softcap;
  return (logits / cap).tanh() * cap;
}

bool DecoderLmImpl::hf_transposed(std::string_view name) const {
  for (const std::string& suffix : recipe_->names.transposed) {
    if (name.ends_with(suffix)) return true;
  }
  return false;
}

bool DecoderLmImpl::hf_ignored(std::string_view name) const {
  for (const std::string& suffix : recipe_->names.ignored) {
    if (name.ends_with(suffix)) return true;
  }
  return false;
}

WeightInitializer DecoderLmImpl::weight_initializer() const {
  // (named_modules() without self: a constructor's `this` is no shared_ptr yet.)
  auto norms = std::make_shared<std::set<std::string>>();
  for (const auto& item : named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
    if (!item.value()->as<torch::nn::LayerNorm>() && !item.value()->as<RmsNorm>()) continue;
    for (const auto& p : item.value()->named_parameters(/*recurse=*/false)) norms->insert(item.key() + "." + p.key());
  }
  const double output_std = recipe_->init_std / std::sqrt(2.0 * static_cast<double>(recipe_->num_layers));
  const std::string embedding = embedding_name();
  return [recipe = recipe_, norms, output_std, embedding](const std::string& name, const at::Tensor& p) {
    const DecoderRecipe& r = *recipe;
    at::NoGradGuard no_grad;
    const auto output_projection = [&] {
      for (const std::string* part : {&r.names.o, &r.names.fc_out, &r.names.down}) {
        if (!part->empty() && name.ends_with("." + *part + ".weight")) return true;
      }
      return false;
    };
    if (name.ends_with(".bias")) p.zero_();
    else if (norms->contains(name)) p.fill_(r.norm == NormKind::rms_norm_one_plus ? 0.0 : 1.0);
    else if (r.scaled_output_init && output_projection()) p.normal_(0.0, output_std);
    else p.normal_(0.0, r.init_std);
    if (r.padding_idx && name == embedding) p[*r.padding_idx].zero_();
  };
}

}  // namespace llmrdzv::model
