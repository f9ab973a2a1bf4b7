// Our own safetensors reader and writer (torch-free core). A file is an 8-byte little-endian header
// length N, N bytes of JSON ({"name": {"dtype", "shape", "data_offsets": [begin, end]}, optional
// "__metadata__": {string: string}}) and the data section. Reading validates everything before a
// byte of tensor data is used: header length against the file size and a cap, well-formed JSON,
// known dtypes, shape x dtype size == byte range, ranges inside the data section, no overlaps, no
// gaps and no trailing bytes (what the reference implementation requires), string-only metadata.
// Every error is a SafetensorsError whose message starts with the file path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "llmrdzv/io/atomic_file.hpp"

namespace llmrdzv::io {

class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class Dtype { BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, I64, U64 };

std::string_view dtype_name(Dtype dtype);         // "F32", ...
std::size_t dtype_size(Dtype dtype);              // bytes per element
// Bytes of a tensor of this dtype and shape (no negative dimension).
std::uint64_t tensor_byte_count(Dtype dtype, std::span<const std::int64_t> shape);
bool dtype_from_name(std::string_view name, Dtype& out);

// Header cap: the reference implementation's 100 MB.
inline constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

struct TensorInfo {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;  // offsets relative to the data section
  std::uint64_t end = 0;
  std::uint64_t numel() const;
};

// A validated, read-only file: memory-mapped (zero-copy) or read into memory.
class SafetensorsFile {
 public:
  enum class Mode { mmap, read };

  // Throws SafetensorsError naming the path and the problem.
  static SafetensorsFile open(const std::filesystem::path& path, Mode mode = Mode::mmap);
  // Validates an in-memory file image (tests, and data that arrived over the network).
  static SafetensorsFile from_bytes(std::vector<std::byte> bytes, std::string origin);

  const std::string& origin() const { return origin_; }
  // Tensors in data order.
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // nullptr when absent.
  const TensorInfo* find(std::string_view name) const;
  // The tensor's bytes (little-endian, row-major); valid while this object or a copy of it lives.
  std::span<const std::byte> data(const TensorInfo& info) const;

  // Keeps the mapping alive for tensors that alias it (shared by copies of this object).
  std::shared_ptr<const void> storage() const { return storage_; }

 private:
  SafetensorsFile() = default;
  void parse();

  std::string origin_;
  std::shared_ptr<const void> storage_;
  std::span<const std::byte> bytes_;
  std::uint64_t data_start_ = 0;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::string> metadata_;
};

// One tensor to write: dtype, shape and its raw bytes (numel x dtype_size of them).
struct TensorBytes {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<std::int64_t> shape;
  std::span<const std::byte> bytes;
};

// The complete file image: header padded with spaces to a multiple of 8 bytes, data in the given
// order. Throws SafetensorsError on duplicate or empty names, "__metadata__" as a tensor name, or a
// byte count that does not match the shape.
std::vector<std::byte> serialize_safetensors(std::span<const TensorBytes> tensors,
                                             const std::map<std::string, std::string>& metadata = {});

// Streams serialize_safetensors' image into `sink` chunk by chunk, without building it in memory.
void stream_safetensors(const ChunkSink& sink, std::span<const TensorBytes> tensors,
                        const std::map<std::string, std::string>& metadata = {});

// Writes serialize_safetensors' image to path atomically (see atomic_file.hpp).
void write_safetensors(const std::filesystem::path& path, std::span<const TensorBytes> tensors,
                       const std::map<std::string, std::string>& metadata = {});

// One tensor of a streamed file: what the header says of it, and its bytes, fetched only when the
// writer reaches it (the span must stay valid until the next fetch).
struct DeferredTensor {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<std::int64_t> shape;
  std::function<std::span<const std::byte>()> fetch;
};

// stream_safetensors for tensors that need not exist all at once (a model exported unit by unit):
// the header first, then each tensor fetched in order and passed to `sink`. Throws
// SafetensorsError as serialize_safetensors does, and when a fetch returns another byte count
// than the header gave it.
void stream_deferred_safetensors(const ChunkSink& sink, std::span<const DeferredTensor> tensors,
                                 const std::map<std::string, std::string>& metadata = {});

// write_safetensors for tensors that need not exist all at once (a model exported unit by unit):
// the header first, then each tensor fetched in order, written and let go. Throws SafetensorsError
// as write_safetensors does, and when a fetch returns another byte count than the header gave it;
// then the file is not created.
void write_safetensors_streamed(const std::filesystem::path& path, std::span<const DeferredTensor> tensors,
                                const std::map<std::string, std::string>& metadata = {});

}  // namespace llmrdzv::io
