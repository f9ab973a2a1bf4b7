// Opening and validating a safetensors file: mapping (or reading) it, then checking the header
// length, the JSON header and every tensor's dtype, shape and byte range before anything is used.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "llmrdzv/io/atomic_file.hpp"
#include "llmrdzv/io/json.hpp"
#include "llmrdzv/io/safetensors.hpp"

namespace llmrdzv::io {
namespace {

struct Mapping {
  void* address = nullptr;
  std::size_t length = 0;
  ~Mapping() {
    if (address) ::munmap(address, length);
  }
};

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

std::uint64_t read_le64(const std::byte* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<std::uint64_t>(p[i]);
  return v;
}

}  // namespace

std::uint64_t TensorInfo::numel() const {
  std::uint64_t n = 1;
  for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path, Mode mode) {
  if (mode == Mode::read) {
    std::vector<std::byte> bytes;
    try {
      bytes = read_file_bytes(path);
    } catch (const IoError& e) {
      throw SafetensorsError(e.what());
    }
    return from_bytes(std::move(bytes), path.string());
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // a FIFO must not block: refused below
  if (fd < 0) throw SafetensorsError(path.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw SafetensorsError(path.string() + ": not a regular file");
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->length = static_cast<std::size_t>(st.st_size);
  if (mapping->length > 0) {
    // Private and writable: tensors aliasing the map may be modified in memory (copy-on-write);
    // nothing ever reaches the file.
    void* address = ::mmap(nullptr, mapping->length, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    if (address == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      throw SafetensorsError(path.string() + ": cannot mmap: " + std::strerror(err));
    }
    mapping->address = address;
  }
  ::close(fd);
  SafetensorsFile file;
  file.origin_ = path.string();
  file.bytes_ = std::span(static_cast<const std::byte*>(mapping->address), mapping->length);
  file.storage_ = std::move(mapping);
  file.parse();
  return file;
}

SafetensorsFile SafetensorsFile::from_bytes(std::vector<std::byte> bytes, std::string origin) {
  auto owned = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  SafetensorsFile file;
  file.origin_ = std::move(origin);
  file.bytes_ = std::span<const std::byte>(owned->data(), owned->size());
  file.storage_ = std::move(owned);
  file.parse();
  return file;
}

void SafetensorsFile::parse() {
  auto fail = [&](const std::string& what) -> void { throw SafetensorsError(origin_ + ": " + what); };
  const std::uint64_t file_size = bytes_.size();
  if (file_size < 8) {
    fail("truncated: " + std::to_string(file_size) + " bytes, too short for the 8-byte header length");
  }
  const std::uint64_t header_len = read_le64(bytes_.data());
  if (header_len > kMaxHeaderBytes) {
    fail("header length " + std::to_string(header_len) + " exceeds the cap of " + std::to_string(kMaxHeaderBytes) +
         " bytes");
  }
  if (header_len > file_size - 8) {
    fail("truncated: header length " + std::to_string(header_len) + " runs past the end of the file (" +
         std::to_string(file_size) + " bytes)");
  }
  if (header_len < 2) fail("header length " + std::to_string(header_len) + " is too small for a JSON object");
  data_start_ = 8 + header_len;
  const std::uint64_t data_size = file_size - data_start_;

  json::Value header;
  try {
    header = json::parse(std::string_view(reinterpret_cast<const char*>(bytes_.data() + 8), header_len));
  } catch (const json::ParseError& e) {
    fail(std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail("header is a JSON " + std::string(header.kind_name()) + ", not an object");

  for (const auto& [name, entry] : header.as_object()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail("__metadata__ is not an object of strings");
      for (const auto& [key, value] : entry.as_object()) {
        if (!value.is_string()) fail("__metadata__ value of \"" + key + "\" is a " + std::string(value.kind_name()) + ", not a string");
        metadata_.emplace(key, value.as_string());
      }
      continue;
    }
    const std::string where = "tensor \"" + name + "\": ";
    if (!entry.is_object()) fail(where + "entry is not an object");
    const json::Value* dtype = entry.find("dtype");
    const json::Value* shape = entry.find("shape");
    const json::Value* offsets = entry.find("data_offsets");
    if (!dtype || !shape || !offsets) fail(where + "needs dtype, shape and data_offsets");
    TensorInfo info;
    info.name = name;
    if (!dtype->is_string()) fail(where + "dtype is not a string");
    if (!dtype_from_name(dtype->as_string(), info.dtype)) fail(where + "unknown dtype \"" + dtype->as_string() + "\"");
    if (!shape->is_array()) fail(where + "shape is not an array");
    std::uint64_t numel = 1;
    for (const json::Value& dim : shape->as_array()) {
      if (!dim.is_integer() || dim.as_integer() < 0) fail(where + "shape entries must be non-negative integers");
      info.shape.push_back(dim.as_integer());
      if (__builtin_mul_overflow(numel, static_cast<std::uint64_t>(dim.as_integer()), &numel)) {
        fail(where + "shape " + shape_text(info.shape) + " has too many elements");
      }
    }
    if (!offsets->is_array() || offsets->as_array().size() != 2 || !offsets->as_array()[0].is_integer() ||
        !offsets->as_array()[1].is_integer() || offsets->as_array()[0].as_integer() < 0 ||
        offsets->as_array()[1].as_integer() < 0) {
      fail(where + "data_offsets must be two non-negative integers [begin, end]");
    }
    info.begin = static_cast<std::uint64_t>(offsets->as_array()[0].as_integer());
    info.end = static_cast<std::uint64_t>(offsets->as_array()[1].as_integer());
    if (info.begin > info.end) {
      fail(where + "data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) + "] end before they begin");
    }
    if (info.end > data_size) {
      fail(where + "data_offsets [" + std::to_string(info.begin) + ", " + std::to_string(info.end) +
           "] extend past the end of the data section (" + std::to_string(data_size) + " bytes)");
    }
    std::uint64_t needed = 0;
    if (__builtin_mul_overflow(numel, static_cast<std::uint64_t>(dtype_size(info.dtype)), &needed) ||
        needed != info.end - info.begin) {
      fail(where + "shape " + shape_text(info.shape) + " of " + std::string(dtype_name(info.dtype)) + " needs " +
           std::to_string(numel) + " x " + std::to_string(dtype_size(info.dtype)) + " bytes but data_offsets span " +
           std::to_string(info.end - info.begin));
    }
    tensors_.push_back(std::move(info));
  }

  std::sort(tensors_.begin(), tensors_.end(),
            [](const TensorInfo& a, const TensorInfo& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  std::uint64_t covered = 0;
  for (std::size_t i = 0; i < tensors_.size(); ++i) {
    const TensorInfo& t = tensors_[i];
    if (t.begin < covered) {
      fail("tensors \"" + tensors_[i - 1].name + "\" and \"" + t.name + "\" overlap (bytes [" + std::to_string(t.begin) +
           ", " + std::to_string(std::min(covered, t.end)) + ") of the data section)");
    }
    if (t.begin > covered) {
      fail("gap in the data section: bytes [" + std::to_string(covered) + ", " + std::to_string(t.begin) +
           ") belong to no tensor");
    }
    covered = t.end;
  }
  if (covered != data_size) {
    fail(std::to_string(data_size - covered) + " trailing bytes after the last tensor (data section is " +
         std::to_string(data_size) + " bytes, tensors cover " + std::to_string(covered) + ")");
  }
}

const TensorInfo* SafetensorsFile::find(std::string_view name) const {
  for (const TensorInfo& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::span<const std::byte> SafetensorsFile::data(const TensorInfo& info) const {
  return bytes_.subspan(data_start_ + info.begin, info.end - info.begin);
}

}  // namespace llmrdzv::io
