// The loop's state in and out of llmrdzv::io checkpoints (see checkpoint_state.hpp).
#include "checkpoint_state.hpp"

#include <ATen/Context.h>
#include <torch/cuda.h>

#include <deque>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include "llmrdzv/io/checkpoint_name.hpp"
#include "llmrdzv/io/hf_model_dir.hpp"
#include "llmrdzv/io/json.hpp"
#include "llmrdzv/train/metrics_log.hpp"

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
  const auto step = io::parse_checkpoint_step(dir.filename().string());
  if (!step) fail(dir, "not a checkpoint-<step> directory");
  return *step;
}

// What trainer_state.json records.
struct SavedState {
  std::int64_t global_step = 0;
  std::string data_state;
  double train_loss_sum = 0;
  std::int64_t rank = 0;
  std::int64_t world = 1;
  double loss_scale = 0;  // absent in checkpoints of runs without loss scaling
  std::int64_t loss_scale_good_steps = 0;
  std::int64_t loss_scale_hysteresis = 0;  // absent before DeepSpeed's hysteresis: 0
  std::int64_t skipped_steps = 0;  // absent in checkpoints of runs before it was recorded
  std::string logging_dir;  // absent in checkpoints of runs before TensorBoard logging
  std::optional<double> best_metric;  // absent or null: no best yet
  std::int64_t best_step = 0;
};

SavedState parse_saved_state(const std::filesystem::path& dir, const std::string& text) {
  try {
    const json::Value saved = json::parse(text);
    const auto member = [&](const char* key) -> const json::Value& {
      const json::Value* value = saved.find(key);
      if (!value) throw std::runtime_error(std::string("no '") + key + "'");
      return *value;
    };
    SavedState state;
    state.global_step = member("global_step").as_integer();
    state.data_state = member("data_state").as_string();
    // null: the run's losses had gone NaN or infinite (JSON has no such numbers).
    const json::Value& loss_sum = member("train_loss_sum");
    state.train_loss_sum = loss_sum.is_null() ? std::numeric_limits<double>::quiet_NaN() : loss_sum.as_double();
    state.rank = member("rank").as_integer();
    state.world = member("world_size").as_integer();
    if (const json::Value* scale = saved.find("loss_scale")) {
      state.loss_scale = scale->as_double();
      state.loss_scale_good_steps = member("loss_scale_good_steps").as_integer();
      if (const json::Value* left = saved.find("loss_scale_hysteresis")) state.loss_scale_hysteresis = left->as_integer();
    }
    if (const json::Value* best = saved.find("best_metric"); best && !best->is_null()) {
      state.best_metric = best->as_double();
      state.best_step = member("best_global_step").as_integer();
    }
    if (const json::Value* skipped = saved.find("skipped_steps")) state.skipped_steps = skipped->as_integer();
    if (const json::Value* logging_dir = saved.find("logging_dir")) state.logging_dir = logging_dir->as_string();
    if (state.world < 1 || state.rank < 0 || state.rank >= state.world) {
      throw std::runtime_error("rank " + std::to_string(state.rank) + " of " + std::to_string(state.world));
    }
    return state;
  } catch (const std::exception& e) {
    fail(dir, std::string(kStateFile) + " is malformed: " + e.what());
  }
}

// The loop's state as one rank saved it.
LoopState loop_state_of(const SavedState& saved) {
  LoopState state;
  state.global_step = saved.global_step;
  state.data_state = saved.data_state;
  state.train_loss_sum = saved.train_loss_sum;
  state.loss_scale = saved.loss_scale;
  state.loss_scale_good_steps = saved.loss_scale_good_steps;
  state.loss_scale_hysteresis = saved.loss_scale_hysteresis;
  state.skipped_steps = saved.skipped_steps;
  state.logging_dir = saved.logging_dir;
  state.best_metric = saved.best_metric;
  state.best_step = saved.best_step;
  return state;
}

// trainer_state.json straight from the file (small; the manifest is checked when it is loaded).
SavedState read_saved_state(const std::filesystem::path& dir) {
  std::ifstream in(dir / kStateFile, std::ios::binary);
  if (!in) fail(dir, std::string("has no readable ") + kStateFile);
  std::ostringstream text;
  text << in.rdbuf();
  return parse_saved_state(dir, text.str());
}

