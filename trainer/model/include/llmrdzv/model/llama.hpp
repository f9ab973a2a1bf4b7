// The Llama causal LM (HF's LlamaForCausalLM): model.embed_tokens, model.layers.{i}.self_attn.
// {q,k,v,o}_proj with rotary position embeddings and grouped-query attention
// (num_key_value_heads), mlp.{gate,up,down}_proj (SwiGLU), input_layernorm and
// post_attention_layernorm (RMSNorm), model.norm, and lm_head (untied unless
// tie_word_embeddings=true). No biases unless attention_bias / mlp_bias say so.
#pragma once

#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>

#include "llmrdzv/model/causal_lm.hpp"
#include "llmrdzv/model/llama_config.hpp"

namespace llmrdzv::model {

// HF's LlamaRMSNorm: x / sqrt(mean(x^2) + eps) computed in fp32, cast back, times the weight.
class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(std::int64_t size, double eps);
  torch::Tensor forward(const torch::Tensor& hidden);

  torch::Tensor weight;

 private:
  double eps_;
};
TORCH_MODULE(RmsNorm);

class LlamaAttentionImpl : public torch::nn::Module {
 public:
  explicit LlamaAttentionImpl(const LlamaConfig& config);
  torch::Tensor forward(const torch::Tensor& hidden);
  torch::Tensor forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                               std::int64_t past);

  torch::nn::Linear q_proj{nullptr}, k_proj{nullptr}, v_proj{nullptr}, o_proj{nullptr};

 private:
  struct Rotation {
    torch::Tensor cos, sin;  // [T, head_dim] each, in the activations' type
  };
  // The rotary tables of positions past .. past + T - 1 for activations like `x` ([B, T, ...]).
  Rotation rotation(const torch::Tensor& x, std::int64_t past) const;
  // [B, T, heads * head_dim] -> [B, heads, T, head_dim], rotated when a rotation is given.
  torch::Tensor split_heads(const torch::Tensor& x, const Rotation* rotation) const;
  torch::Tensor merge_heads(const torch::Tensor& attended);

  std::int64_t head_dim_;
  double dropout_;
  bool grouped_;
  torch::Tensor inv_freq_;  // [head_dim / 2], fp32, on the CPU (moved with the positions' device)
};
TORCH_MODULE(LlamaAttention);

class LlamaMlpImpl : public torch::nn::Module {
 public:
  explicit LlamaMlpImpl(const LlamaConfig& config);
  torch::Tensor forward(const torch::Tensor& hidden);

  torch::nn::Linear gate_proj{nullptr}, up_proj{nullptr}, down_proj{nullptr};

 private:
  std::string activation_;
};
TORCH_MODULE(LlamaMlp);

class LlamaDecoderLayerImpl : public DecoderBlockImpl {
 public:
  explicit LlamaDecoderLayerImpl(const LlamaConfig& config);
  torch::Tensor forward(const torch::Tensor& hidden) override;
  torch::Tensor forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                               std::int64_t past) override;

  LlamaAttention self_attn{nullptr};
  LlamaMlp mlp{nullptr};
  RmsNorm input_layernorm{nullptr};
  RmsNorm post_attention_layernorm{nullptr};
};
TORCH_MODULE(LlamaDecoderLayer);

// HF's LlamaModel, registered as "model" (its forward is CausalLmImpl's loop).
class LlamaModelImpl : public torch::nn::Module {
 public:
  explicit LlamaModelImpl(const LlamaConfig& config);

  torch::nn::Embedding embed_tokens{nullptr};
  torch::nn::ModuleList layers{nullptr};
  RmsNorm norm{nullptr};
};
TORCH_MODULE(LlamaModel);

class LlamaForCausalLmImpl : public CausalLmImpl {
 public:
  explicit LlamaForCausalLmImpl(const LlamaConfig& config, WeightInit init = WeightInit::hf);

  // HF's Llama init: Linear and Embedding weights ~ N(0, initializer_range), biases 0, RMSNorm
  // weights 1, the pad_token_id row of embed_tokens 0.
  void init_weights() override;

  std::string_view hf_prefix() const override { return "model."; }
  std::string embedding_name() const override { return "model.embed_tokens.weight"; }
  // The rotary tables some older checkpoints saved (rotary_emb.inv_freq).
  bool hf_ignored(std::string_view name) const override { return name.ends_with("rotary_emb.inv_freq"); }

  LlamaModel model{nullptr};
  torch::nn::Linear lm_head{nullptr};  // only with tie_word_embeddings=false

 protected:
  torch::Tensor embed(const torch::Tensor& input_ids, std::int64_t past) override;
  const torch::nn::ModuleList& blocks() const override { return model->layers; }
  torch::Tensor finish(const torch::Tensor& hidden) override { return model->norm(hidden); }
  const torch::Tensor& head_weight() const override;
  CacheShape cache_shape() const override;
};
TORCH_MODULE(LlamaForCausalLm);

}  // namespace llmrdzv::model
