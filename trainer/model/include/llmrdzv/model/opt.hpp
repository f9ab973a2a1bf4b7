// The OPT causal LM (HF's OPTForCausalLM): model.decoder.embed_tokens, embed_positions (learned,
// offset by 2), project_in/project_out where word_embed_proj_dim differs from hidden_size
// (opt-350m), layers.{i}.self_attn.{q,k,v,out}_proj, fc1/fc2 with ReLU, pre- or post-LayerNorm
// blocks (do_layer_norm_before), final_layer_norm; the LM head tied to embed_tokens unless
// tie_word_embeddings=false (lm_head.weight).
#pragma once

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include "llmrdzv/model/causal_lm.hpp"
#include "llmrdzv/model/opt_config.hpp"

namespace llmrdzv::model {

class OptAttentionImpl : public torch::nn::Module {
 public:
  explicit OptAttentionImpl(const OptConfig& config);
  torch::Tensor forward(const torch::Tensor& hidden);
  torch::Tensor forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                               std::int64_t past);

  torch::nn::Linear k_proj{nullptr}, v_proj{nullptr}, q_proj{nullptr}, out_proj{nullptr};

 private:
  // [B, T, C] -> [B, heads, T, head_dim]
  torch::Tensor split_heads(const torch::Tensor& x) const;
  torch::Tensor merge_heads(const torch::Tensor& attended);

  std::int64_t heads_;
  double scale_;
  double dropout_;
};
TORCH_MODULE(OptAttention);

class OptDecoderLayerImpl : public DecoderBlockImpl {
 public:
  explicit OptDecoderLayerImpl(const OptConfig& config);
  torch::Tensor forward(const torch::Tensor& hidden) override;
  torch::Tensor forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                               std::int64_t past) override;

  OptAttention self_attn{nullptr};
  torch::nn::LayerNorm self_attn_layer_norm{nullptr};
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
  torch::nn::LayerNorm final_layer_norm{nullptr};

 private:
  // The block around its attention: what attention sees (normed first in pre-LN blocks), then
  // the residual, the post-LN norm and the MLP part with its own residual.
  torch::Tensor attention_input(const torch::Tensor& hidden);
  torch::Tensor after_attention(const torch::Tensor& hidden, const torch::Tensor& attended);

  bool norm_before_;
  std::string activation_;
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(OptDecoderLayer);

// HF's OPTDecoder, registered as model.decoder (its forward is CausalLmImpl's loop).
class OptDecoderImpl : public torch::nn::Module {
 public:
  explicit OptDecoderImpl(const OptConfig& config);

  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::Embedding embed_positions{nullptr};
  torch::nn::Linear project_out{nullptr};  // only when word_embed_proj_dim != hidden_size
  torch::nn::Linear project_in{nullptr};
  torch::nn::LayerNorm final_layer_norm{nullptr};  // only for pre-LN models
  torch::nn::ModuleList layers{nullptr};
};
TORCH_MODULE(OptDecoder);

class OptModelImpl : public torch::nn::Module {
 public:
  explicit OptModelImpl(const OptConfig& config);
  OptDecoder decoder{nullptr};
};
TORCH_MODULE(OptModel);

class OptForCausalLmImpl : public CausalLmImpl {
 public:
  explicit OptForCausalLmImpl(const OptConfig& config, WeightInit init = WeightInit::hf);

  // HF's OPT init: Linear and Embedding weights ~ N(0, init_std), biases 0, LayerNorm 1/0, the
  // pad_token_id row of embed_tokens 0.
  void init_weights() override;

  std::string_view hf_prefix() const override { return "model."; }
  std::string embedding_name() const override { return "model.decoder.embed_tokens.weight"; }

  OptModel model{nullptr};
  torch::nn::Linear lm_head{nullptr};  // only with tie_word_embeddings=false

 protected:
  torch::Tensor embed(const torch::Tensor& input_ids, std::int64_t past) override;
  const torch::nn::ModuleList& blocks() const override { return model->decoder->layers; }
  torch::Tensor finish(const torch::Tensor& hidden) override;
  const torch::Tensor& head_weight() const override;
  CacheShape cache_shape() const override;
};
TORCH_MODULE(OptForCausalLm);

}  // namespace llmrdzv::model
