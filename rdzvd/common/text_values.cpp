// Parsers of small textual values (see text_values.hpp).
#include "llmrdzv/common/text_values.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
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
  // O_NONBLOCK: a FIFO planted at the path must not hold the reader in open().
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) throw std::runtime_error("cannot read '" + path + "': " + std::strerror(errno));
  struct stat info {};
  const bool regular = fstat(fd, &info) == 0 && S_ISREG(info.st_mode);
  const bool owned = !required_owner || (info.st_uid == *required_owner && (info.st_mode & 077) == 0);
  std::string secret;
  if (regular && owned) {
    char buffer[4096];
    ssize_t n = 0;
    while (secret.size() <= kMaxSecretBytes && (n = read(fd, buffer, sizeof buffer)) > 0) {
      secret.append(buffer, std::size_t(n));
    }
  }
  close(fd);
  if (!regular) throw std::runtime_error("'" + path + "' is not a regular file");
  if (!owned) {
    throw std::runtime_error("'" + path + "' must be owned by uid " + std::to_string(*required_owner) +
                             " with no group or other permissions (chmod 600)");
  }
  if (secret.size() > kMaxSecretBytes) throw std::runtime_error("'" + path + "' is larger than 64 KiB");
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) secret.pop_back();
  if (secret.empty()) throw std::runtime_error("'" + path + "' is empty");
  return secret;
}

}  // namespace llmrdzv
