// Bridges the torch-free safetensors core and at::Tensor: tensors from a validated file (aliasing
// the memory map for --low_cpu_mem_usage, or copied) and named tensors written to a file.
#pragma once

#include <ATen/core/Tensor.h>

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "llmrdzv/io/safetensors.hpp"

namespace llmrdzv::io {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

// at::ScalarType <-> safetensors dtype; SafetensorsError for types safetensors cannot hold.
Dtype dtype_of(at::ScalarType type);
at::ScalarType scalar_type_of(Dtype dtype);

// A CPU tensor for `info`. alias=true: a view on the file's memory that keeps the mapping alive
// (writes to it stay private to this process, copy-on-write; a misaligned tensor is copied);
// alias=false: an owned copy.
at::Tensor tensor_from(const SafetensorsFile& file, const TensorInfo& info, bool alias);

// Every tensor of the file, in data order.
NamedTensors read_tensors(const SafetensorsFile& file, bool alias);

// Byte views of the tensors for the torch-free writer. The tensors are moved to the CPU and made
// contiguous first; `keep` holds those copies and must outlive the returned views.
std::vector<TensorBytes> tensor_bytes(const NamedTensors& tensors, std::vector<at::Tensor>& keep);

// Writes the tensors (any device; made contiguous on the CPU) atomically.
void save_tensors(const std::filesystem::path& path, const NamedTensors& tensors,
                  const std::map<std::string, std::string>& metadata = {});

}  // namespace llmrdzv::io
