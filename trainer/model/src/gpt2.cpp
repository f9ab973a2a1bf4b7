// GPT-2 (HF's GPT2LMHeadModel) as a recipe: pre-LayerNorm blocks, one fused c_attn projection
// (Conv1D, stored [in, out]), learned positions, a GELU MLP, dropout on the embeddings, attention
// and residual branches, c_proj weights initialised with std / sqrt(2 * n_layer), tied head unless
// tie_word_embeddings is false.
#include <cmath>

#include "family_recipes.hpp"

namespace llmrdzv::model::detail {

DecoderRecipe decoder_recipe(const Gpt2Config& c) {
  DecoderRecipe r;
  r.model_type = "gpt2";
  r.vocab_size = c.vocab_size;
  r.hidden_size = r.embed_dim = c.n_embd;
  r.num_layers = c.n_layer;
  r.max_positions = c.n_positions;
  r.heads = r.kv_heads = c.n_head;
  r.head_dim = c.head_dim();
  r.intermediate_size = c.inner_dim();
  r.learned_positions = true;
  r.embedding_dropout = c.embd_pdrop;
  r.norm = NormKind::layer_norm;
  r.placement = NormPlacement::pre;
  r.norm_eps = c.layer_norm_epsilon;
  r.q_bias = r.k_bias = r.v_bias = r.o_bias = true;
  r.attention_dropout = c.attn_pdrop;
  r.residual_dropout = c.resid_pdrop;
  for (std::int64_t i = 0; i < c.n_layer; ++i) {
    double scale = c.scale_attn_weights ? 1.0 / std::sqrt(static_cast<double>(c.head_dim())) : 1.0;
    if (c.scale_attn_by_inverse_layer_idx) scale /= static_cast<double>(i + 1);
    r.layers.push_back({.attention_scale = scale, .sliding_window = std::nullopt, .rope = std::nullopt});
  }
  r.mlp = MlpKind::plain;
  r.activation = c.activation_function;
  r.mlp_bias = true;
  r.tied_head = c.tie_word_embeddings;
  r.init_std = c.initializer_range;
  r.scaled_output_init = true;
  DecoderNames& n = r.names;
  n.embed_tokens = "transformer.wte";
  n.embed_positions = "transformer.wpe";
  n.layers = "transformer.h";
  n.final_norm = "transformer.ln_f";
  n.attention_norm = "ln_1";
  n.qkv = "attn.c_attn";
  n.o = "attn.c_proj";
  n.mlp_norm = "ln_2";
  n.fc_in = "mlp.c_fc";
  n.fc_out = "mlp.c_proj";
  n.transposed = {"attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight"};
  n.ignored = {".attn.bias", ".attn.masked_bias"};  // the causal-mask buffers of old checkpoints
  return r;
}

}  // namespace llmrdzv::model::detail
