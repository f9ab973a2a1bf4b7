// A model's weights in Hugging Face safetensors files, checked against the model before any value
// is copied, then read one parameter at a time: what load_hf_weights does for a whole model, and
// what a model built without its values (model::WeightInit::deferred, ZeRO-3) reads unit by unit
// so that no rank ever holds all of it. The files are memory-mapped; only a parameter being read
// is touched.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "llmrdzv/io/safetensors.hpp"
#include "llmrdzv/model/causal_lm.hpp"

namespace llmrdzv::io {

class HfWeights {
 public:
  // `weights_path`: a model.safetensors in HF layout, or a model.safetensors.index.json and the
  // shards it names beside it. Checks every tensor against `model` (whose parameters need shapes,
  // not values): names with or without the base model's prefix, no unexpected or repeated tensor,
  // float types, the shapes its config implies (transposed where the family stores them so),
  // none missing, the buffers old checkpoints carry ignored, and with a tied head a
  // lm_head.weight equal to the token embedding. Throws HfFormatError naming the file and tensor.
  HfWeights(const model::CausalLm& model, const std::filesystem::path& weights_path);

  // Copies parameter `name`'s values (a key of the model's named_parameters(); HF's transposed
  // layout undone) into `values`, a tensor of its shape of any float type and device.
  void read(const std::string& name, const at::Tensor& values) const;

  // Every parameter of the model (the one checked) filled in place, file by file: each file read
  // whole into memory first (Mode::read), or copied from the mapping (Mode::mmap).
  void read_all(model::CausalLm& model, SafetensorsFile::Mode mode) const;

 private:
  struct Entry {
    std::size_t file = 0;  // index into files_
    std::string tensor;    // its name in the file
    bool transposed = false;
  };
  void copy(const SafetensorsFile& file, const Entry& entry, const at::Tensor& values) const;

  std::vector<SafetensorsFile> files_;  // mapped, in the order the index names them
  std::map<std::string, Entry> entries_;  // by parameter name
};

}  // namespace llmrdzv::io
