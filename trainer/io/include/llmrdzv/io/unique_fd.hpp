// An owned POSIX file descriptor, closed when it goes: for the trainer's raw-fd file code (atomic
// writes, token cache shards), where a leaked descriptor on an error path would pile up.
#pragma once

#include <unistd.h>

#include <utility>

namespace llmrdzv::io {

class UniqueFd {
 public:
  explicit UniqueFd(int fd = -1) : fd_(fd) {}
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Gives up ownership (e.g. to close() it and check the result).
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

}  // namespace llmrdzv::io
