// Llama (HF's LlamaForCausalLM) as a recipe: pre-RMSNorm blocks, rotary positions (default, linear
// or llama3 scaling), grouped-query attention (num_key_value_heads), a SwiGLU MLP (or another
// gated activation), biases where attention_bias / mlp_bias say, the pad row without gradient,
// an untied head unless tie_word_embeddings is true. Mistral, Qwen2 and Qwen3 start from it.
#include <cmath>

#include "family_recipes.hpp"

namespace llmrdzv::model::detail {

DecoderRecipe decoder_recipe(const LlamaConfig& c) {
  DecoderRecipe r;
  r.model_type = "llama";
  r.vocab_size = c.vocab_size;
  r.hidden_size = r.embed_dim = c.hidden_size;
  r.num_layers = c.num_hidden_layers;
  r.max_positions = c.max_position_embeddings;
  r.heads = c.num_attention_heads;
  r.kv_heads = c.kv_heads();
  r.head_dim = c.head_size();
  r.intermediate_size = c.intermediate_size;
  r.padding_idx = c.pad_token_id;
  r.norm = NormKind::rms_norm;
  r.placement = NormPlacement::pre;
  r.norm_eps = c.rms_norm_eps;
  r.q_bias = r.k_bias = r.v_bias = r.o_bias = c.attention_bias;
  r.attention_dropout = c.attention_dropout;
  r.rope = {.theta = c.rope_theta,
            .type = c.rope_type,
            .factor = c.rope_factor,
            .low_freq_factor = c.rope_low_freq_factor,
            .high_freq_factor = c.rope_high_freq_factor,
            .original_max_positions = c.rope_original_max_position_embeddings};
  r.layers.assign(static_cast<std::size_t>(c.num_hidden_layers),
                  {.attention_scale = 1.0 / std::sqrt(static_cast<double>(c.head_size())), .sliding_window = std::nullopt, .rope = std::nullopt});
  r.mlp = MlpKind::gated;
  r.activation = c.hidden_act;
  r.mlp_bias = c.mlp_bias;
  r.tied_head = c.tie_word_embeddings;
  r.init_std = c.initializer_range;
  DecoderNames& n = r.names;
  n.embed_tokens = "model.embed_tokens";
  n.layers = "model.layers";
  n.final_norm = "model.norm";
  n.attention_norm = "input_layernorm";
  n.q = "self_attn.q_proj";
  n.k = "self_attn.k_proj";
  n.v = "self_attn.v_proj";
  n.o = "self_attn.o_proj";
  n.mlp_norm = "post_attention_layernorm";
  n.gate = "mlp.gate_proj";
  n.up = "mlp.up_proj";
  n.down = "mlp.down_proj";
  n.ignored = {"rotary_emb.inv_freq"};  // the rotary tables some older checkpoints saved
  return r;
}

}  // namespace llmrdzv::model::detail