// Where rank k's part of the checkpoint that rank 0 keeps in rank0_dir lives.
std::filesystem::path rank_part(const std::filesystem::path& rank0_dir, std::int64_t k) {
  if (k == 0) return rank0_dir;
  return rank0_dir.parent_path() / ("rank-" + std::to_string(k)) / rank0_dir.filename();
}

const io::NamedTensors& tensors_of(const std::filesystem::path& dir, const io::CheckpointData& data, const char* file) {
  const auto found = data.tensor_files.find(file);
  if (found == data.tensor_files.end()) fail(dir, std::string("lacks ") + file);
  return found->second;
}

const std::string& state_blob(const std::filesystem::path& dir, const io::CheckpointData& data) {
  const auto found = data.blobs.find(kStateFile);
  if (found == data.blobs.end()) fail(dir, std::string("lacks ") + kStateFile);
  return found->second;
}

void load_optimizer(const std::filesystem::path& dir, engine::TrainingEngine& engine,
                    const engine::TensorMap& optimizer) {
  const bool sharded_parameters = optimizer.contains(engine::kParameterShardKeys.layout) ||
                                  optimizer.contains(engine::kParameterShardKeys.count);
  if (sharded_parameters && !engine.parameter_units()) {
    fail(dir, "was saved with --shard_parameters (ZeRO-3): resume it with --shard_parameters true");
  }
  try {
    engine.load_optimizer_state(optimizer);
  } catch (const std::runtime_error& e) {
    fail(dir, e.what());
  }
}

void restore_rng(const std::filesystem::path& dir, const io::CheckpointData& data) {
  std::map<std::string, at::Tensor> rng;
  for (const auto& [name, tensor] : tensors_of(dir, data, kRngFile)) rng.emplace(name, tensor);
  for (auto& [name, generator] : generators()) {
    const auto saved = rng.find(name);
    if (saved == rng.end()) fail(dir, "has no RNG state for " + name);
    generator.set_state(saved->second.clone());
  }
}

// A checkpoint of old_world ranks resumed by engine.world_size() ranks (or by another rank than
// the one that wrote the file at hand): everything that is the same on every rank comes from rank
// 0 (data position, RNG, the plain optimizer's replica); the loss sum is the old ranks' mean, so
// the final train_loss stays the mean over ranks and steps; the optimizer shards of all old ranks
// (--offload optimizer, --shard_parameters) go to the engine, which takes its new shard out of them.
LoopState restore_resharded(const VerifiedCheckpoint& checkpoint, const std::filesystem::path& rank0_dir,
                            std::int64_t old_world, std::int64_t step, engine::TrainingEngine& engine) {
  std::deque<io::CheckpointData> loaded;  // keeps the memory maps alive until the state is copied
  const auto load = [&](const std::filesystem::path& dir) -> const io::CheckpointData& {
    if (dir == checkpoint.dir) return checkpoint.data;
    return loaded.emplace_back(io::load_checkpoint(dir, /*alias=*/true));
  };
  const io::CheckpointData& first = load(rank0_dir);
  const SavedState rank0 = parse_saved_state(rank0_dir, state_blob(rank0_dir, first));
  const io::NamedTensors& rank0_optimizer = tensors_of(rank0_dir, first, kOptimizerFile);
  // Sharded optimizer state (--offload optimizer's host shards, --shard_parameters' shards): every
  // old rank's part goes to the engine under "shard.<k>/", with the count under this key.
  std::string shards_entry;
  for (const auto& [name, tensor] : rank0_optimizer) {
    for (const auto& keys : {engine::kOffloadShardKeys, engine::kParameterShardKeys}) {
      if (name == keys.layout) shards_entry = keys.count;
    }
  }
  const bool sharded = !shards_entry.empty();

  const auto check = [&](const std::filesystem::path& dir, const SavedState& saved, std::int64_t k) {
    if (saved.rank != k || saved.world != old_world || saved.global_step != step) {
      fail(dir, "was written by rank " + std::to_string(saved.rank) + " of " + std::to_string(saved.world) +
                    " at step " + std::to_string(saved.global_step) + ", but rank 0's " + io::checkpoint_dir_name(step) +
                    " names rank " + std::to_string(k) + " of " + std::to_string(old_world) +
                    " (a leftover of an earlier run with another number of ranks?)");
    }
  };
  // Every rank's scaler saw the same global gradients, and every rank the same evaluations.
  LoopState state = loop_state_of(rank0);
  double loss_sum = 0;
  engine::TensorMap optimizer;
  for (std::int64_t k = 0; k < old_world; ++k) {
    const std::filesystem::path dir = rank_part(rank0_dir, k);
    if (sharded) {
      const io::CheckpointData& data = k == 0 ? first : load(dir);
      const SavedState saved = parse_saved_state(dir, state_blob(dir, data));
      check(dir, saved, k);
      loss_sum += saved.train_loss_sum;
      for (const auto& [name, tensor] : tensors_of(dir, data, kOptimizerFile)) {
        optimizer.emplace("shard." + std::to_string(k) + "/" + name, tensor);
      }
    } else {
      const SavedState saved = k == 0 ? rank0 : read_saved_state(dir);
      check(dir, saved, k);
      loss_sum += saved.train_loss_sum;
    }
  }
  if (sharded) {
    optimizer.emplace(shards_entry, at::scalar_tensor(old_world, at::kLong));
  } else {
    for (const auto& [name, tensor] : rank0_optimizer) optimizer.emplace(name, tensor);
  }
  state.train_loss_sum = loss_sum / static_cast<double>(old_world);
  load_optimizer(rank0_dir, engine, optimizer);
  restore_rng(rank0_dir, first);
  if (engine.is_main() && old_world != engine.world_size()) {
    std::cout << io::checkpoint_dir_name(step) << " was written by " << old_world << (old_world == 1 ? " rank" : " ranks")
              << "; continuing with " << engine.world_size()
              << (sharded ? " (optimizer shards resharded)" : " (optimizer state of rank 0)") << std::endl;
  }
  return state;
}

}  // namespace

