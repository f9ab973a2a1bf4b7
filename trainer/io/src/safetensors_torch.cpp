// at::Tensor on top of the torch-free safetensors core: dtype mapping, zero-copy views over the
// file's memory, and byte views of tensors for writing.
#include "llmrdzv/io/safetensors_torch.hpp"

#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>

#include <cstring>

namespace llmrdzv::io {
namespace {

struct DtypePair {
  Dtype dtype;
  at::ScalarType scalar;
};

constexpr DtypePair kPairs[] = {
    {Dtype::BOOL, at::kBool},      {Dtype::U8, at::kByte},        {Dtype::I8, at::kChar},
    {Dtype::F8_E5M2, at::kFloat8_e5m2}, {Dtype::F8_E4M3, at::kFloat8_e4m3fn}, {Dtype::I16, at::kShort},
    {Dtype::U16, at::kUInt16},     {Dtype::F16, at::kHalf},       {Dtype::BF16, at::kBFloat16},
    {Dtype::I32, at::kInt},        {Dtype::U32, at::kUInt32},     {Dtype::F32, at::kFloat},
    {Dtype::F64, at::kDouble},     {Dtype::I64, at::kLong},       {Dtype::U64, at::kUInt64},
};

}  // namespace

Dtype dtype_of(at::ScalarType type) {
  for (const DtypePair& p : kPairs) {
    if (p.scalar == type) return p.dtype;
  }
  throw SafetensorsError(std::string("safetensors cannot store tensors of type ") + c10::toString(type));
}

at::ScalarType scalar_type_of(Dtype dtype) {
  for (const DtypePair& p : kPairs) {
    if (p.dtype == dtype) return p.scalar;
  }
  throw SafetensorsError("no torch type for safetensors dtype " + std::string(dtype_name(dtype)));
}

at::Tensor tensor_from(const SafetensorsFile& file, const TensorInfo& info, bool alias) {
  const std::span<const std::byte> bytes = file.data(info);
  const auto options = at::TensorOptions().dtype(scalar_type_of(info.dtype)).device(at::kCPU);
  const auto address = reinterpret_cast<std::uintptr_t>(bytes.data());
  if (alias && address % dtype_size(info.dtype) == 0) {
    std::shared_ptr<const void> keep = file.storage();
    return at::from_blob(const_cast<std::byte*>(bytes.data()), info.shape,
                         [keep](void*) mutable { keep.reset(); }, options);
  }
  at::Tensor out = at::empty(info.shape, options);
  if (!bytes.empty()) std::memcpy(out.data_ptr(), bytes.data(), bytes.size());
  return out;
}

NamedTensors read_tensors(const SafetensorsFile& file, bool alias) {
  NamedTensors out;
  out.reserve(file.tensors().size());
  for (const TensorInfo& info : file.tensors()) out.emplace_back(info.name, tensor_from(file, info, alias));
  return out;
}

std::vector<TensorBytes> tensor_bytes(const NamedTensors& tensors, std::vector<at::Tensor>& keep) {
  std::vector<TensorBytes> views;
  views.reserve(tensors.size());
  keep.reserve(keep.size() + tensors.size());
  for (const auto& [name, tensor] : tensors) {
    if (!tensor.defined()) throw SafetensorsError("tensor \"" + name + "\" is undefined");
    const Dtype dtype = dtype_of(tensor.scalar_type());
    at::Tensor cpu = tensor.detach().to(at::kCPU).contiguous();
    keep.push_back(cpu);
    const auto* data = static_cast<const std::byte*>(cpu.data_ptr());
    views.push_back({name, dtype, cpu.sizes().vec(),
                     std::span<const std::byte>(data, static_cast<std::size_t>(cpu.nbytes()))});
  }
  return views;
}

void save_tensors(const std::filesystem::path& path, const NamedTensors& tensors,
                  const std::map<std::string, std::string>& metadata) {
  std::vector<at::Tensor> keep;
  const std::vector<TensorBytes> views = tensor_bytes(tensors, keep);
  write_safetensors(path, views, metadata);
}

}  // namespace llmrdzv::io
