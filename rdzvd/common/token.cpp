// Random and HMAC-derived rendezvous tokens (see token.hpp).
#include "llmrdzv/common/token.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <stdexcept>
#include <system_error>

namespace llmrdzv {
namespace {

constexpr std::string_view kSiteTokenPrefix = "v1.";
constexpr std::size_t kDigestHexLength = 64;

std::string to_hex(const unsigned char* data, std::size_t size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(size * 2, '\0');
  for (std::size_t i = 0; i < size; ++i) {
    hex[2 * i] = kDigits[data[i] >> 4];
    hex[2 * i + 1] = kDigits[data[i] & 0xf];
  }
  return hex;
}

bool is_lower_hex(std::string_view text) {
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

}  // namespace

std::string make_random_token() {
  std::array<unsigned char, 32> bytes{};
  std::size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t got = getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    filled += std::size_t(got);
  }
  std::string hex = to_hex(bytes.data(), bytes.size());
  OPENSSL_cleanse(bytes.data(), bytes.size());
  return hex;
}

std::string site_token(std::string_view secret, std::uint32_t uid, std::string_view rdzv_id) {
  const std::string uid_text = std::to_string(uid);
  std::string message = "llm-rdzv v1\n";
  message += uid_text;
  message += '\n';
  message += rdzv_id;
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int digest_size = 0;
  if (!HMAC(EVP_sha256(), secret.data(), int(secret.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), digest.data(),
            &digest_size))
    throw std::runtime_error("site_token: HMAC-SHA256 failed");
  std::string token(kSiteTokenPrefix);
  token += uid_text;
  token += '.';
  token += to_hex(digest.data(), digest_size);
  return token;
}

std::optional<std::uint32_t> site_token_uid(std::string_view token) {
  if (!token.starts_with(kSiteTokenPrefix)) return std::nullopt;
  token.remove_prefix(kSiteTokenPrefix.size());
  const auto dot = token.find('.');
  if (dot == std::string_view::npos || dot == 0) return std::nullopt;
  const std::string_view uid_text = token.substr(0, dot);
  const std::string_view digest = token.substr(dot + 1);
  if (digest.size() != kDigestHexLength || !is_lower_hex(digest)) return std::nullopt;
  // Canonical decimal only: the HMAC covers the decimal text, so "007" must not alias "7".
  if (uid_text.size() > 1 && uid_text.front() == '0') return std::nullopt;
  std::uint32_t uid = 0;
  const auto [end, ec] = std::from_chars(uid_text.data(), uid_text.data() + uid_text.size(), uid);
  if (ec != std::errc() || end != uid_text.data() + uid_text.size()) return std::nullopt;
  return uid;
}

bool tokens_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace llmrdzv
