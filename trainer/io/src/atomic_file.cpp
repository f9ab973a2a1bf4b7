// Temp-file + fsync + rename + directory-fsync writes, with errno-bearing errors.
#include "llmrdzv/io/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <sstream>
#include <utility>

#include "llmrdzv/io/unique_fd.hpp"

namespace llmrdzv::io {
namespace {

[[noreturn]] void fail_errno(const std::string& action, const std::filesystem::path& path, int err) {
  throw IoError("cannot " + action + " " + path.string() + ": " + std::strerror(err));
}

using Fd = UniqueFd;

void write_all(int fd, std::span<const std::byte> bytes, const std::filesystem::path& path) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno("write", path, errno);
    }
    bytes = bytes.subspan(static_cast<std::size_t>(n));
  }
}

std::filesystem::path temp_sibling(const std::filesystem::path& path) {
  static std::atomic<unsigned> counter{0};
  std::ostringstream name;
  name << '.' << path.filename().string() << ".tmp-" << ::getpid() << '-' << counter++;
  return path.parent_path() / name.str();
}

}  // namespace

void fsync_directory(const std::filesystem::path& dir) {
  const std::filesystem::path target = dir.empty() ? std::filesystem::path(".") : dir;
  Fd fd(::open(target.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) fail_errno("open directory", target, errno);
  if (::fsync(fd.get()) != 0) fail_errno("fsync directory", target, errno);
}

void atomic_write(const std::filesystem::path& path, const std::function<void(const ChunkSink&)>& produce) {
  const std::filesystem::path tmp = temp_sibling(path);
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) fail_errno("create", tmp, errno);
  try {
    produce([&](std::span<const std::byte> chunk) { write_all(fd.get(), chunk, tmp); });
    if (::fsync(fd.get()) != 0) fail_errno("fsync", tmp, errno);
    if (::close(fd.release()) != 0) fail_errno("close", tmp, errno);
    if (::rename(tmp.c_str(), path.c_str()) != 0) fail_errno("rename into place", path, errno);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw;
  }
  fsync_directory(path.parent_path());
}

void atomic_write(const std::filesystem::path& path, std::string_view contents) {
  atomic_write(path, [&](const ChunkSink& sink) { sink(std::as_bytes(std::span(contents.data(), contents.size()))); });
}

namespace {

// A whole file into `Buffer` (std::string or std::vector<std::byte>), sized once from fstat so
// the peak is the file's size, not the doubling a growing buffer goes through.
template <class Buffer>
Buffer read_whole(const std::filesystem::path& path) {
  // O_NONBLOCK: a FIFO at the path is refused below instead of blocking open() (regular files
  // read as usual).
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) fail_errno("open", path, errno);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_errno("stat", path, errno);
  if (!S_ISREG(st.st_mode)) throw IoError("cannot read " + path.string() + ": not a regular file");
  Buffer contents(static_cast<std::size_t>(st.st_size), typename Buffer::value_type{});
  std::size_t filled = 0;
  while (true) {
    if (filled == contents.size()) contents.resize(filled + (1 << 16));  // the file grew meanwhile
    const ssize_t n = ::read(fd.get(), reinterpret_cast<char*>(contents.data()) + filled, contents.size() - filled);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno("read", path, errno);
    }
    if (n == 0) break;
    filled += static_cast<std::size_t>(n);
  }
  contents.resize(filled);
  return contents;
}

}  // namespace

std::string read_file(const std::filesystem::path& path) { return read_whole<std::string>(path); }

std::vector<std::byte> read_file_bytes(const std::filesystem::path& path) {
  return read_whole<std::vector<std::byte>>(path);
}

}  // namespace llmrdzv::io
