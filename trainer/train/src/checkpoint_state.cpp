// The loop's state in and out of llmrdzv::io checkpoints (see checkpoint_state.hpp).
#include "checkpoint_state.hpp"

#include <ATen/Context.h>
#include <torch/cuda.h>

#include <iostream>

#include "llmrdzv/io/hf_model_dir.hpp"
#include "llmrdzv/io/json.hpp"

namespace llmrdzv::train {
namespace {

constexpr const char* kModelFile = "model.safetensors";
constexpr const char* kConfigFile = "config.json";
constexpr const char* kOptimizerFile = "optimizer.safetensors";
constexpr const char* kRngFile = "rng_state.safetensors";
constexpr const char* kStateFile = "trainer_state.json";

// The default generators whose streams training consumes (dropout): the CPU's and every GPU's.
std::vector<std::pair<std::string, at::Generator>> generators() {
  std::vector<std::pair<std::string, at::Generator>> all{{"cpu", at::detail::getDefaultCPUGenerator()}};
  if (torch::cuda::is_available()) {
    for (c10::DeviceIndex i = 0; i < torch::cuda::device_count(); ++i) {
      all.emplace_back("cuda." + std::to_string(i),
                       at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, i)));
    }
  }
  return all;
}

[[noreturn]] void fail(const std::filesystem::path& dir, const std::string& problem) {
  throw io::CheckpointError("checkpoint " + dir.string() + ": " + problem);
}

std::int64_t step_of(const std::filesystem::path& dir) {
  const std::string name = dir.filename().string();
  const std::string prefix = "checkpoint-";
  if (!name.starts_with(prefix)) fail(dir, "not a checkpoint-<step> directory");
  try {
    std::size_t used = 0;
    const std::int64_t step = std::stoll(name.substr(prefix.size()), &used);
    if (used + prefix.size() == name.size() && step >= 0) return step;
  } catch (const std::exception&) {
  }
  fail(dir, "not a checkpoint-<step> directory");
}

}  // namespace

std::filesystem::path checkpoint_root(const std::filesystem::path& output_dir, int rank) {
  return rank == 0 ? output_dir : output_dir / ("rank-" + std::to_string(rank));
}

std::filesystem::path save_training_checkpoint(const std::filesystem::path& output_dir, model::Gpt2LmHeadModel& model,
                                               const TrainingEngine& engine, const LoopState& state,
                                               std::int64_t keep_last) {
  io::CheckpointData data;
  if (engine.is_main()) {
    data.tensor_files[kModelFile] = io::to_hf_state_dict(model);
    data.blobs[kConfigFile] = model::config_to_json(model->config());
  }
  io::NamedTensors optimizer;
  for (const auto& [name, tensor] : engine.optimizer_state()) optimizer.emplace_back(name, tensor);
  data.tensor_files[kOptimizerFile] = std::move(optimizer);
  io::NamedTensors rng;
  for (const auto& [name, generator] : generators()) rng.emplace_back(name, generator.get_state());
  data.tensor_files[kRngFile] = std::move(rng);
  const json::Object trainer_state{
      {"global_step", state.global_step},
      {"data_state", state.data_state},
      {"train_loss_sum", state.train_loss_sum},
      {"rank", std::int64_t{engine.rank()}},
      {"world_size", std::int64_t{engine.world_size()}},
  };
  data.blobs[kStateFile] = json::write(trainer_state, 2);
  data.metadata["global_step"] = std::to_string(state.global_step);
  return io::save_checkpoint(checkpoint_root(output_dir, engine.rank()), state.global_step, data,
                             static_cast<int>(keep_last));
}

std::filesystem::path resolve_checkpoint(const std::string& value, const std::filesystem::path& output_dir, int rank) {
  if (value != "latest") {
    const std::filesystem::path given(value);
    if (rank == 0) return given;
    return checkpoint_root(output_dir, rank) / ("checkpoint-" + std::to_string(step_of(given)));
  }
  std::vector<std::string> rejected;
  const auto latest = io::latest_valid_checkpoint(checkpoint_root(output_dir, rank), &rejected);
  for (const std::string& reason : rejected) std::cerr << "trainer: skipping broken checkpoint " << reason << '\n';
  if (!latest) {
    throw io::CheckpointError("--resume_from_checkpoint latest: no valid checkpoint in " +
                              checkpoint_root(output_dir, rank).string());
  }
  return latest->dir;
}

VerifiedCheckpoint open_training_checkpoint(const std::filesystem::path& dir) {
  step_of(dir);
  return {dir, io::load_checkpoint(dir, /*alias=*/true)};
}

void restore_model(const VerifiedCheckpoint& checkpoint, model::Gpt2LmHeadModel& model) {
  if (!checkpoint.data.tensor_files.contains(kModelFile)) fail(checkpoint.dir, "holds no model weights");
  const auto config_blob = checkpoint.data.blobs.find(kConfigFile);
  if (config_blob == checkpoint.data.blobs.end()) fail(checkpoint.dir, std::string("has no ") + kConfigFile);
  const model::Gpt2Config saved = model::config_from_json(config_blob->second, (checkpoint.dir / kConfigFile).string());
  if (model::config_to_json(saved) != model::config_to_json(model->config())) {
    fail(checkpoint.dir, "was written for another model configuration (compare its config.json with this run's options)");
  }
  io::load_hf_weights(model, checkpoint.dir / kModelFile);
}

LoopState restore_state(const VerifiedCheckpoint& checkpoint, TrainingEngine& engine) {
  const auto& files = checkpoint.data.tensor_files;
  const auto state_blob = checkpoint.data.blobs.find(kStateFile);
  if (state_blob == checkpoint.data.blobs.end() || !files.contains(kOptimizerFile) || !files.contains(kRngFile)) {
    fail(checkpoint.dir, std::string("lacks ") + kStateFile + ", " + kOptimizerFile + " or " + kRngFile);
  }
  LoopState state;
  try {
    const json::Value saved = json::parse(state_blob->second);
    const auto member = [&](const char* key) -> const json::Value& {
      const json::Value* value = saved.find(key);
      if (!value) throw std::runtime_error(std::string("no '") + key + "'");
      return *value;
    };
    state.global_step = member("global_step").as_integer();
    state.data_state = member("data_state").as_string();
    state.train_loss_sum = member("train_loss_sum").as_double();
    const std::int64_t world = member("world_size").as_integer();
    if (world != engine.world_size()) {
      fail(checkpoint.dir, "was written by " + std::to_string(world) + " ranks; resume it with the same number (this run has " +
                               std::to_string(engine.world_size()) + ")");
    }
  } catch (const io::CheckpointError&) {
    throw;
  } catch (const std::exception& e) {
    fail(checkpoint.dir, std::string(kStateFile) + " is malformed: " + e.what());
  }
  if (state.global_step != step_of(checkpoint.dir)) fail(checkpoint.dir, "its trainer state is for another step");

  TensorMap optimizer;
  for (const auto& [name, tensor] : files.at(kOptimizerFile)) optimizer.emplace(name, tensor);
  try {
    engine.load_optimizer_state(optimizer);
  } catch (const std::runtime_error& e) {
    fail(checkpoint.dir, e.what());
  }
  std::map<std::string, at::Tensor> rng;
  for (const auto& [name, tensor] : files.at(kRngFile)) rng.emplace(name, tensor);
  for (auto& [name, generator] : generators()) {
    const auto saved = rng.find(name);
    if (saved == rng.end()) fail(checkpoint.dir, "has no RNG state for " + name);
    generator.set_state(saved->second.clone());
  }
  return state;
}

}  // namespace llmrdzv::train
