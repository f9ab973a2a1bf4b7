// HfWeights: the weight files behind a model.safetensors or its index, their tensors matched to
// the model's parameters and checked (hf_weights.hpp), and the copies out of them.
#include "llmrdzv/io/hf_weights.hpp"

#include <ATen/ops/equal.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "llmrdzv/io/hf_model_dir.hpp"
#include "llmrdzv/io/json.hpp"
#include "llmrdzv/io/safetensors_torch.hpp"

namespace llmrdzv::io {
namespace {

namespace fs = std::filesystem;

std::string shape_text(at::IntArrayRef shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

bool is_floating(Dtype d) { return d == Dtype::F32 || d == Dtype::F16 || d == Dtype::BF16 || d == Dtype::F64; }

// The weight files behind `path`: the file itself, or the shards a model.safetensors.index.json
// names (plain file names next to it, each holding the tensors its weight_map assigns to it).
std::vector<fs::path> weight_files(const fs::path& path, std::map<fs::path, std::vector<std::string>>& expected) {
  if (!path.string().ends_with(".index.json")) return {path};
  auto fail = [&](const std::string& what) -> void { throw HfFormatError(path.string() + ": " + what); };
  json::Value doc;
  try {
    doc = json::parse(read_file(path));
  } catch (const json::ParseError& e) {
    fail(std::string("not valid JSON: ") + e.what());
  }
  const json::Value* map = doc.is_object() ? doc.find("weight_map") : nullptr;
  if (!map || !map->is_object()) fail("no \"weight_map\" object");
  std::vector<fs::path> files;
  for (const auto& [name, file] : map->as_object()) {
    if (!file.is_string() || file.as_string().empty() || file.as_string().find('/') != std::string::npos) {
      fail("weight_map entry \"" + name + "\" is not a plain file name");
    }
    const fs::path shard = path.parent_path() / file.as_string();
    if (!expected.count(shard)) files.push_back(shard);
    expected[shard].push_back(name);
  }
  return files;
}

}  // namespace

HfWeights::HfWeights(const model::CausalLm& model, const fs::path& weights_path) {
  std::map<fs::path, std::vector<std::string>> expected_by_shard;
  const std::vector<fs::path> paths = weight_files(weights_path, expected_by_shard);
  std::map<std::string, at::Tensor> params;
  for (const auto& item : model->named_parameters()) params.emplace(item.key(), item.value());
  const bool tied = model->config().tie_word_embeddings();
  const std::string prefix(model->hf_prefix()), embedding = model->embedding_name();
  const std::string family(model->config().model_type());
  std::optional<Entry> lm_head;  // tied: a copy of the embedding some files carry, checked against it

  for (const fs::path& path : paths) {
    files_.push_back(SafetensorsFile::open(path, SafetensorsFile::Mode::mmap));
    const SafetensorsFile& file = files_.back();
    auto fail = [&](const std::string& what) { throw HfFormatError(path.string() + ": " + what); };
    for (const std::string& name : expected_by_shard[path]) {
      if (!file.find(name)) fail("tensor \"" + name + "\" listed in " + weights_path.filename().string() + " is not in this shard");
    }
    for (const TensorInfo& info : file.tensors()) {
      if (model->hf_ignored(info.name)) continue;
      if (tied && info.name == "lm_head.weight") {
        lm_head = Entry{files_.size() - 1, info.name, false};
        continue;
      }
      const std::string name =
          info.name.starts_with(prefix) || info.name == "lm_head.weight" ? info.name : prefix + info.name;
      const auto it = params.find(name);
      if (it == params.end()) fail("unexpected tensor \"" + info.name + "\" (not a parameter of this " + family + " model)");
      if (entries_.contains(name)) {
        fail("tensor \"" + name + "\" appears twice (with and without the " + prefix + " prefix, or in two shards)");
      }
      if (!is_floating(info.dtype)) fail("tensor \"" + info.name + "\" has dtype " + std::string(dtype_name(info.dtype)) + ", not a float type");
      const bool transposed = model->hf_transposed(name);
      std::vector<std::int64_t> expected = it->second.sizes().vec();
      if (transposed) std::swap(expected[0], expected[1]);
      if (info.shape != expected) {
        fail("tensor \"" + info.name + "\" has shape " + shape_text(info.shape) + ", config.json implies " +
             shape_text(expected) + (transposed ? " (Conv1D [in, out])" : ""));
      }
      entries_.emplace(name, Entry{files_.size() - 1, info.name, transposed});
    }
  }
  for (const auto& [name, param] : params) {
    if (!entries_.contains(name)) throw HfFormatError(weights_path.string() + ": missing tensor \"" + name + "\"");
  }
  if (lm_head) {
    const Entry& wte = entries_.at(embedding);
    const at::ScalarType type = params.at(embedding).scalar_type();
    const auto values = [&](const Entry& e) {
      const SafetensorsFile& file = files_[e.file];
      return tensor_from(file, *file.find(e.tensor), /*alias=*/true).to(type);
    };
    const at::Tensor head = values(*lm_head), table = values(wte);
    if (head.sizes() != table.sizes() || !at::equal(head, table)) {
      throw HfFormatError(weights_path.string() + ": lm_head.weight differs from " + embedding +
                          ", but the config ties them (tie_word_embeddings is true): set \"tie_word_embeddings\": "
                          "false in config.json for a model with its own LM head");
    }
  }
}

void HfWeights::copy(const SafetensorsFile& file, const Entry& entry, const at::Tensor& values) const {
  at::NoGradGuard no_grad;
  const at::Tensor source = tensor_from(file, *file.find(entry.tensor), /*alias=*/true);
  values.copy_(entry.transposed ? source.t() : source);
}

void HfWeights::read(const std::string& name, const at::Tensor& values) const {
  const auto it = entries_.find(name);
  if (it == entries_.end()) throw HfFormatError("no weights were checked for parameter \"" + name + "\"");
  copy(files_[it->second.file], it->second, values);
}

void HfWeights::read_all(model::CausalLm& model, SafetensorsFile::Mode mode) const {
  std::vector<std::vector<std::pair<const Entry*, at::Tensor>>> by_file(files_.size());
  for (auto& item : model->named_parameters()) {
    const Entry& entry = entries_.at(item.key());
    by_file[entry.file].emplace_back(&entry, item.value());
  }
  for (std::size_t f = 0; f < files_.size(); ++f) {
    const SafetensorsFile file = mode == SafetensorsFile::Mode::mmap ? files_[f] : SafetensorsFile::open(files_[f].origin(), mode);
    for (const auto& [entry, parameter] : by_file[f]) copy(file, *entry, parameter);
  }
}

}  // namespace llmrdzv::io
