// Scratch files for tests: a private directory per test (mkdtemp, removed with the object), files
// written into it, and the one-byte damage that corruption tests inflict. Shared by every test
// binary (the Catch2 main library puts this folder on their include path).
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace llmrdzv::testing {

class ScratchDir {
 public:
  // A new directory <temp>/llmrdzv-<tag>-XXXXXX.
  explicit ScratchDir(std::string_view tag = "test") {
    std::string pattern = (std::filesystem::temp_directory_path() / ("llmrdzv-" + std::string(tag) + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }
  // The path of `name` inside, as a string (for argv and environment values).
  std::string file(std::string_view name) const { return (path_ / name).string(); }

  // Writes `bytes` to `name` (parent folders created; mode 0600: tests keep tokens and secrets in
  // these files) and returns its path.
  std::string write(std::string_view name, std::string_view bytes) const {
    const std::filesystem::path target = path_ / name;
    std::filesystem::create_directories(target.parent_path());
    const int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    const bool written = fd >= 0 && ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    if (fd >= 0) ::close(fd);
    if (!written) throw std::runtime_error("cannot write " + target.string());
    return target.string();
  }

 private:
  std::filesystem::path path_;
};

// The whole file as bytes; throws if it cannot be opened.
inline std::string read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + file.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// XORs the byte at `offset` with 0x5A: a corruption any checksum must notice.
inline void flip_byte(const std::filesystem::path& file, std::streamoff offset) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  if (!f) throw std::runtime_error("cannot open " + file.string());
  char c = 0;
  f.seekg(offset);
  f.read(&c, 1);
  c = static_cast<char>(c ^ 0x5A);
  f.seekp(offset);
  f.write(&c, 1);
}

}  // namespace llmrdzv::testing
