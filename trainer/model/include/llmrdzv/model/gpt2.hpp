// The GPT-2 causal LM as LibTorch modules whose parameter names are Hugging Face's
// (transformer.wte, transformer.h.{i}.attn.c_attn, ..., transformer.ln_f), so named_parameters()
// maps one-to-one onto HF state dicts. Linear weights are torch's [out, in] (HF's Conv1D stores
// [in, out]; llmrdzv::io transposes on load/save). The LM head is tied to transformer.wte (GPT-2's
// default, no parameter of its own) unless the config says tie_word_embeddings=false: then it is
// lm_head.weight [vocab_size, n_embd], a parameter like the others, as in HF.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>
#include <torch/nn/pimpl.h>

#include <vector>

#include "llmrdzv/model/gpt2_config.hpp"

namespace llmrdzv::model {

// The keys and values of the positions decoded so far, for generating one token at a time
// (Gpt2LmHeadModelImpl::decode). One [B, n_head, n_positions, head_dim] buffer each per layer.
struct KvCache {
  std::vector<torch::Tensor> keys, values;
  std::int64_t length = 0;  // positions held
};

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
class Gpt2BlockImpl : public torch::nn::Module {
 public:
  Gpt2BlockImpl(const Gpt2Config& config, std::int64_t layer_idx);
  torch::Tensor forward(const torch::Tensor& hidden);
  torch::Tensor forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                               std::int64_t past);

  torch::nn::LayerNorm ln_1{nullptr};
  Gpt2Attention attn{nullptr};
  torch::nn::LayerNorm ln_2{nullptr};
  Gpt2Mlp mlp{nullptr};
};
TORCH_MODULE(Gpt2Block);

// HF's GPT2Model: the module registered as "transformer".
class Gpt2ModelImpl : public torch::nn::Module {
 public:
  explicit Gpt2ModelImpl(const Gpt2Config& config);
  // input_ids [B, T] (int64) -> final hidden states [B, T, C]. With checkpointing on and grad
  // enabled, each block's activations are recomputed in backward instead of stored.
  torch::Tensor forward(const torch::Tensor& input_ids, bool checkpoint_blocks);
  // input_ids at positions cache.length..; appends to the cache.
  torch::Tensor forward_cached(const torch::Tensor& input_ids, KvCache& cache);

  torch::nn::Embedding wte{nullptr};
  torch::nn::Embedding wpe{nullptr};
  torch::nn::Dropout drop{nullptr};
  torch::nn::ModuleList h{nullptr};
  torch::nn::LayerNorm ln_f{nullptr};

 private:
  std::int64_t n_positions_;
};
TORCH_MODULE(Gpt2Model);

struct CausalLmOutput {
  torch::Tensor logits;  // [B, T, vocab_size], fp32 unless autocast says otherwise
  torch::Tensor loss;    // scalar; undefined when no labels were given
};

// How a new model's weights start: HF's initialisation (init_weights), or left as torch's modules
// make them when weights are loaded right after (skips a normal_ pass over every parameter:
// 0.7 s of a 124M model's 3 s load here).
enum class WeightInit { hf, for_loading };

class Gpt2LmHeadModelImpl : public torch::nn::Module {
 public:
  explicit Gpt2LmHeadModelImpl(Gpt2Config config, WeightInit init = WeightInit::hf);

  // input_ids [B, T] int64 with T <= n_positions and ids < vocab_size (checked; std::invalid_argument).
  // labels, when defined, has input_ids' shape; the loss is HF's: logits[:, :-1] against
  // labels[:, 1:], mean cross-entropy over the positions whose label is not -100.
  CausalLmOutput forward(const torch::Tensor& input_ids, const torch::Tensor& labels = {});

  // Incremental decoding (for generation; use under no_grad in eval mode): runs input_ids [B, T]
  // at positions cache.length.., adds their keys and values to the cache, and returns the logits
  // of the last position only, [B, vocab_size]. The same numbers as forward() on the whole
  // sequence, without recomputing the cached positions. T > 1 only on an empty cache (the
  // prompt); the cache holds at most n_positions (std::invalid_argument beyond).
  torch::Tensor decode(const torch::Tensor& input_ids, KvCache& cache);
  // An empty cache for `batch` sequences, on the model's device and dtype.
  KvCache new_cache(std::int64_t batch) const;

  // HF GPT-2 init: Linear/Embedding weights ~ N(0, initializer_range), biases 0, LayerNorm 1/0,
  // and c_proj weights ~ N(0, initializer_range / sqrt(2 * n_layer)). Uses the global torch RNG.
  void init_weights();

  // Activation checkpointing: recompute each block in backward (RNG state restored, so dropout
  // masks match and gradients equal the non-checkpointed ones).
  void set_activation_checkpointing(bool enabled) { checkpointing_ = enabled; }
  bool activation_checkpointing() const { return checkpointing_; }

  const Gpt2Config& config() const { return config_; }

  Gpt2Model transformer{nullptr};
  torch::nn::Linear lm_head{nullptr};  // only with tie_word_embeddings=false

 private:
  // 2-D int64 ids within the vocabulary, positions past.. within n_positions.
  void check_input_ids(const torch::Tensor& input_ids, std::int64_t past) const;
  // The LM head's weight [vocab_size, n_embd]: lm_head.weight, or transformer.wte.weight when tied.
  const torch::Tensor& head_weight() const;

  Gpt2Config config_;
  bool checkpointing_ = false;
};
TORCH_MODULE(Gpt2LmHeadModel);

// HF's loss on already computed logits (exposed for evaluation code and tests).
torch::Tensor causal_lm_loss(const torch::Tensor& logits, const torch::Tensor& labels);

}  // namespace llmrdzv::model
