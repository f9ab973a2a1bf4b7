// Site secret reader (see site_secret.hpp).
#include "site_secret.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>

#include "args.hpp"

namespace llmrdzv::spank {

std::string read_site_secret(const std::string& path, unsigned expected_owner) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw ArgError("secret_file " + path + ": " + std::strerror(errno));
  struct stat info {};
  std::string secret;
  const bool stat_ok = fstat(fd, &info) == 0;
  if (stat_ok && S_ISREG(info.st_mode) && info.st_uid == expected_owner && (info.st_mode & 077) == 0) {
    char buffer[4096];
    ssize_t n = 0;
    while ((n = read(fd, buffer, sizeof buffer)) > 0 && secret.size() < 65536) secret.append(buffer, std::size_t(n));
  }
  close(fd);
  if (!stat_ok || !S_ISREG(info.st_mode)) throw ArgError("secret_file " + path + ": not a regular file");
  if (info.st_uid != expected_owner || (info.st_mode & 077) != 0) {
    throw ArgError("secret_file " + path + ": must be owned by uid " + std::to_string(expected_owner) +
                   " with no group or other permissions (chmod 600)");
  }
  // Trailing whitespace is not part of the secret, exactly as rdzvd reads the same file.
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) secret.pop_back();
  if (secret.empty()) throw ArgError("secret_file " + path + ": empty");
  return secret;
}

}  // namespace llmrdzv::spank
