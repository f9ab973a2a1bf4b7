// Temporary directories and whole-file reads/writes for the trainer tests.
#pragma once

#include <string>

namespace trainer_test {

// A fresh directory under /tmp, removed with the object.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

void write_file(const std::string& path, const std::string& contents);
std::string read_file(const std::string& path);

}  // namespace trainer_test
