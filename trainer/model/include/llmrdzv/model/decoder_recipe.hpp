// A decoder-only transformer as a small set of choices (norm kind and placement, attention
// options, MLP kind, positions, embedding scale, head tying) and the Hugging Face names of its
// weights. Every family (GPT-2, OPT, Llama, Mistral, Qwen2, Qwen3, Phi-3, Gemma 2 and 3) is one function from its
// config.json to a recipe (family_recipes.hpp); decoder_lm.hpp is the one implementation of every
// choice. Torch-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llmrdzv::model {

enum class NormKind {
  layer_norm,         // torch's LayerNorm (weight and bias, or neither: OPT's elementwise_affine false)
  rms_norm,           // Llama's: x / sqrt(mean(x^2) + eps) in fp32, cast back, times the weight
  rms_norm_one_plus,  // Gemma's: the same in fp32 times (1 + weight), cast back; weights start at 0
};

enum class NormPlacement {
  pre,       // x + f(norm(x))             (GPT-2, Llama, OPT pre-LN)
  post,      // norm(x + f(x))             (OPT-350m)
  sandwich,  // x + out_norm(f(norm(x)))   (Gemma 2 / 3)
};

enum class MlpKind {
  plain,        // out(act(in(x)))                      (GPT-2's c_fc/c_proj, OPT's fc1/fc2)
  gated,        // down(act(gate(x)) * up(x))           (SwiGLU with silu, GeGLU with gelu)
  fused_gated,  // down(act(g) * u), [g, u] = gate_up(x) (Phi-3's gate_up_proj)
};

// Rotary position embeddings: 1 / theta^(2i / head_dim), then by rope type "default", "linear"
// (divided by factor) or "llama3" (Llama 3.1's banded scaling).
struct RopeChoice {
  double theta = 10000.0;
  std::string type = "default";
  double factor = 1.0;
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  std::int64_t original_max_positions = 8192;
};

// What differs from one layer to the next.
struct LayerChoice {
  double attention_scale = 1.0;               // the softmax's scale of q.k
  std::optional<std::int64_t> sliding_window;  // each position attends to itself and window - 1 before it
  std::optional<RopeChoice> rope;              // this layer's own rotary settings (Gemma 3's local layers)
};

// HF's names of the weights. Paths are dotted, relative to the model (model level) or to one layer
// (layer level); an empty name is a part the recipe does not have.
struct DecoderNames {
  std::string embed_tokens;     // "transformer.wte", "model.embed_tokens", ...
  std::string embed_positions;  // learned positions only
  std::string project_in, project_out;  // OPT's embedding projections
  std::string layers;           // a ModuleList: "transformer.h", "model.layers"
  std::string final_norm;
  std::string lm_head = "lm_head";  // untied heads only
  // Layer level.
  std::string qkv;  // one fused projection ([q; k; v] rows) instead of q, k, v
  std::string q, k, v, o;
  std::string q_norm, k_norm;
  std::string fc_in, fc_out;  // MlpKind::plain
  std::string gate, up, down;  // MlpKind::gated (down also for fused_gated)
  std::string gate_up;         // MlpKind::fused_gated
  std::string attention_norm, mlp_norm;          // before (pre, sandwich) or after the residual add (post)
  std::string attention_out_norm, mlp_out_norm;  // sandwich only
  // Modules whose weights HF stores transposed ([in, out]: GPT-2's Conv1D), as name suffixes.
  std::vector<std::string> transposed;
  // Buffers of old checkpoints that carry no weights (masks, rotary tables), as name suffixes.
  std::vector<std::string> ignored;
};

struct DecoderRecipe {
  std::string model_type;
  std::int64_t vocab_size = 0, hidden_size = 0, num_layers = 0, max_positions = 0;
  std::int64_t heads = 0, kv_heads = 0, head_dim = 0, intermediate_size = 0;
  std::int64_t embed_dim = 0;  // the token embedding's width (hidden_size unless projected)

  // Embeddings.
  bool learned_positions = false;      // else rotary (rope below)
  std::int64_t position_offset = 0;    // OPT's learned positions start at row 2
  std::optional<std::int64_t> padding_idx;  // the embedding row that gets no gradient
  bool scale_embeddings = false;       // times sqrt(hidden_size) in the activations' type (Gemma)
  double embedding_dropout = 0.0;

  // Norms.
  NormKind norm = NormKind::layer_norm;
  NormPlacement placement = NormPlacement::pre;
  double norm_eps = 1e-5;
  bool norm_affine = true;  // LayerNorm with weight and bias
  bool final_norm = true;

  // Attention.
  bool q_bias = false, k_bias = false, v_bias = false, o_bias = false;
  bool qk_norm = false;               // RMSNorm over each head of q and k, before rotary (Qwen3, Gemma 3)
  bool scale_query_first = false;     // q * scale before the product, then a scale of 1 (OPT's order)
  std::optional<double> attention_softcap;  // cap * tanh(scores / cap) before the softmax (Gemma 2)
  double attention_dropout = 0.0;
  double residual_dropout = 0.0;      // on the attention's and the MLP's outputs (GPT-2, OPT)
  RopeChoice rope;
  std::vector<LayerChoice> layers;    // num_layers entries

  // MLP.
  MlpKind mlp = MlpKind::plain;
  std::string activation = "gelu_new";  // HF's ACT2FN name
  bool mlp_bias = false;

  // Head.
  bool tied_head = true;
  std::optional<double> final_softcap;  // cap * tanh(logits / cap) (Gemma 2)

  // HF's initialisation: weights ~ N(0, init_std), biases 0, norms 1 (0 for rms_norm_one_plus),
  // the padding row 0; with scaled_output_init, the attention's and MLP's output projections
  // ~ N(0, init_std / sqrt(2 * num_layers)) (GPT-2's).
  double init_std = 0.02;
  bool scaled_output_init = false;

  DecoderNames names;
};

}  // namespace llmrdzv::model
