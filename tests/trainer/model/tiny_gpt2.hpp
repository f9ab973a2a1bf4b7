// The GPT-2 config the model tests share: 2 layers of width 32, 67 tokens (EOS 66), 24 positions.
#pragma once

#include "llmrdzv/model/gpt2_config.hpp"

namespace llmrdzv::testing {

inline model::Gpt2Config tiny_gpt2(double dropout = 0.0) {
  model::Gpt2Config c;
  c.vocab_size = 67;
  c.n_positions = 24;
  c.n_embd = 32;
  c.n_layer = 2;
  c.n_head = 4;
  c.bos_token_id = 66;
  c.eos_token_id = {66};
  c.resid_pdrop = c.embd_pdrop = c.attn_pdrop = dropout;
  return c;
}

}  // namespace llmrdzv::testing
