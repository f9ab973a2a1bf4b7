// SHA-256 over OpenSSL's EVP interface (see sha256.hpp).
#include "llmrdzv/io/sha256.hpp"

#include <openssl/evp.h>

#include <stdexcept>

namespace llmrdzv::io {

struct Sha256::Context {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Context() { EVP_MD_CTX_free(ctx); }
};

Sha256::Sha256() : context_(std::make_unique<Context>()) {
  if (context_->ctx == nullptr || EVP_DigestInit_ex(context_->ctx, EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256: OpenSSL could not initialise a digest");
  }
}

Sha256::~Sha256() = default;

Sha256& Sha256::update(std::string_view bytes) {
  return update(std::as_bytes(std::span(bytes.data(), bytes.size())));
}

Sha256& Sha256::update(std::span<const std::byte> bytes) {
  if (EVP_DigestUpdate(context_->ctx, bytes.data(), bytes.size()) != 1) {
    throw std::runtime_error("SHA-256: OpenSSL could not hash the data");
  }
  return *this;
}

Sha256& Sha256::update_u64(std::uint64_t value) {
  char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(value >> (8 * i));
  return update(std::string_view(bytes, 8));
}

std::array<std::uint8_t, 32> Sha256::digest() {
  std::array<std::uint8_t, 32> out{};
  unsigned length = 0;
  if (EVP_DigestFinal_ex(context_->ctx, out.data(), &length) != 1 || length != out.size()) {
    throw std::runtime_error("SHA-256: OpenSSL could not finish the digest");
  }
  return out;
}

std::string Sha256::hex_digest() { return to_hex(digest()); }

std::string to_hex(const std::array<std::uint8_t, 32>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (const std::uint8_t b : bytes) {
    hex.push_back(kDigits[b >> 4]);
    hex.push_back(kDigits[b & 15]);
  }
  return hex;
}

std::array<std::uint8_t, 32> from_hex(std::string_view hex) {
  if (hex.size() != 64) throw std::invalid_argument("expected 64 hex characters");
  auto nibble = [](char c) -> std::uint8_t {
    if (c >= '0' && c <= '9') return static_cast<std::uint8_t>(c - '0');
    if (c >= 'a' && c <= 'f') return static_cast<std::uint8_t>(c - 'a' + 10);
    throw std::invalid_argument("not a lowercase hex digit");
  };
  std::array<std::uint8_t, 32> bytes{};
  for (std::size_t i = 0; i < 32; ++i) bytes[i] = static_cast<std::uint8_t>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  return bytes;
}

}  // namespace llmrdzv::io
