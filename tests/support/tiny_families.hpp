// The model families the tests build, each a tiny model of a preset's kind with the quirks that
// matter kept (odd widths, grouped-query attention, windows shorter than 16-token blocks,
// soft-caps, q/k norms): a preset name and the --config_overrides that shrink it.
#pragma once

#include <string>

namespace trainer_test::families {

struct Family {
  const char* name;
  const char* preset;
  std::string overrides;  // a tiny model of the preset's kind
};

// opt-350m's kind (post-LN, embeddings projected 24 <-> 40) and a Llama with grouped-query
// attention (6 heads on 2 key/value heads), odd widths both.
inline const Family kOpt{"opt", "opt-350m",
                  "num_hidden_layers=2,hidden_size=40,num_attention_heads=5,ffn_dim=56,word_embed_proj_dim=24,"
                  "max_position_embeddings=32"};
inline const Family kLlama{"llama", "smollm-135m",
                    "num_hidden_layers=2,hidden_size=48,num_attention_heads=6,num_key_value_heads=2,"
                    "intermediate_size=80,max_position_embeddings=32"};
// Mistral's window (5) and Qwen2's (6, from layer 1 on) shorter than the 16-token blocks; Qwen3 with
// head_dim 12 against hidden 40 / 4 heads.
inline const Family kMistral{"mistral", "mistral-7b",
                      "num_hidden_layers=2,hidden_size=48,num_attention_heads=6,num_key_value_heads=2,"
                      "intermediate_size=80,max_position_embeddings=32,sliding_window=5"};
inline const Family kQwen2{"qwen2", "qwen2.5-0.5b",
                    "num_hidden_layers=2,hidden_size=48,num_attention_heads=6,num_key_value_heads=2,"
                    "intermediate_size=80,max_position_embeddings=32,use_sliding_window=true,sliding_window=6,"
                    "max_window_layers=1"};
inline const Family kQwen3{"qwen3", "qwen3-0.6b",
                    "num_hidden_layers=2,hidden_size=40,num_attention_heads=4,num_key_value_heads=2,head_dim=12,"
                    "intermediate_size=72,max_position_embeddings=32"};
// Phi-3's fused projections with a window of 6; Gemma 2 shrunk with its soft-caps and windows kept.
inline const Family kPhi3{"phi3", "phi-3-mini",
                   "num_hidden_layers=2,hidden_size=40,num_attention_heads=5,num_key_value_heads=1,"
                   "intermediate_size=56,max_position_embeddings=32,sliding_window=6"};
inline const Family kGemma2{"gemma2", "gemma-2-2b",
                     "num_hidden_layers=3,hidden_size=48,num_attention_heads=4,num_key_value_heads=2,head_dim=16,"
                     "intermediate_size=80,max_position_embeddings=32,sliding_window=5,query_pre_attn_scalar=16"};

// Gemma 3 with a local layer pattern of 3 (layers 0, 1 and 3 windowed, 2 global) and a local rope
// base apart from the global one.
inline const Family kGemma3{"gemma3_text", "gemma-3-1b",
                     "num_hidden_layers=4,hidden_size=48,num_attention_heads=4,num_key_value_heads=2,head_dim=16,"
                     "intermediate_size=80,max_position_embeddings=32,sliding_window=5,query_pre_attn_scalar=16,"
                     "sliding_window_pattern=3,rope_local_base_freq=100"};

// GPT-2 with a tied head and learned positions, dropout off (the preset's 0.1 would draw masks
// that differ with the ranks' batch split).
inline const Family kGpt2{"gpt2", "gpt2", "n_layer=3,n_embd=48,n_head=4,n_positions=32,resid_pdrop=0,embd_pdrop=0,attn_pdrop=0"};

}  // namespace trainer_test::families
