// Parsers of small textual values (see text_values.hpp).
#include "llmrdzv/common/text_values.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <functional>
#include <stdexcept>

namespace llmrdzv {
namespace {

template <class T>
std::optional<T> parse_whole(std::string_view text, T min, T max) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end || value < min || value > max) return std::nullopt;
  return value;
}

constexpr std::size_t kMaxSecretBytes = 64 * 1024;

// Opens `path` (O_NONBLOCK: a FIFO planted there must not hold the reader in open()), requires a
// regular file that passes `check`, and reads at most max_bytes of it.
std::string read_checked(const std::string& path, std::size_t max_bytes, int flags,
                         const std::function<void(const struct stat&)>& check) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | flags);
  if (fd < 0) throw std::runtime_error("cannot read '" + path + "': " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { close(fd); }
  } closer{fd};
  struct stat info {};
  if (fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) throw std::runtime_error("'" + path + "' is not a regular file");
  check(info);
  std::string content;
  char buffer[4096];
  ssize_t n = 0;
  while (content.size() <= max_bytes && (n = read(fd, buffer, sizeof buffer)) > 0) content.append(buffer, std::size_t(n));
  if (n < 0) throw std::runtime_error("cannot read '" + path + "': " + std::strerror(errno));
  if (content.size() > max_bytes) {
    throw std::runtime_error("'" + path + "' is larger than " +
                             (max_bytes % 1024 == 0 ? std::to_string(max_bytes / 1024) + " KiB" : std::to_string(max_bytes) + " bytes"));
  }
  return content;
}

}  // namespace

std::optional<std::uint64_t> parse_unsigned(std::string_view text, std::uint64_t min, std::uint64_t max) {
  return parse_whole<std::uint64_t>(text, min, max);
}

std::optional<std::int64_t> parse_signed(std::string_view text, std::int64_t min, std::int64_t max) {
  return parse_whole<std::int64_t>(text, min, max);
}

std::optional<HostPort> parse_host_port(std::string_view text, std::uint16_t min_port) {
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return std::nullopt;
  const std::string_view host = text.substr(0, colon);
  if (host.front() == '[' && host.back() != ']') return std::nullopt;
  const auto port = parse_unsigned(text.substr(colon + 1), min_port, 65535);
  if (!port) return std::nullopt;
  return HostPort{std::string(host), std::uint16_t(*port)};
}

std::string read_secret_file(const std::string& path, std::optional<unsigned> required_owner) {
  std::string secret = read_checked(path, kMaxSecretBytes, O_NOFOLLOW, [&](const struct stat& info) {
    if (required_owner && (info.st_uid != *required_owner || (info.st_mode & 077) != 0)) {
      throw std::runtime_error("'" + path + "' must be owned by uid " + std::to_string(*required_owner) +
                               " with no group or other permissions (chmod 600)");
    }
  });
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) secret.pop_back();
  if (secret.empty()) throw std::runtime_error("'" + path + "' is empty");
  return secret;
}

std::string read_regular_file(const std::string& path, std::size_t max_bytes) {
  return read_checked(path, max_bytes, 0, [](const struct stat&) {});
}

}  // namespace llmrdzv
