// Picks the tokenizer and builds or loads the model the options ask for: --tokenizer_name, else
// the model directory's vocab, else (fresh models only) bytes; --model_name_or_path, else a fresh model from
// --config_name (a file, a directory or a preset name such as gpt2-medium) and --config_overrides.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "llmrdzv/engine/training_engine.hpp"
#include "llmrdzv/io/hf_weights.hpp"
#include "llmrdzv/model/causal_lm.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"

namespace llmrdzv::train {

// What a name given to --model_name_or_path (--model), --tokenizer_name or --config_name must
// hold when it is a hub name: the files each snapshot needs (hub_cache.hpp).
enum class NamedThing { model, tokenizer, config };

// Where hub names are looked up: --model_revision and --cache_dir.
struct HubLookup {
  std::string revision = "main";
  std::string cache_dir;  // empty = huggingface_hub's choice from the environment
};

// `name` given as `option`: a local path as it is (for --config_name also a config.json file or a
// preset name not in the cache), else its snapshot folder in the hub cache, whose description
// (folder, revision, commit) is added to `log`. Throws hub::HubError naming the folders looked in.
std::string locate(const std::string& name, std::string_view option, NamedThing thing, const HubLookup& hub,
                   std::vector<std::string>& log);

struct ChosenTokenizer {
  tokenizer::Tokenizer tokenizer;
  std::string origin;  // for the log: where it came from
};

// --tokenizer_name's vocab.json + merges.txt when given, else the model directory's; a directory
// that carries a tokenizer in another form, or a pretrained model without one, is refused (never
// silently tokenised differently). The byte-level tokenizer only for a fresh model with none given.
ChosenTokenizer load_tokenizer(const std::string& tokenizer_name, const std::string& model_dir);

struct ModelSource {
  std::string model_name_or_path;
  std::string config_name;
  std::string model_type;  // run_clm's --model_type: a fresh model's family; else it must match the model's
  std::string config_overrides;
  bool low_cpu_mem_usage = false;
};

// The configuration of the model the options name, without building it: with
// model_name_or_path set (config_name and config_overrides then empty: the CLI checks) its
// config.json, which must agree with --model_type; else a fresh model's from --config_name,
// --model_type and --config_overrides, taking the tokenizer's vocabulary size and EOS id (as
// run_clm sizes embeddings to len(tokenizer)). Either must cover the tokenizer's ids. Throws
// std::invalid_argument naming the problem.
model::ModelConfig model_config_of(const ModelSource& source, const tokenizer::Tokenizer& tokenizer);

// The model of `config` (model_config_of's): loaded from model_name_or_path, or fresh and
// initialised from the global torch RNG (seed it first). Refused when its fp32 weights exceed
// this machine's memory (every rank holds it whole).
model::CausalLm build_model(const ModelSource& source, const model::ModelConfig& config);

// ZeRO-3's model (--shard_parameters): built without values (model::WeightInit::deferred) and
// where they come from, parameter by parameter (named_parameters() names): HF's initialisation
// drawn from the global RNG (`drawn`; seed it first, as for build_model), or the model
// directory's weights, checked against the model before any is read (io::HfWeights).
struct DeferredModel {
  model::CausalLm model;
  model::WeightInitializer values;
  bool drawn = false;
};
DeferredModel build_deferred_model(const ModelSource& source, const model::ModelConfig& config);

// Values read from checked weight files, as a deferred model's source.
model::WeightInitializer read_weights(std::shared_ptr<const io::HfWeights> weights);

// A saved HF model directory (training and generate). One whose fp32 weights exceed this
// machine's memory is refused from its config.json alone, before any weight is read, instead of
// the kernel's OOM killer ending the process without a word.
model::CausalLm load_model(const std::string& dir, bool low_cpu_mem_usage = false);

// The model's parameters in model order under their HF names, as the optimizer takes them:
// biases and LayerNorm / RMSNorm weights are not decayed (transformers Trainer's grouping),
// everything else is, the embeddings included.
std::vector<engine::NamedParameter> trainable_parameters(model::CausalLm& model);

}  // namespace llmrdzv::train
