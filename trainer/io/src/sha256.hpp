// Incremental SHA-256 (OpenSSL EVP) for checkpoint manifests.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>

namespace llmrdzv::io::detail {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(std::span<const std::byte> bytes);
  // Lower-case hex digest; the object cannot be updated afterwards.
  std::string hex_digest();

 private:
  struct Ctx;
  std::unique_ptr<Ctx> ctx_;
};

}  // namespace llmrdzv::io::detail
