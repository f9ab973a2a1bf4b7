// The GPT-2 family's hyper-parameters with GPT2Config's key names and defaults (config.json and
// --config_overrides go through model_config.hpp). Torch-free, so flag and config checks do not
// pay for LibTorch headers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "llmrdzv/model/config_error.hpp"
#include "llmrdzv/model/token_ids.hpp"

namespace llmrdzv::model {

struct Gpt2Config {
  static constexpr std::string_view kModelType = "gpt2";
  std::int64_t vocab_size = 50257;
  std::int64_t n_positions = 1024;
  std::int64_t n_embd = 768;
  std::int64_t n_layer = 12;
  std::int64_t n_head = 12;
  std::optional<std::int64_t> n_inner;  // MLP width; HF's null means 4 * n_embd
  // "gelu_new" (tanh approximation, GPT-2's), "gelu_pytorch_tanh", "gelu", "relu", "silu".
  std::string activation_function = "gelu_new";
  double resid_pdrop = 0.1;
  double embd_pdrop = 0.1;
  double attn_pdrop = 0.1;
  double layer_norm_epsilon = 1e-5;
  double initializer_range = 0.02;
  bool scale_attn_weights = true;
  bool scale_attn_by_inverse_layer_idx = false;
  bool tie_word_embeddings = true;
  std::int64_t bos_token_id = 50256;
  TokenIds eos_token_id{50256};  // one id or several (generation stops at any)

  std::int64_t inner_dim() const { return n_inner ? *n_inner : 4 * n_embd; }
  std::int64_t head_dim() const { return n_embd / n_head; }
};

// Throws ConfigError when a value is out of its domain (sizes >= 1, n_embd divisible by n_head,
// dropouts in [0, 1), epsilon > 0, a known activation, token ids inside the vocabulary, at most
// kMaxParameters parameters). `origin` names where the config came from.
void validate(const Gpt2Config& config, std::string_view origin);

// The parameters the config implies (a tied LM head counted once, an untied one apart), in double:
// a config with absurd sizes must be described, not overflow.
double parameter_count(const Gpt2Config& config);
// "n_layer=12, n_embd=768, n_inner=3072, vocab_size=50257, n_positions=1024 imply 1.24e+08
// parameters (0.46 GiB in fp32)": the fields that size a model, for messages.
std::string describe_size(const Gpt2Config& config);

// Applies run_clm.py's --config_overrides: "key=value,key=value" over GPT2Config's keys, each
// value parsed as the key's type. Throws ConfigError naming the bad item (config unchanged), then
// validates.
void apply_overrides(Gpt2Config& config, std::string_view overrides);

}  // namespace llmrdzv::model
