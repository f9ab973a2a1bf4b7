// Crash-safe file replacement: write a temporary sibling, fsync it, rename it over the target and
// fsync the directory, so a reader sees the old file or the complete new one, never a torn one.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <span>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace llmrdzv::io {

class IoError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Receives the open temporary file's chunks; call it as often as needed.
using ChunkSink = std::function<void(std::span<const std::byte>)>;

// Creates `path` atomically from whatever `produce` writes into the sink. If produce throws, the
// temporary file is removed and the old `path` (if any) is left untouched. Throws IoError naming
// the path and errno text on any system-call failure.
void atomic_write(const std::filesystem::path& path, const std::function<void(const ChunkSink&)>& produce);
void atomic_write(const std::filesystem::path& path, std::string_view contents);

// fsync a directory (after creating, renaming or removing entries in it).
void fsync_directory(const std::filesystem::path& dir);

// Reads a whole file; IoError naming the path when it cannot.
std::string read_file(const std::filesystem::path& path);
std::vector<std::byte> read_file_bytes(const std::filesystem::path& path);

}  // namespace llmrdzv::io
