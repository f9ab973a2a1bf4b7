// Writing safetensors: the JSON header (padded with spaces to 8-byte alignment) and the tensors'
// bytes in the caller's order, as one image or streamed into an atomic file.
#include <cstring>
#include <set>

#include "llmrdzv/io/atomic_file.hpp"
#include "llmrdzv/io/json.hpp"
#include "llmrdzv/io/safetensors.hpp"

namespace llmrdzv::io {
namespace {

// The 8-byte length prefix followed by the padded header.
std::vector<std::byte> header_bytes(std::span<const TensorBytes> tensors,
                                    const std::map<std::string, std::string>& metadata) {
  json::Object header;
  if (!metadata.empty()) {
    json::Object meta;
    for (const auto& [k, v] : metadata) meta.emplace_back(k, json::Value(v));
    header.emplace_back("__metadata__", json::Value(std::move(meta)));
  }
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const TensorBytes& t : tensors) {
    if (t.name.empty()) throw SafetensorsError("safetensors writer: empty tensor name");
    if (t.name == "__metadata__") throw SafetensorsError("safetensors writer: \"__metadata__\" is reserved");
    if (!names.insert(t.name).second) throw SafetensorsError("safetensors writer: duplicate tensor \"" + t.name + "\"");
    std::uint64_t numel = 1;
    json::Array shape;
    for (std::int64_t d : t.shape) {
      if (d < 0) throw SafetensorsError("safetensors writer: tensor \"" + t.name + "\" has a negative dimension");
      numel *= static_cast<std::uint64_t>(d);
      shape.emplace_back(d);
    }
    if (numel * dtype_size(t.dtype) != t.bytes.size()) {
      throw SafetensorsError("safetensors writer: tensor \"" + t.name + "\" has " + std::to_string(t.bytes.size()) +
                             " bytes, its shape and dtype need " + std::to_string(numel * dtype_size(t.dtype)));
    }
    const std::uint64_t end = offset + t.bytes.size();
    json::Object entry;
    entry.emplace_back("dtype", json::Value(std::string(dtype_name(t.dtype))));
    entry.emplace_back("shape", json::Value(std::move(shape)));
    entry.emplace_back("data_offsets", json::Value(json::Array{json::Value(static_cast<std::int64_t>(offset)),
                                                               json::Value(static_cast<std::int64_t>(end))}));
    header.emplace_back(t.name, json::Value(std::move(entry)));
    offset = end;
  }
  std::string text = json::write(json::Value(std::move(header)));
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<std::byte> out(8 + text.size());
  std::uint64_t len = text.size();
  for (int i = 0; i < 8; ++i) out[static_cast<std::size_t>(i)] = static_cast<std::byte>((len >> (8 * i)) & 0xFF);
  std::memcpy(out.data() + 8, text.data(), text.size());
  return out;
}

}  // namespace

std::vector<std::byte> serialize_safetensors(std::span<const TensorBytes> tensors,
                                             const std::map<std::string, std::string>& metadata) {
  std::vector<std::byte> out = header_bytes(tensors, metadata);
  for (const TensorBytes& t : tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  return out;
}

void stream_safetensors(const ChunkSink& sink, std::span<const TensorBytes> tensors,
                        const std::map<std::string, std::string>& metadata) {
  sink(header_bytes(tensors, metadata));
  for (const TensorBytes& t : tensors) sink(t.bytes);
}

void write_safetensors(const std::filesystem::path& path, std::span<const TensorBytes> tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::vector<std::byte> header = header_bytes(tensors, metadata);  // validate before creating the file
  atomic_write(path, [&](const ChunkSink& sink) {
    sink(header);
    for (const TensorBytes& t : tensors) sink(t.bytes);
  });
}

}  // namespace llmrdzv::io
