// A private scratch directory for one test (port files, token files, child logs), removed when
// the test ends.
#pragma once

#include <filesystem>
#include <string>

namespace llmrdzv::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }
  // Writes `text` to name (mode 0600) and returns its path.
  std::string write(const std::string& name, const std::string& text) const;

 private:
  std::filesystem::path path_;
};

}  // namespace llmrdzv::testing
