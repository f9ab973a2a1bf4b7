// Loading and saving Hugging Face model directories: where the weights are, config.json, the
// weights read through io::HfWeights (which maps names and checks them), and saving in HF's
// layout (the family's transposed weights, no lm_head when tied, shards and their index) with the
// tokenizer files.
#include "llmrdzv/io/hf_model_dir.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>

#include "llmrdzv/io/hf_weights.hpp"
#include "llmrdzv/io/json.hpp"

namespace llmrdzv::io {

namespace fs = std::filesystem;

fs::path hf_weights_path(const fs::path& dir) {
  if (!fs::is_directory(dir)) throw HfFormatError(dir.string() + ": not a directory");
  fs::path weights = dir / "model.safetensors";
  if (!fs::exists(weights)) weights = dir / "model.safetensors.index.json";
  if (!fs::exists(weights)) {
    if (fs::exists(dir / "pytorch_model.bin")) {
      throw HfFormatError(dir.string() + ": only model.safetensors weights are supported, found pytorch_model.bin");
    }
    throw HfFormatError(dir.string() + ": no model.safetensors or model.safetensors.index.json");
  }
  return weights;
}

model::CausalLm load_hf_model(const fs::path& dir, const HfLoadOptions& options) {
  if (!fs::is_directory(dir)) throw HfFormatError(dir.string() + ": not a directory");
  const model::ModelConfig config = model::load_config(dir / "config.json");
  const fs::path weights = hf_weights_path(dir);
  model::CausalLm model = model::make_causal_lm(config, model::WeightInit::for_loading);  // every weight is loaded next
  load_hf_weights(model, weights, options);
  return model;
}

void load_hf_weights(model::CausalLm& model, const fs::path& weights_path, const HfLoadOptions& options) {
  HfWeights(model, weights_path)
      .read_all(model, options.low_cpu_mem_usage ? SafetensorsFile::Mode::mmap : SafetensorsFile::Mode::read);
}

namespace {

// One tensor of the HF state dict: the parameter it is read from and whether HF stores it
// transposed. In the model's order, which is the files' order.
struct SavedWeight {
  std::string name;
  at::Tensor parameter;
  bool transposed = false;

  std::vector<std::int64_t> hf_shape() const {
    std::vector<std::int64_t> shape = parameter.sizes().vec();
    if (transposed) std::reverse(shape.begin(), shape.end());
    return shape;
  }
  // Its values in HF's layout, contiguous on the CPU: the parameter itself where it already is.
  at::Tensor hf_values() const { return (transposed ? parameter.t() : parameter).contiguous().to(at::kCPU); }
};

std::vector<SavedWeight> saved_weights(const model::CausalLm& model) {
  std::vector<SavedWeight> out;
  for (const auto& item : model->named_parameters()) {
    out.push_back({item.key(), item.value().detach(), model->hf_transposed(item.key())});
  }
  return out;
}

}  // namespace

NamedTensors to_hf_state_dict(const model::CausalLm& model) {
  NamedTensors out;
  for (const SavedWeight& w : saved_weights(model)) {
    at::Tensor values = w.hf_values();
    out.emplace_back(w.name, values.is_same(w.parameter) ? values.clone() : values);
  }
  return out;
}

std::vector<DeferredTensor> deferred_hf_state_dict(const model::CausalLm& model, const ParameterReadHook& before_read) {
  // The tensor being written, let go when the next one is read (shared by every entry's fetch).
  const auto current = std::make_shared<at::Tensor>();
  std::vector<DeferredTensor> out;
  for (SavedWeight& w : saved_weights(model)) {
    const Dtype dtype = dtype_of(w.parameter.scalar_type());
    std::vector<std::int64_t> shape = w.hf_shape();
    std::string name = w.name;
    out.push_back({std::move(name), dtype, std::move(shape), [current, w = std::move(w), before_read] {
                     *current = at::Tensor();
                     if (before_read) before_read(w.parameter);
                     *current = w.hf_values();
                     return std::span<const std::byte>(static_cast<const std::byte*>(current->data_ptr()),
                                                       static_cast<std::size_t>(current->nbytes()));
                   }});
  }
  return out;
}

void visit_saved_parameters(const model::CausalLm& model, const ParameterReadHook& before_read) {
  for (const SavedWeight& w : saved_weights(model)) before_read(w.parameter);
}

bool is_weight_file_name(std::string_view name) {
  const bool shard = name.starts_with("model-") && name.ends_with(".safetensors");
  return name == "model.safetensors" || name == "model.safetensors.index.json" || shard;
}

namespace {

// Weight files an earlier save may have left: a stale model.safetensors would shadow new shards.
void remove_weight_files(const fs::path& dir) {
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (is_weight_file_name(entry.path().filename().string())) fs::remove(entry.path());
  }
}

std::string shard_name(std::size_t index, std::size_t count) {
  char name[64];
  std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", index + 1, count);
  return name;
}

void save_weights(const fs::path& dir, const std::vector<DeferredTensor>& weights, std::uint64_t max_shard_bytes) {
  std::vector<std::vector<DeferredTensor>> shards(1);
  std::uint64_t in_shard = 0, total = 0;
  for (const DeferredTensor& w : weights) {
    const std::uint64_t size = tensor_byte_count(w.dtype, w.shape);
    if (!shards.back().empty() && in_shard + size > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    in_shard += size;
    total += size;
    shards.back().push_back(w);
  }
  remove_weight_files(dir);
  const std::map<std::string, std::string> metadata{{"format", "pt"}};
  if (shards.size() == 1) {
    write_safetensors_streamed(dir / "model.safetensors", shards.front(), metadata);
    return;
  }
  json::Object weight_map;
  for (std::size_t i = 0; i < shards.size(); ++i) {
    const std::string name = shard_name(i, shards.size());
    write_safetensors_streamed(dir / name, shards[i], metadata);
    for (const DeferredTensor& w : shards[i]) weight_map.emplace_back(w.name, name);
  }
  std::sort(weight_map.begin(), weight_map.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const json::Value index(json::Object{{"metadata", json::Object{{"total_size", static_cast<std::int64_t>(total)}}},
                                       {"weight_map", std::move(weight_map)}});
  atomic_write(dir / "model.safetensors.index.json", json::write(index, 2) + "\n");
}

}  // namespace

void save_hf_model(const model::CausalLm& model, const fs::path& dir, const std::vector<fs::path>& tokenizer_files,
                   std::uint64_t max_shard_bytes, const ParameterReadHook& before_read) {
  if (max_shard_bytes == 0) throw std::invalid_argument("save_hf_model: max_shard_bytes must be positive");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw IoError("cannot create " + dir.string() + ": " + ec.message());
  for (const fs::path& file : tokenizer_files) {
    const std::string name = file.filename().string();
    if (name == "config.json" || name.ends_with(".safetensors") || name == "model.safetensors.index.json") {
      throw HfFormatError(file.string() + ": a tokenizer file may not be named " + file.filename().string());
    }
    atomic_write(dir / file.filename(), read_file(file));
  }
  save_weights(dir, deferred_hf_state_dict(model, before_read), max_shard_bytes);
  model::save_config(model->config(), dir);
}

}  // namespace llmrdzv::io
