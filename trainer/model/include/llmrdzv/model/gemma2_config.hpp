// The Gemma 2 family's hyper-parameters (transformers' Gemma2Config): Llama's keys (the activation
// named hidden_activation), query_pre_attn_scalar (the softmax scale is its inverse square root),
// attention and final logit soft-capping, and a sliding window on the layers layer_types names
// (by default every other layer from the first). Torch-free.
#pragma once

#include <vector>

#include "llmrdzv/model/llama_config.hpp"

namespace llmrdzv::model {

struct Gemma2Config : LlamaConfig {
  static constexpr std::string_view kModelType = "gemma2";
  std::int64_t query_pre_attn_scalar = 256;
  std::optional<std::int64_t> sliding_window = 4096;
  std::optional<double> final_logit_softcapping = 30.0;
  std::optional<double> attn_logit_softcapping = 50.0;
  std::vector<std::string> layer_types;  // empty: sliding, full, sliding, ... as transformers derives them

  Gemma2Config() {
    vocab_size = 256000;
    hidden_size = 2304;
    intermediate_size = 9216;
    num_hidden_layers = 26;
    num_attention_heads = 8;
    num_key_value_heads = 4;
    head_dim = 256;
    hidden_act = "gelu_pytorch_tanh";
    max_position_embeddings = 8192;
    pad_token_id = 0;
    eos_token_id = {1};
    bos_token_id = 2;
    tie_word_embeddings = true;
  }
  std::vector<std::string> resolved_layer_types() const;
};

void validate(const Gemma2Config& config, std::string_view origin);
double parameter_count(const Gemma2Config& config);
std::string describe_size(const Gemma2Config& config);
void apply_overrides(Gemma2Config& config, std::string_view overrides);

}  // namespace llmrdzv::model
