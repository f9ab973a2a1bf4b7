// Incremental SHA-256 (OpenSSL underneath, no OpenSSL types here): the fingerprints that key the
// token cache (the tokenizer's and the corpus sources') and the checksums of checkpoint files.
#pragma once

#include <array>
#include <cstdint>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>

namespace llmrdzv::io {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  Sha256& update(std::string_view bytes);
  Sha256& update(std::span<const std::byte> bytes);
  Sha256& update_u64(std::uint64_t value);  // 8 bytes little-endian
  std::array<std::uint8_t, 32> digest();
  std::string hex_digest();

 private:
  struct Context;
  std::unique_ptr<Context> context_;
};

// 64 lowercase hex characters of 32 bytes, and back (nullopt-free: throws std::invalid_argument).
std::string to_hex(const std::array<std::uint8_t, 32>& bytes);
std::array<std::uint8_t, 32> from_hex(std::string_view hex);

}  // namespace llmrdzv::io
