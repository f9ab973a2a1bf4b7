// Random and HMAC-derived rendezvous tokens, and the handshake that proves them (see token.hpp).
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
constexpr std::string_view kTicketPrefix = "t2.";
constexpr std::string_view kHelloPrefix = "h1.";
constexpr std::size_t kDigestHexLength = 64;

std::string to_hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex(bytes.size() * 2, '\0');
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto byte = static_cast<unsigned char>(bytes[i]);
    hex[2 * i] = kDigits[byte >> 4];
    hex[2 * i + 1] = kDigits[byte & 0xf];
  }
  return hex;
}

bool is_lower_hex(std::string_view text) {
  for (char c : text)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

// HMAC-SHA256 as 32 raw bytes.
std::string hmac_sha256(std::string_view key, std::string_view message) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int digest_size = 0;
  if (!HMAC(EVP_sha256(), key.data(), int(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
            message.size(), digest.data(), &digest_size))
    throw std::runtime_error("HMAC-SHA256 failed");
  std::string out(reinterpret_cast<const char*>(digest.data()), digest_size);
  OPENSSL_cleanse(digest.data(), digest.size());
  return out;
}

// Appends a field as "<length>:<bytes>" so that no two field lists encode alike.
void add_field(std::string& message, std::string_view field) {
  message += std::to_string(field.size());
  message += ':';
  message += field;
}

// "<uid>" in canonical decimal ("007" must not alias "7": HMACs cover the decimal text).
std::optional<std::uint32_t> parse_uid(std::string_view text) {
  if (text.empty() || (text.size() > 1 && text.front() == '0')) return std::nullopt;
  std::uint32_t uid = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), uid);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return uid;
}

// "<prefix><uid>.<64 hex>" -> uid.
std::optional<std::uint32_t> uid_of_signed(std::string_view text, std::string_view prefix) {
  if (!text.starts_with(prefix)) return std::nullopt;
  text.remove_prefix(prefix.size());
  const auto dot = text.find('.');
  if (dot == std::string_view::npos) return std::nullopt;
  const std::string_view digest = text.substr(dot + 1);
  if (digest.size() != kDigestHexLength || !is_lower_hex(digest)) return std::nullopt;
  return parse_uid(text.substr(0, dot));
}

}  // namespace

std::string random_bytes(std::size_t count) {
  std::string bytes(count, '\0');
  std::size_t filled = 0;
  while (filled < bytes.size()) {
    const ssize_t got = getrandom(bytes.data() + filled, bytes.size() - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::system_error(errno, std::generic_category(), "getrandom");
    }
    filled += std::size_t(got);
  }
  return bytes;
}

std::string make_random_token() {
  std::string bytes = random_bytes(32);
  std::string hex = to_hex(bytes);
  OPENSSL_cleanse(bytes.data(), bytes.size());
  return hex;
}

std::string site_token(std::string_view secret, std::uint32_t uid, std::string_view rdzv_id) {
  const std::string uid_text = std::to_string(uid);
  std::string message = "llm-rdzv v1\n";
  message += uid_text;
  message += '\n';
  message += rdzv_id;
  std::string token(kSiteTokenPrefix);
  token += uid_text;
  token += '.';
  token += to_hex(hmac_sha256(secret, message));
  return token;
}

std::optional<std::uint32_t> site_token_uid(std::string_view token) { return uid_of_signed(token, kSiteTokenPrefix); }

std::string token_key_id(std::string_view token) {
  const auto uid = site_token_uid(token);
  return uid ? std::string(kSiteTokenPrefix) + std::to_string(*uid) : std::string();
}

std::optional<std::uint32_t> key_id_uid(std::string_view key_id) {
  if (!key_id.starts_with(kSiteTokenPrefix)) return std::nullopt;
  return parse_uid(key_id.substr(kSiteTokenPrefix.size()));
}

std::string daemon_proof(std::string_view token, std::string_view rdzv_id, std::string_view key_id,
                         std::uint16_t port, std::string_view client_nonce, std::string_view daemon_nonce) {
  std::string message = "llm-rdzv daemon proof v2\n";
  add_field(message, rdzv_id);
  add_field(message, key_id);
  add_field(message, std::to_string(port));
  add_field(message, client_nonce);
  add_field(message, daemon_nonce);
  return hmac_sha256(token, message);
}

std::string client_ticket(std::string_view token, std::string_view rdzv_id, std::string_view daemon_nonce) {
  std::string message = "llm-rdzv client ticket v2\n";
  add_field(message, rdzv_id);
  add_field(message, daemon_nonce);
  std::string ticket(kTicketPrefix);
  if (const auto uid = site_token_uid(token)) {
    ticket += std::to_string(*uid);
    ticket += '.';
  }
  ticket += to_hex(hmac_sha256(token, message));
  return ticket;
}

std::optional<std::uint32_t> ticket_uid(std::string_view ticket) { return uid_of_signed(ticket, kTicketPrefix); }

std::string hello_credential(std::string_view token, std::string_view rdzv_id, std::uint16_t port) {
  std::string message = "llm-rdzv hello credential v1\n";
  add_field(message, rdzv_id);
  add_field(message, std::to_string(port));
  std::string credential(kHelloPrefix);
  if (const auto uid = site_token_uid(token)) {
    credential += std::to_string(*uid);
    credential += '.';
  }
  credential += to_hex(hmac_sha256(token, message));
  return credential;
}

std::optional<std::uint32_t> hello_credential_uid(std::string_view credential) {
  return uid_of_signed(credential, kHelloPrefix);
}

bool is_hello_credential(std::string_view credential) { return credential.starts_with(kHelloPrefix); }

bool tokens_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace llmrdzv
