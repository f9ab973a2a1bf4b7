// The OPT family's hyper-parameters with transformers' OPTConfig key names and defaults
// (config.json and --config_overrides go through model_config.hpp). Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "llmrdzv/model/config_error.hpp"
#include "llmrdzv/model/token_ids.hpp"

namespace llmrdzv::model {

struct OptConfig {
  static constexpr std::string_view kModelType = "opt";
  std::int64_t vocab_size = 50272;
  std::int64_t hidden_size = 768;
  std::int64_t num_hidden_layers = 12;
  std::int64_t num_attention_heads = 12;
  std::int64_t ffn_dim = 3072;
  std::int64_t max_position_embeddings = 2048;
  // The embeddings' width; HF's null means hidden_size. When it differs (opt-350m: 512 against
  // 1024), project_in / project_out map between the two.
  std::optional<std::int64_t> word_embed_proj_dim;
  // Pre-LN blocks (125m, 1.3b, ...) or post-LN (350m).
  bool do_layer_norm_before = true;
  bool remove_final_layer_norm = false;  // config.json's "_remove_final_layer_norm"
  bool enable_bias = true;
  bool layer_norm_elementwise_affine = true;
  std::string activation_function = "relu";
  double dropout = 0.1;
  double attention_dropout = 0.0;
  double layerdrop = 0.0;  // must be 0: dropping whole layers is not supported
  double init_std = 0.02;
  bool tie_word_embeddings = true;
  // The embedding row that gets no gradient (torch's padding_idx), as HF builds embed_tokens.
  std::optional<std::int64_t> pad_token_id = 1;
  std::int64_t bos_token_id = 2;
  TokenIds eos_token_id{2};  // one id or several (generation stops at any)

  std::int64_t embed_dim() const { return word_embed_proj_dim ? *word_embed_proj_dim : hidden_size; }
  std::int64_t head_dim() const { return hidden_size / num_attention_heads; }
  // OPT's learned positions start at row 2 (fairseq's padding offset): the table has 2 more rows.
  static constexpr std::int64_t kPositionOffset = 2;
  bool has_final_layer_norm() const { return do_layer_norm_before && !remove_final_layer_norm; }
};

void validate(const OptConfig& config, std::string_view origin);
double parameter_count(const OptConfig& config);
std::string describe_size(const OptConfig& config);
void apply_overrides(OptConfig& config, std::string_view overrides);

}  // namespace llmrdzv::model
