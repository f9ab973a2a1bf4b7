// The Qwen3 family's hyper-parameters (transformers' Qwen3Config): Qwen2's, with head_dim set on its
// own (128 by default, not hidden_size / heads), attention_bias (on q, k, v and o; false by default)
// and RMSNorm over each head of q and k before rotary. Torch-free.
#pragma once

#include "llmrdzv/model/qwen2_config.hpp"

namespace llmrdzv::model {

struct Qwen3Config : Qwen2Config {
  static constexpr std::string_view kModelType = "qwen3";

  Qwen3Config() { head_dim = 128; }
};

void validate(const Qwen3Config& config, std::string_view origin);
double parameter_count(const Qwen3Config& config);
std::string describe_size(const Qwen3Config& config);
void apply_overrides(Qwen3Config& config, std::string_view overrides);

}  // namespace llmrdzv::model
