// The one implementation of decoder_recipe.hpp's choices: every family's model is a DecoderLm
// made from its recipe. Its parameters are registered at the recipe's HF names (dotted paths; the
// modules between are plain containers), so named_parameters() maps one-to-one onto HF state dicts.
// Each choice runs through the trainer's kernels where it has them: fused LayerNorm (with the
// residual add) on GPUs, fused RMSNorm, rotary and SwiGLU on CPUs, fast_linear everywhere.
#pragma once

#include <torch/nn/modules/dropout.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <memory>
#include <utility>

#include "llmrdzv/model/causal_lm.hpp"
#include "llmrdzv/model/decoder_recipe.hpp"

namespace llmrdzv::model {

// HF's LlamaRMSNorm (weight times the fp32 norm cast back), or with one_plus Gemma's (the fp32 norm
// times 1 + weight, cast back).
class RmsNormImpl : public torch::nn::Module {
 public:
  RmsNormImpl(std::int64_t size, double eps, bool one_plus = false);
  torch::Tensor forward(const torch::Tensor& hidden);

  torch::Tensor weight;

 private:
  double eps_;
  bool one_plus_;
};
TORCH_MODULE(RmsNorm);

// A norm of the recipe's kind (or none): LayerNorm or RMSNorm.
struct Norm {
  torch::nn::LayerNorm layer{nullptr};
  RmsNorm rms{nullptr};

  explicit operator bool() const { return layer || rms; }
  torch::Tensor operator()(const torch::Tensor& x) const;
  // {x + delta, norm(x + delta)}, one kernel each way for LayerNorm on a GPU.
  std::pair<torch::Tensor, torch::Tensor> add(const torch::Tensor& x, const torch::Tensor& delta) const;
};

namespace detail {
// Registers a norm of the recipe's kind at the dotted `path` below `owner` (none for an empty path).
Norm make_norm(torch::nn::Module& owner, const DecoderRecipe& recipe, const std::string& path, std::int64_t size);
}  // namespace detail

class DecoderLayerImpl : public DecoderBlockImpl {
 public:
  DecoderLayerImpl(std::shared_ptr<const DecoderRecipe> recipe, std::int64_t index);
  torch::Tensor forward(const torch::Tensor& hidden) override;
  torch::Tensor forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                               std::int64_t past) override;

 private:
  // The block around attention (`attended` maps attention's input to its output), by placement.
  template <typename Attend>
  torch::Tensor block(const torch::Tensor& hidden, Attend&& attended);
  // q, k, v as [B, heads, T, head_dim] for positions past.., q and k normed and rotated.
  struct Heads {
    torch::Tensor q, k, v;
  };
  Heads heads(const torch::Tensor& x, std::int64_t past);
  // softmax(q k^T scale, masked causally and to the window) v for queries at positions past..,
  // keys at 0.., then the output projection.
  torch::Tensor attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v, std::int64_t past);
  torch::Tensor mlp(const torch::Tensor& x);

  std::shared_ptr<const DecoderRecipe> recipe_;
  LayerChoice choice_;
  torch::nn::Linear qkv_{nullptr}, q_{nullptr}, k_{nullptr}, v_{nullptr}, o_{nullptr};
  torch::nn::Linear fc_in_{nullptr}, fc_out_{nullptr}, gate_{nullptr}, up_{nullptr}, down_{nullptr}, gate_up_{nullptr};
  Norm attention_norm_, mlp_norm_, attention_out_norm_, mlp_out_norm_;
  RmsNorm q_norm_{nullptr}, k_norm_{nullptr};
  torch::nn::Dropout residual_dropout_{nullptr};
  torch::Tensor inv_freq_;  // [head_dim / 2], fp32, on the CPU (moved with the positions' device)
};
TORCH_MODULE(DecoderLayer);

class DecoderLmImpl : public CausalLmImpl {
 public:
  DecoderLmImpl(ModelConfig config, DecoderRecipe recipe, WeightInit init = WeightInit::hf);

  WeightInitializer weight_initializer() const override;

  std::string_view hf_prefix() const override { return prefix_; }
  std::string embedding_name() const override { return recipe_->names.embed_tokens + ".weight"; }
  bool hf_transposed(std::string_view name) const override;
  bool hf_ignored(std::string_view name) const override;

  const DecoderRecipe& recipe() const { return *recipe_; }

 protected:
  torch::Tensor embed(const torch::Tensor& input_ids, std::int64_t past) override;
  const torch::nn::ModuleList& blocks() const override { return layers_; }
  torch::Tensor finish(const torch::Tensor& hidden) override;
  const torch::Tensor& head_weight() const override;
  torch::Tensor head(const torch::Tensor& hidden) override;
  bool fused_loss() const override { return !recipe_->final_softcap; }
  CacheShape cache_shape() const override { return {recipe_->kv_heads, recipe_->head_dim}; }

 private:
  std::shared_ptr<const DecoderRecipe> recipe_;
  std::string prefix_;
  torch::nn::Embedding tokens_{nullptr}, positions_{nullptr};
  torch::nn::Linear project_in_{nullptr}, project_out_{nullptr}, lm_head_{nullptr};
  torch::nn::Dropout embedding_dropout_{nullptr};
  torch::nn::ModuleList layers_{nullptr};
  Norm final_norm_;
};
TORCH_MODULE(DecoderLm);

}  // namespace llmrdzv::model
