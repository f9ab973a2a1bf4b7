// Hugging Face model directories <-> our models of every family. Loading
// reads config.json (model_type picks the family) and model.safetensors (or its shards), accepts
// names with or without the base model's prefix ("transformer.", "model."), transposes what the
// family stores transposed (GPT-2's Conv1D [in, out]), ignores the buffers old checkpoints carry
// (attention masks, rotary tables), and accepts lm_head.weight with a tied head only when it
// equals the token embedding. Saving writes a directory transformers.AutoModelForCausalLM
// .from_pretrained loads with the same logits. Errors name the directory or file and the tensor.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "llmrdzv/io/safetensors_torch.hpp"
#include "llmrdzv/model/causal_lm.hpp"

namespace llmrdzv::io {

class HfFormatError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct HfLoadOptions {
  // Memory-map model.safetensors and copy tensor by tensor instead of reading the whole file first.
  bool low_cpu_mem_usage = false;
};

// dir/model.safetensors, else dir/model.safetensors.index.json; HfFormatError when dir is no
// directory or holds neither (naming a pytorch_model.bin found instead).
std::filesystem::path hf_weights_path(const std::filesystem::path& dir);

// Builds the model from dir/config.json and fills it from hf_weights_path(dir) (io::HfWeights
// checks the files against the model first).
model::CausalLm load_hf_model(const std::filesystem::path& dir, const HfLoadOptions& options = {});

// Fills an existing model (shapes must match its config) from a safetensors file in HF layout, or
// from the shards of an HF index file (a path ending in ".index.json").
void load_hf_weights(model::CausalLm& model, const std::filesystem::path& weights_path,
                     const HfLoadOptions& options = {});

// The model's tensors in HF's layout and names ("transformer.h.0.attn.c_attn.weight" as [in, out]);
// no lm_head when tied. CPU, contiguous, detached copies in the parameters' dtype.
NamedTensors to_hf_state_dict(const model::CausalLm& model);

// Called with a parameter of the model just before saving reads its values: an engine that shards
// parameters (ZeRO-3) gathers that parameter's unit there and frees the one read before, so that a
// model larger than one rank's memory is written unit by unit. Every rank makes the same calls.
using ParameterReadHook = std::function<void(const at::Tensor& parameter)>;

// to_hf_state_dict's tensors, each read from the model only when a writer fetches it (after
// `before_read`, when given, was called with its parameter), so that a file can be written without
// copying the model: what save_hf_model and checkpoints write. The model must outlive the result.
std::vector<DeferredTensor> deferred_hf_state_dict(const model::CausalLm& model,
                                                   const ParameterReadHook& before_read = {});

// model.safetensors, model.safetensors.index.json or one of its model-*.safetensors shards.
bool is_weight_file_name(std::string_view name);

// transformers' default max_shard_size, "5GB".
inline constexpr std::uint64_t kDefaultMaxShardBytes = 5'000'000'000;

// Writes dir/config.json and the weights (atomically, creating dir), and copies the given
// tokenizer files (vocab.json, merges.txt, tokenizer_config.json, ...) into dir. Weights of at
// most max_shard_bytes go to model.safetensors; more are split as transformers does: tensors in
// order into model-0000K-of-0000N.safetensors of at most max_shard_bytes each (a larger tensor
// gets a shard of its own), and model.safetensors.index.json ({"metadata": {"total_size"},
// "weight_map"}), written last. Weight files of an earlier save in dir are removed first.
// The weights are streamed: each tensor is read from the model (transposed where HF's layout
// wants it) only when the file reaches it, so saving never copies the whole model. `before_read`,
// when given, is called with each parameter just before it is read (see ParameterReadHook).
void save_hf_model(const model::CausalLm& model, const std::filesystem::path& dir,
                   const std::vector<std::filesystem::path>& tokenizer_files = {},
                   std::uint64_t max_shard_bytes = kDefaultMaxShardBytes, const ParameterReadHook& before_read = {});

// The calls save_hf_model makes to `before_read`, in its order, without writing anything: what
// the ranks that do not write do while one rank saves a sharded model.
void visit_saved_parameters(const model::CausalLm& model, const ParameterReadHook& before_read);

}  // namespace llmrdzv::io
