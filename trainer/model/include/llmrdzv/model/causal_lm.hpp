// The interface every model family implements (GPT-2, OPT, Llama): a decoder-only causal LM as a
// LibTorch module whose parameter names are Hugging Face's, so named_parameters() maps one-to-one
// onto HF state dicts. The shared parts live here once: the LM loss, input checks, activation
// checkpointing of the blocks, and KV-cache decoding; a family supplies its embeddings, its
// blocks, its final norm and LM head, its initialisation and the quirks of its HF checkpoints.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/modulelist.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/pimpl.h>

#include <concepts>
#include <map>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "llmrdzv/model/model_config.hpp"

namespace llmrdzv::model {

// The keys and values of the positions decoded so far, for generating one token at a time
// (CausalLmImpl::decode). One [B, kv_heads, max_positions, head_dim] buffer each per layer.
struct KvCache {
  std::vector<torch::Tensor> keys, values;
  std::int64_t length = 0;  // positions held
};

struct CausalLmOutput {
  torch::Tensor logits;  // [B, T, vocab_size], fp32 unless autocast says otherwise
  torch::Tensor loss;    // scalar; undefined when no labels were given
};

// How a new model's weights start: HF's initialisation (init_weights), or left as torch's modules
// make them when weights are loaded right after (skips a normal_ pass over every parameter:
// 0.7 s of a 124M model's 3 s load here), or without values at all: `deferred` lets go of each
// block's parameter bytes as soon as the block is made (kernel_support/tensor_storage.hpp), so
// that a model larger than one process's memory can be built; the parameters keep their shapes
// and the fp32 type, and nothing may run the model until an engine that shards it (ZeRO-3) has
// filled them unit by unit (weight_initializer() or loaded weights). torch's modules draw from the
// global RNG while they are made, in every mode, so HF's initialisation after a deferred build
// draws the same numbers as init_weights() does after a full one.
enum class WeightInit { hf, for_loading, deferred };

// HF's initialisation of one parameter, by its name in the model (named_parameters()).
using WeightInitializer = std::function<void(const std::string& name, const at::Tensor& values)>;

// Calls around the model's parameter units, for an engine that keeps each unit's parameters
// sharded across ranks and gathers them only while they are used (ZeRO-3). Unit 0 is every
// parameter outside the blocks (embeddings, final norm, LM head), unit i + 1 block i
// (CausalLmImpl::parameter_units). before_forward(u) comes before anything reads u's parameters in
// a forward pass (training, evaluation, recomputation excepted: it runs inside backward, after
// before_backward); after_forward(u) once the forward pass no longer reads them (unit 0: at the end
// of the pass); before_backward(b) before the autograd graph of block b's forward runs backward
// (before its recomputation under activation checkpointing). Unset: nothing is called.
struct UnitHooks {
  std::function<void(int unit)> before_forward, after_forward, before_backward;
  explicit operator bool() const { return static_cast<bool>(before_forward); }
};

// One transformer block: [B, T, C] -> [B, T, C] for positions 0..T-1, and the same for positions
// past..past+T-1 with the keys and values going into (and attention reading) the cache buffers.
class DecoderBlockImpl : public torch::nn::Module {
 public:
  virtual torch::Tensor forward(const torch::Tensor& hidden) = 0;
  virtual torch::Tensor forward_cached(const torch::Tensor& hidden, torch::Tensor& keys, torch::Tensor& values,
                                       std::int64_t past) = 0;
};

class CausalLmImpl : public torch::nn::Module {
 public:
  // input_ids [B, T] int64 with T <= max_positions and ids < vocab_size (checked;
  // std::invalid_argument). labels, when defined, has input_ids' shape; the loss is HF's:
  // logits[:, :-1] against labels[:, 1:], mean cross-entropy over the positions whose label is
  // not -100.
  CausalLmOutput forward(const torch::Tensor& input_ids, const torch::Tensor& labels = {});
  // forward()'s loss without the logits, for training and evaluation: the LM head and the
  // cross-entropy run fused a chunk of positions at a time, so the [B, T, vocab] logits never
  // exist at once, and backward reuses the gradients forward already made.
  torch::Tensor loss(const torch::Tensor& input_ids, const torch::Tensor& labels);

  // Incremental decoding (for generation; use under no_grad in eval mode): runs input_ids [B, T]
  // at positions cache.length.., adds their keys and values to the cache, and returns the logits
  // of the last position only, [B, vocab_size]. The same numbers as forward() on the whole
  // sequence, without recomputing the cached positions. T > 1 only on an empty cache (the
  // prompt); the cache holds at most the positions it was made for (std::invalid_argument beyond).
  torch::Tensor decode(const torch::Tensor& input_ids, KvCache& cache);
  // An empty cache for `batch` sequences of up to `positions` positions (capped at the model's
  // max_positions; 0 = all of them), on the model's device and dtype. Its memory is
  // layers x 2 x batch x positions x kv_heads x head_dim elements: size it to the prompt plus
  // the tokens to generate, not the context (a 7B Llama-2's full 4096 positions take 2 GiB in bf16).
  KvCache new_cache(std::int64_t batch, std::int64_t positions = 0) const;