std::filesystem::path checkpoint_root(const std::filesystem::path& output_dir, int rank) {
  return rank == 0 ? output_dir : output_dir / ("rank-" + std::to_string(rank));
}

io::ParameterReadHook unit_reader(engine::TrainingEngine& engine) {
  engine::ParameterUnits* units = engine.parameter_units();
  if (!units) return {};
  return [units](const at::Tensor& parameter) { units->read_unit_of(parameter); };
}

std::filesystem::path save_training_checkpoint(const std::filesystem::path& output_dir, model::CausalLm& model,
                                               engine::TrainingEngine& engine, const LoopState& state,
                                               const tokenizer::Tokenizer* tokenizer) {
  io::CheckpointData data;
  const io::ParameterReadHook read_unit = unit_reader(engine);
  if (!engine.is_main() && read_unit) io::visit_saved_parameters(model, read_unit);  // rank 0 reads these units
  if (engine.is_main()) {
    data.deferred_tensor_files[kModelFile] = io::deferred_hf_state_dict(model, read_unit);
    data.blobs[kConfigFile] = model::config_to_json(model->config());
    if (tokenizer) {
      for (auto& [name, text] : tokenizer->files()) data.blobs[name] = std::move(text);
    }
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
      {"train_loss_sum", metric(state.train_loss_sum)},  // null once a loss was NaN or infinite
      {"rank", std::int64_t{engine.rank()}},
      {"world_size", std::int64_t{engine.world_size()}},
      {"loss_scale", state.loss_scale},
      {"loss_scale_good_steps", state.loss_scale_good_steps},
      {"loss_scale_hysteresis", state.loss_scale_hysteresis},
      {"skipped_steps", state.skipped_steps},
      {"logging_dir", state.logging_dir},
      {"best_metric", state.best_metric ? metric(*state.best_metric) : json::Value()},
      {"best_global_step", state.best_step},
  };
  data.blobs[kStateFile] = json::write(trainer_state, 2);
  data.metadata["global_step"] = std::to_string(state.global_step);
  return io::save_checkpoint(checkpoint_root(output_dir, engine.rank()), state.global_step, data);
}

void prune_training_checkpoints(const std::filesystem::path& output_dir, int rank, std::int64_t keep_last,
                                std::int64_t saved_step, std::int64_t best_step) {
  if (keep_last > 0) {
    io::prune_checkpoints(checkpoint_root(output_dir, rank), static_cast<int>(keep_last), saved_step,
                          best_step > 0 ? std::optional(best_step) : std::nullopt);
  }
}

