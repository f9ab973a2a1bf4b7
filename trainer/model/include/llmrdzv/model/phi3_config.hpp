// The Phi-3 family's hyper-parameters (transformers' Phi3Config): Llama's keys without its bias
// switches, resid_pdrop (dropout on the attention's and the MLP's outputs), sliding_window (every
// layer; null by default) and the longrope keys, whose scaling is refused by name. Torch-free.
#pragma once

#include "llmrdzv/model/llama_config.hpp"

namespace llmrdzv::model {

struct Phi3Config : LlamaConfig {
  static constexpr std::string_view kModelType = "phi3";
  double resid_pdrop = 0.0;
  double embd_pdrop = 0.0;  // read and written; transformers' Phi3Model applies no embedding dropout
  std::optional<std::int64_t> sliding_window;
  std::int64_t original_max_position_embeddings = 4096;  // longrope's; no effect on the default rope

  Phi3Config() {
    vocab_size = 32064;
    hidden_size = 3072;
    intermediate_size = 8192;
    max_position_embeddings = 4096;
    rms_norm_eps = 1e-5;
    eos_token_id = {32000};
    pad_token_id = 32000;
  }
};

void validate(const Phi3Config& config, std::string_view origin);
void apply_overrides(Phi3Config& config, std::string_view overrides);

}  // namespace llmrdzv::model
