// mkdtemp-based scratch directories (see temp_dir.hpp).
#include "temp_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <stdexcept>
#include <system_error>

namespace llmrdzv::testing {

TempDir::TempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "llmrdzv-it-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed for " + pattern);
  path_ = pattern;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string TempDir::write(const std::string& name, const std::string& text) const {
  const std::string target = file(name);
  const int fd = open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ::write(fd, text.data(), text.size()) != ssize_t(text.size())) {
    if (fd >= 0) close(fd);
    throw std::runtime_error("cannot write " + target);
  }
  close(fd);
  return target;
}

}  // namespace llmrdzv::testing
