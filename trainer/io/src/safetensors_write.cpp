// Writing safetensors: the JSON header (padded with spaces to 8-byte alignment) and the tensors'
// bytes in the caller's order, as one image, streamed into an atomic file, or fetched tensor by
// tensor as the file is written.
#include <cstring>
#include <set>

#include "llmrdzv/io/atomic_file.hpp"
#include "llmrdzv/io/json.hpp"
#include "llmrdzv/io/safetensors.hpp"

namespace llmrdzv::io {
namespace {

// What the header says of one tensor; `bytes`: how many the caller has for it.
struct HeaderEntry {
  const std::string& name;
  Dtype dtype;
  const std::vector<std::int64_t>& shape;
  std::uint64_t bytes;
};

// The 8-byte length prefix followed by the padded header.
std::vector<std::byte> header_bytes(std::span<const HeaderEntry> tensors,
                                    const std::map<std::string, std::string>& metadata) {
  json::Object header;
  if (!metadata.empty()) {
    json::Object meta;
    for (const auto& [k, v] : metadata) meta.emplace_back(k, json::Value(v));
    header.emplace_back("__metadata__", json::Value(std::move(meta)));
  }
  std::set<std::string_view> names;
  std::uint64_t offset = 0;
  for (const HeaderEntry& t : tensors) {
    if (t.name.empty()) throw SafetensorsError("safetensors writer: empty tensor name");
    if (t.name == "__metadata__") throw SafetensorsError("safetensors writer: \"__metadata__\" is reserved");
    if (!names.insert(t.name).second) throw SafetensorsError("safetensors writer: duplicate tensor \"" + t.name + "\"");
    json::Array shape;
    for (std::int64_t d : t.shape) {
      if (d < 0) throw SafetensorsError("safetensors writer: tensor \"" + t.name + "\" has a negative dimension");
      shape.emplace_back(d);
    }
    const std::uint64_t need = tensor_byte_count(t.dtype, t.shape);
    if (need != t.bytes) {
      throw SafetensorsError("safetensors writer: tensor \"" + t.name + "\" has " + std::to_string(t.bytes) +
                             " bytes, its shape and dtype need " + std::to_string(need));
    }
    const std::uint64_t end = offset + t.bytes;
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

std::vector<std::byte> header_bytes(std::span<const TensorBytes> tensors,
                                    const std::map<std::string, std::string>& metadata) {
  std::vector<HeaderEntry> entries;
  entries.reserve(tensors.size());
  for (const TensorBytes& t : tensors) entries.push_back({t.name, t.dtype, t.shape, t.bytes.size()});
  return header_bytes(std::span<const HeaderEntry>(entries), metadata);
}

}  // namespace

std::uint64_t tensor_byte_count(Dtype dtype, std::span<const std::int64_t> shape) {
  std::uint64_t numel = 1;
  for (std::int64_t d : shape) numel *= static_cast<std::uint64_t>(d);
  return numel * dtype_size(dtype);
}

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

void stream_deferred_safetensors(const ChunkSink& sink, std::span<const DeferredTensor> tensors,
                                 const std::map<std::string, std::string>& metadata) {
  std::vector<HeaderEntry> entries;
  entries.reserve(tensors.size());
  for (const DeferredTensor& t : tensors) {
    for (std::int64_t d : t.shape) {
      if (d < 0) throw SafetensorsError("safetensors writer: tensor \"" + t.name + "\" has a negative dimension");
    }
    entries.push_back({t.name, t.dtype, t.shape, tensor_byte_count(t.dtype, t.shape)});
  }
  sink(header_bytes(std::span<const HeaderEntry>(entries), metadata));
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const std::span<const std::byte> bytes = tensors[i].fetch();
    if (bytes.size() != entries[i].bytes) {
      throw SafetensorsError("safetensors writer: tensor \"" + tensors[i].name + "\" came with " +
                             std::to_string(bytes.size()) + " bytes, its header entry has " +
                             std::to_string(entries[i].bytes));
    }
    sink(bytes);
  }
}

void write_safetensors_streamed(const std::filesystem::path& path, std::span<const DeferredTensor> tensors,
                                const std::map<std::string, std::string>& metadata) {
  atomic_write(path, [&](const ChunkSink& sink) { stream_deferred_safetensors(sink, tensors, metadata); });
}

}  // namespace llmrdzv::io
