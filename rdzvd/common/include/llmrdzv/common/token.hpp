// Rendezvous tokens, shared by the SPANK plugin (which makes them), rdzvd (which checks them) and
// clients. Per-step mode uses a random token; site mode derives a token per (uid, rdzv id) from a
// site secret with HMAC-SHA256, so rdzvd can check it without any per-rendezvous state.
// No OpenSSL types here: the plugin and the trainer include this header too.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace llmrdzv {

// 32 bytes from getrandom(2) as 64 lowercase hex characters. Throws std::system_error on failure.
std::string make_random_token();

// "v1.<uid>.<hex HMAC-SHA256(secret, "llm-rdzv v1\n" + decimal uid + "\n" + rdzv_id)>".
std::string site_token(std::string_view secret, std::uint32_t uid, std::string_view rdzv_id);

// The uid a site token claims ("v1.<uid>.<64 hex>"), or nullopt if the text is not of that form.
// The claim is only trustworthy after comparing the token with site_token() for that uid.
std::optional<std::uint32_t> site_token_uid(std::string_view token);

// Compares two tokens in time that depends only on their lengths, not on where they differ.
bool tokens_equal(std::string_view a, std::string_view b);

}  // namespace llmrdzv