  // The family's HF initialisation (normal(0, its std) for weights, zero biases, unit norms, ...)
  // of every parameter in model order: weight_initializer() on each. Uses the global torch RNG.
  void init_weights();
  // The same initialisation for one parameter at a time, into any fp32 tensor of its shape (a
  // deferred model's values, filled unit by unit): the same draws when called in model order.
  virtual WeightInitializer weight_initializer() const = 0;

  // Activation checkpointing: recompute each block in backward (RNG state restored, so dropout
  // masks match and gradients equal the non-checkpointed ones).
  void set_activation_checkpointing(bool enabled) { checkpointing_ = enabled; }
  bool activation_checkpointing() const { return checkpointing_; }

  const ModelConfig& config() const { return config_; }

  // Which unit (UnitHooks) each parameter belongs to, by its TensorImpl: 0 outside the blocks,
  // i + 1 in block i; set_unit_hooks installs the calls (an empty UnitHooks removes them).
  std::map<const void*, int> parameter_units() const;
  void set_unit_hooks(UnitHooks hooks) { unit_hooks_ = std::move(hooks); }

  // How the family's HF checkpoints name and lay out tensors:
  // - the prefix of the base model ("transformer." for GPT-2, "model." otherwise), which
  //   checkpoints of the base model alone leave out;
  virtual std::string_view hf_prefix() const = 0;
  // - the token embedding, which a tied LM head reuses ("transformer.wte.weight", ...);
  virtual std::string embedding_name() const = 0;
  // - weights stored transposed ([in, out]: GPT-2's Conv1D);
  virtual bool hf_transposed(std::string_view /*name*/) const { return false; }
  // - buffers of old checkpoints that carry no weights (attention masks, rotary tables).
  virtual bool hf_ignored(std::string_view /*name*/) const { return false; }

 protected:
  explicit CausalLmImpl(ModelConfig config);

  // input_ids at positions past.. -> the hidden states entering the first block, [B, T, C].
  virtual torch::Tensor embed(const torch::Tensor& input_ids, std::int64_t past) = 0;
  // The token embedding's lookup, for embed(). Where the head is tied to it (fp32 on the CPU) the
  // lookup's gradient is the batch's rows only, never a zeroed dense [vocab, width] table: inside
  // loss() they are added in place into the fused head's dense gradient (tied_embedding in
  // linear_cross_entropy.hpp), elsewhere they form a sparse gradient. The weight's .grad stays dense.
  torch::Tensor embed_tokens(const torch::nn::Embedding& table, const torch::Tensor& input_ids) const;
  virtual const torch::nn::ModuleList& blocks() const = 0;  // of DecoderBlockImpl
  // The last block's output -> the LM head's input (final norm, projection).
  virtual torch::Tensor finish(const torch::Tensor& hidden) = 0;
  // [vocab_size, head input width]: lm_head.weight, or the token embedding when tied.
  virtual const torch::Tensor& head_weight() const = 0;
  // The LM head's logits of finish()'s output: the product with head_weight(), capped where the
  // family caps them (then fused_loss() is false: loss() takes the logits, as forward does).
  virtual torch::Tensor head(const torch::Tensor& hidden);
  virtual bool fused_loss() const { return true; }
  struct CacheShape {
    std::int64_t kv_heads, head_dim;
  };
  virtual CacheShape cache_shape() const = 0;

 private:
  struct OuterUnit;  // unit 0's hooks around a forward pass
  // 2-D int64 ids within the vocabulary, positions past.. within max_positions.
  void check_input_ids(const torch::Tensor& input_ids, std::int64_t past) const;
  torch::Tensor run_blocks(torch::Tensor hidden);
  // Whether the lookup of a tied `weight` gives a gradient of the batch's rows (see embed_tokens).
  bool lookup_gradient_rows_only(const torch::Tensor& weight) const;

  ModelConfig config_;
  bool checkpointing_ = false;
  UnitHooks unit_hooks_;
  // Set by loss() while it runs its forward on a tied head: what joins the fused loss to the lookup.
  torch::Tensor tied_box_;
};

// A model of any family, shared like the modules it holds.
// (No inherited constructors: ModuleHolder's forwarding one would try to construct the abstract
// CausalLmImpl from a family's model.)
class CausalLm : public torch::nn::ModuleHolder<CausalLmImpl> {
 public:
  CausalLm(std::nullptr_t) : ModuleHolder(nullptr) {}
  CausalLm(std::shared_ptr<CausalLmImpl> model) : ModuleHolder(std::move(model)) {}
  template <typename Family>
    requires std::derived_from<Family, CausalLmImpl>
  CausalLm(const torch::nn::ModuleHolder<Family>& model) : ModuleHolder(std::shared_ptr<CausalLmImpl>(model.ptr())) {}
};

// A new model of the config's family.
CausalLm make_causal_lm(const ModelConfig& config, WeightInit init = WeightInit::hf);

// HF's loss on already computed logits (exposed for evaluation code and tests).
torch::Tensor causal_lm_loss(const torch::Tensor& logits, const torch::Tensor& labels);
// labels [B, T] moved one left with -100 padded in at the end, flattened to [B*T]: the targets of
// every position (the last one of each row ignored).
torch::Tensor shifted_labels(const torch::Tensor& labels);

}  // namespace llmrdzv::model