std::optional<std::filesystem::path> latest_complete_checkpoint(const std::filesystem::path& output_dir, bool verify,
                                                                std::vector<std::string>* rejected) {
  const std::vector<io::CheckpointInfo> all = io::list_checkpoints(output_dir);
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    try {
      if (verify) {
        io::verify_checkpoint(it->dir);
      } else if (!std::filesystem::exists(it->dir / io::kManifestName)) {
        fail(it->dir, std::string("has no ") + io::kManifestName);
      }
      const SavedState saved = read_saved_state(it->dir);
      for (std::int64_t k = 1; k < saved.world; ++k) {
        const std::filesystem::path part = rank_part(it->dir, k);
        if (!std::filesystem::exists(part / io::kManifestName)) {
          fail(it->dir, "rank " + std::to_string(k) + " of the " + std::to_string(saved.world) +
                            " ranks that wrote it did not finish " + part.string());
        }
      }
      return it->dir;
    } catch (const io::CheckpointError& e) {
      if (rejected) rejected->push_back(e.what());
    }
  }
  return std::nullopt;
}

std::filesystem::path resolve_checkpoint(const std::string& value, const std::filesystem::path& output_dir, int rank) {
  std::filesystem::path rank0_dir(value);
  if (value == "latest") {
    std::vector<std::string> rejected;
    const auto latest = latest_complete_checkpoint(output_dir, /*verify=*/true, &rejected);
    for (const std::string& reason : rejected) std::cerr << "trainer: skipping broken checkpoint " << reason << '\n';
    if (!latest) {
      throw io::CheckpointError("--resume_from_checkpoint latest: no valid checkpoint in " + output_dir.string());
    }
    rank0_dir = *latest;
  }
  step_of(rank0_dir);
  if (rank == 0) return rank0_dir;
  const std::filesystem::path own = rank_part(rank0_dir, rank);
  return std::filesystem::exists(own) ? own : rank0_dir;
}

VerifiedCheckpoint open_training_checkpoint(const std::filesystem::path& dir) {
  step_of(dir);
  return {dir, io::load_checkpoint(dir, /*alias=*/true)};
}

io::HfWeights checkpoint_weights(const VerifiedCheckpoint& checkpoint, const model::CausalLm& model) {
  if (!checkpoint.data.tensor_files.contains(kModelFile)) fail(checkpoint.dir, "holds no model weights");
  const auto config_blob = checkpoint.data.blobs.find(kConfigFile);
  if (config_blob == checkpoint.data.blobs.end()) fail(checkpoint.dir, std::string("has no ") + kConfigFile);
  const model::ModelConfig saved = model::config_from_json(config_blob->second, (checkpoint.dir / kConfigFile).string());
  if (model::config_to_json(saved) != model::config_to_json(model->config())) {
    fail(checkpoint.dir, "was written for another model configuration (compare its config.json with this run's options)");
  }
  return io::HfWeights(model, checkpoint.dir / kModelFile);
}

void restore_model(const VerifiedCheckpoint& checkpoint, model::CausalLm& model) {
  checkpoint_weights(checkpoint, model).read_all(model, io::SafetensorsFile::Mode::read);
}

LoopState restore_state(const VerifiedCheckpoint& checkpoint, engine::TrainingEngine& engine) {
  const auto& files = checkpoint.data.tensor_files;
  const auto state_blob = checkpoint.data.blobs.find(kStateFile);
  if (state_blob == checkpoint.data.blobs.end() || !files.contains(kOptimizerFile) || !files.contains(kRngFile)) {
    fail(checkpoint.dir, std::string("lacks ") + kStateFile + ", " + kOptimizerFile + " or " + kRngFile);
  }
  const SavedState saved = parse_saved_state(checkpoint.dir, state_blob->second);
  const std::int64_t step = step_of(checkpoint.dir);
  if (saved.global_step != step) fail(checkpoint.dir, "its trainer state is for another step");

  // Rank 0's part of this checkpoint, and the number of ranks that wrote it (rank 0 says).
  const std::filesystem::path rank0_dir =
      saved.rank == 0 ? checkpoint.dir : checkpoint.dir.parent_path().parent_path() / checkpoint.dir.filename();
  const std::int64_t old_world = saved.rank == 0 ? saved.world : read_saved_state(rank0_dir).world;
  if (saved.rank != engine.rank() || saved.world != engine.world_size() || saved.world != old_world) {
    return restore_resharded(checkpoint, rank0_dir, old_world, step, engine);
  }

  LoopState state = loop_state_of(saved);
  engine::TensorMap optimizer;
  for (const auto& [name, tensor] : files.at(kOptimizerFile)) optimizer.emplace(name, tensor);
  load_optimizer(checkpoint.dir, engine, optimizer);
  restore_rng(checkpoint.dir, checkpoint.data);
  return state;
}

}  // namespace llmrdzv::train
