// OPT (HF's OPTForCausalLM) as a recipe: pre- or post-LayerNorm blocks (do_layer_norm_before),
// learned positions offset by 2, project_in/project_out where word_embed_proj_dim differs from
// hidden_size (opt-350m), the query scaled before the product as OPT does, a ReLU MLP (fc1/fc2 in
// the layer itself), dropout on the residual branches, the pad row without gradient, tied head
// unless tie_word_embeddings is false.
#include <cmath>

#include "family_recipes.hpp"

namespace llmrdzv::model::detail {

DecoderRecipe decoder_recipe(const OptConfig& c) {
  DecoderRecipe r;
  r.model_type = "opt";
  r.vocab_size = c.vocab_size;
  r.hidden_size = c.hidden_size;
  r.embed_dim = c.embed_dim();
  r.num_layers = c.num_hidden_layers;
  r.max_positions = c.max_position_embeddings;
  r.heads = r.kv_heads = c.num_attention_heads;
  r.head_dim = c.head_dim();
  r.intermediate_size = c.ffn_dim;
  r.learned_positions = true;
  r.position_offset = OptConfig::kPositionOffset;
  r.padding_idx = c.pad_token_id;
  r.norm = NormKind::layer_norm;
  r.placement = c.do_layer_norm_before ? NormPlacement::pre : NormPlacement::post;
  r.norm_eps = 1e-5;  // torch's LayerNorm default, as OPT builds its norms
  r.norm_affine = c.layer_norm_elementwise_affine;
  r.final_norm = c.has_final_layer_norm();
  r.q_bias = r.k_bias = r.v_bias = r.o_bias = c.enable_bias;
  r.scale_query_first = true;
  r.attention_dropout = c.attention_dropout;
  r.residual_dropout = c.dropout;
  r.layers.assign(static_cast<std::size_t>(c.num_hidden_layers),
                  {.attention_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim())), .sliding_window = std::nullopt, .rope = std::nullopt});
  r.mlp = MlpKind::plain;
  r.activation = c.activation_function;
  r.mlp_bias = c.enable_bias;
  r.tied_head = c.tie_word_embeddings;
  r.init_std = c.init_std;
  DecoderNames& n = r.names;
  n.embed_tokens = "model.decoder.embed_tokens";
  n.embed_positions = "model.decoder.embed_positions";
  n.project_in = "model.decoder.project_in";
  n.project_out = "model.decoder.project_out";
  n.layers = "model.decoder.layers";
  n.final_norm = "model.decoder.final_layer_norm";
  n.q = "self_attn.q_proj";
  n.k = "self_attn.k_proj";
  n.v = "self_attn.v_proj";
  n.o = "self_attn.out_proj";
  n.attention_norm = "self_attn_layer_norm";
  n.fc_in = "fc1";
  n.fc_out = "fc2";
  n.mlp_norm = "final_layer_norm";
  return r;
}

}  // namespace llmrdzv::model::detail
