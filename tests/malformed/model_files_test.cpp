// Damaged model files of a Hugging Face model directory: config.json (GPT-2, OPT and Llama as
// our export writes them), model.safetensors (also as a model built without values reads it) and
// a sharded model's index; and a training checkpoint's MANIFEST.json (its files are held to their
// SHA-256 there). Each is refused with
// the loader's own errors (ConfigError, HfFormatError, SafetensorsError), never with a torch
// internal ("shape '[24, 72]' is invalid for input of size 70") or a standard library one.
// config.json goes through the parser and validation only: a damaged size such as
// n_embd 4294967295 must be refused there or give a finite parameter count, and building a model
// of the size it then names is the memory check's business, not this test's.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "feed_damaged.hpp"
#include "llmrdzv/io/checkpoint.hpp"
#include "llmrdzv/io/hf_model_dir.hpp"
#include "llmrdzv/io/hf_weights.hpp"
#include "llmrdzv/io/safetensors.hpp"
#include "llmrdzv/model/causal_lm.hpp"
#include "llmrdzv/model/config_error.hpp"
#include "llmrdzv/model/model_config.hpp"
#include "scratch_dir.hpp"
#include "tiny_gpt2.hpp"

using namespace llmrdzv;
using testing::Broken;
using testing::feed_damaged;
using testing::ScratchDir;
using testing::tiny_gpt2;

namespace {

// One error type for the loader's three: what feed_damaged counts as a clear refusal.
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

template <class Load>
void refused_as_loader_errors(Load&& load) {
  try {
    load();
  } catch (const model::ConfigError& e) {
    throw Refused(e.what());
  } catch (const io::HfFormatError& e) {
    throw Refused(e.what());
  } catch (const io::SafetensorsError& e) {
    throw Refused(e.what());
  }
}


}  // namespace

TEST_CASE("a damaged config.json is refused with ConfigError or names a model of finite size", "[malformed][model]") {
  std::vector<std::string> seeds = {model::config_to_json(tiny_gpt2()), model::config_to_json(model::preset("opt-125m")),
                                    model::config_to_json(model::preset("smollm-135m"))};
  feed_damaged<model::ConfigError>("config_from_json", seeds, 3000, [](const std::string& text) {
    const model::ModelConfig config = model::config_from_json(text, "config.json");
    const double parameters = model::parameter_count(config);
    if (!std::isfinite(parameters) || parameters <= 0) throw Broken("parameter count " + std::to_string(parameters));
  });
}

TEST_CASE("damaged model weights or a damaged shard index are refused with the loader's errors", "[malformed][model]") {
  ScratchDir scratch("malformed-model");
  model::CausalLm saved = model::make_causal_lm(tiny_gpt2());
  io::save_hf_model(saved, scratch / "single");
  io::save_hf_model(saved, scratch / "sharded", {}, 8000);
  const std::string weights = testing::read_file(scratch / "single" / "model.safetensors");
  const std::string index = testing::read_file(scratch / "sharded" / "model.safetensors.index.json");
  model::CausalLm model = model::make_causal_lm(tiny_gpt2());

  feed_damaged<Refused>("load_hf_weights, model.safetensors", {weights}, 2000, [&](const std::string& bytes) {
    refused_as_loader_errors([&] { io::load_hf_weights(model, scratch.write("damaged/model.safetensors", bytes)); });
  });
  feed_damaged<Refused>("load_hf_weights, model.safetensors.index.json", {index}, 2000, [&](const std::string& text) {
    refused_as_loader_errors([&] { io::load_hf_weights(model, scratch.write("sharded/model.safetensors.index.json", text)); });
  });
  // A model built without values (each ZeRO-3 rank's) checks the same files with nothing but its
  // shapes, then reads them a parameter at a time.
  model::CausalLm deferred = model::make_causal_lm(tiny_gpt2(), model::WeightInit::deferred);
  feed_damaged<Refused>("HfWeights of a deferred model, model.safetensors", {weights}, 1000, [&](const std::string& bytes) {
    refused_as_loader_errors([&] {
      const io::HfWeights files(deferred, scratch.write("damaged/model.safetensors", bytes));
      for (const auto& item : deferred->named_parameters()) files.read(item.key(), at::empty(item.value().sizes()));
    });
  });
}

TEST_CASE("a damaged checkpoint manifest is refused with CheckpointError", "[malformed][checkpoint]") {
  ScratchDir scratch("malformed-checkpoint");
  io::CheckpointData data;
  data.tensor_files["model.safetensors"] = {{"w", at::arange(12, at::kFloat).reshape({3, 4})}};
  data.blobs["trainer_state.json"] = R"({"global_step": 7})";
  data.metadata["global_step"] = "7";
  const auto dir = io::save_checkpoint(scratch.path(), 7, data);
  const std::string manifest = testing::read_file(dir / io::kManifestName);
  feed_damaged<io::CheckpointError>("load_checkpoint, MANIFEST.json", {manifest}, 3000, [&](const std::string& text) {
    scratch.write((dir / io::kManifestName).lexically_relative(scratch.path()).string(), text);
    const io::CheckpointData loaded = io::load_checkpoint(dir);
    if (loaded.blobs.at("trainer_state.json") != data.blobs.at("trainer_state.json") ||
        !at::equal(loaded.tensor_files.at("model.safetensors").at(0).second, data.tensor_files.at("model.safetensors").at(0).second))
      throw Broken("a checkpoint accepted under a damaged manifest reads back different contents");
  });
}
