// The GPT-2 causal LM (HF's GPT2LMHeadModel): transformer.wte, transformer.h.{i}.attn.c_attn, ...,
// transformer.ln_f. Linear weights are torch's [out, in] (HF's Conv1D stores [in, out]; the HF
// loader transposes, see hf_transposed). The LM head is tied to transformer.wte (GPT-2's default,
// no parameter of its own) unless the config says tie_word_embeddings=false: then it is
// lm_head.weight [vocab_size, n_embd], a parameter like the others, as in HF.
#pragma once

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <vector>

#include "llmrdzv/model/causal_lm.hpp"
#include "llmrdzv/model/gpt2_config.hpp"

namespace llmrdzv::model {

// Causal self-attention through at::scaled_dot_product_attention(is_causal=true).
class Gpt2AttentionImpl : public torch::nn::Module {
 public:
  Gpt2AttentionImpl(const Gpt2Config& config, std::int64_t layer_idx);
  torch::Tensor forward(const torch::Tensor& hidden);  // [B, T, C] -> [B, T, C]
  // The same for positions past.. past+T-1: their keys and values go into the cache buffers, and
  // attention covers every cached position. T > 1 only with past = 0.
  torch::Tensor forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                               std::int64_t past);

  torch::nn::Linear c_attn{nullptr};  // C -> 3C (q, k, v)
  torch::nn::Linear c_proj{nullptr};  // C -> C

 private:
  std::vector<torch::Tensor> heads(const torch::Tensor& hidden);  // q, k, v as [B, n_head, T, head_dim]
  torch::Tensor project_out(const torch::Tensor& attended);        // [B, n_head, T, head_dim] -> [B, T, C]

  std::int64_t n_head_;
  double attn_dropout_;
  double scale_;
  torch::nn::Dropout resid_dropout_{nullptr};
};
TORCH_MODULE(Gpt2Attention);

class Gpt2MlpImpl : public torch::nn::Module {
 public:
  explicit Gpt2MlpImpl(const Gpt2Config& config);
  torch::Tensor forward(const torch::Tensor& hidden);

  torch::nn::Linear c_fc{nullptr};    // C -> inner
  torch::nn::Linear c_proj{nullptr};  // inner -> C

 private:
  std::string activation_;
  torch::nn::Dropout dropout_{nullptr};
};
TORCH_MODULE(Gpt2Mlp);

// Pre-LayerNorm block: x + attn(ln_1(x)), then x + mlp(ln_2(x)).
class Gpt2BlockImpl : public DecoderBlockImpl {
 public:
  Gpt2BlockImpl(const Gpt2Config& config, std::int64_t layer_idx);
  torch::Tensor forward(const torch::Tensor& hidden) override;
  torch::Tensor forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                               std::int64_t past) override;

  torch::nn::LayerNorm ln_1{nullptr};
  Gpt2Attention attn{nullptr};
  torch::nn::LayerNorm ln_2{nullptr};
  Gpt2Mlp mlp{nullptr};

 private:
  torch::Tensor finish_block(const torch::Tensor& hidden, const torch::Tensor& attended);
};
TORCH_MODULE(Gpt2Block);

// HF's GPT2Model: the module registered as "transformer" (its forward is CausalLmImpl's loop).
class Gpt2ModelImpl : public torch::nn::Module {
 public:
  explicit Gpt2ModelImpl(const Gpt2Config& config);

  torch::nn::Embedding wte{nullptr};
  torch::nn::Embedding wpe{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};
};
TORCH_MODULE(Gpt2Model);

class Gpt2LmHeadModelImpl : public CausalLmImpl {
 public:
  explicit Gpt2LmHeadModelImpl(const Gpt2Config& config, WeightInit init = WeightInit::hf);

  // HF GPT-2 init: Linear/Embedding weights ~ N(0, initializer_range), biases 0, LayerNorm 1/0,
  // and c_proj weights ~ N(0, initializer_range / sqrt(2 * n_layer)).
  void init_weights() override;

  std::string_view hf_prefix() const override { return "transformer."; }
  std::string embedding_name() const override { return "transformer.wte.weight"; }
  bool hf_transposed(std::string_view name) const override;
  bool hf_ignored(std::string_view name) const override;

  Gpt2Model transformer{nullptr};
  torch::nn::Linear lm_head{nullptr};  // only with tie_word_embeddings=false

 protected:
  torch::Tensor embed(const torch::Tensor& input_ids, std::int64_t past) override;
  const torch::nn::ModuleList& blocks() const override { return transformer->h; }
  torch::Tensor finish(const torch::Tensor& hidden) override;
  const torch::Tensor& head_weight() const override;
  CacheShape cache_shape() const override;
};
TORCH_MODULE(Gpt2LmHeadModel);

}  // namespace llmrdzv::model
