// Rendezvous tokens, shared by the SPANK plugin (which makes them), rdzvd (which checks them) and
// clients. Per-step mode uses a random token; site mode derives a token per (uid, rdzv id) from a
// site secret with HMAC-SHA256, so rdzvd can check it without any per-rendezvous state.
//
// A token never travels. The handshake (Hello in the protocol) has both sides prove they hold it:
//   client -> daemon   rdzv_id, key_id (the token's public part), 32-byte client nonce
//   daemon -> client   its 32-byte daemon nonce (one per daemon process), the port it listens on,
//                      proof = HMAC(token, rdzv_id, key_id, port, client nonce, daemon nonce)
// The client checks the proof against the port it dialled, so neither another process on some
// port nor one relaying to the real daemon passes. Only then does it compute its ticket,
// HMAC(token, rdzv_id, daemon nonce), and send it in every request's scope. The ticket proves
// the token to this daemon process only and reveals nothing about the token.
// Every call also carries a credential in its metadata (kCredentialMetadata), which rdzvd checks
// from the headers alone, before it reads the call's body: the ticket, or for Hello itself (no
// ticket yet) the hello credential, HMAC(token, rdzv_id, port dialled). A peer without the token
// thus cannot make the daemon hold a message body at all. The hello credential is sent before the
// daemon proved itself, so it is bound to the port: whoever squats a port learns one that only
// that port accepts.
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

// Bytes in a handshake nonce.
inline constexpr std::size_t kNonceBytes = 32;

// `count` bytes from getrandom(2). Throws std::system_error on failure.
std::string random_bytes(std::size_t count);

// The public part of a token that tells a site rdzvd which key to use: "v1.<uid>" for a site
// token, "" for any other (a step token).
std::string token_key_id(std::string_view token);

// The uid a key id names ("v1.<uid>"), or nullopt if it is not of that form.
std::optional<std::uint32_t> key_id_uid(std::string_view key_id);

// The daemon's proof in Hello (32 raw bytes); see the top of this file.
std::string daemon_proof(std::string_view token, std::string_view rdzv_id, std::string_view key_id,
                         std::uint16_t port, std::string_view client_nonce, std::string_view daemon_nonce);

// The ticket a client sends once the daemon has proved itself: "t2.<hex>" for a step token,
// "t2.<uid>.<hex>" for a site token (the uid lets a site rdzvd find the key).
std::string client_ticket(std::string_view token, std::string_view rdzv_id, std::string_view daemon_nonce);

// The uid a ticket claims ("t2.<uid>.<64 hex>"), or nullopt if the text is not of that form.
std::optional<std::uint32_t> ticket_uid(std::string_view ticket);

// The metadata of every call: the rendezvous id and the credential (ticket or hello credential).
inline constexpr const char* kRdzvIdMetadata = "llm-rdzv-id";
inline constexpr const char* kCredentialMetadata = "llm-rdzv-credential";

// How rdzvd's refusal of a call without a valid credential starts (before "version=V mode=M: ").
inline constexpr std::string_view kGateRefusalPrefix = "rdzvd-gate ";

// Hello's credential: "h1.<hex>" for a step token, "h1.<uid>.<hex>" for a site token, over
// (rdzv_id, the port the client dialled).
std::string hello_credential(std::string_view token, std::string_view rdzv_id, std::uint16_t port);

// The uid a hello credential claims ("h1.<uid>.<64 hex>"), or nullopt if it is not of that form.
std::optional<std::uint32_t> hello_credential_uid(std::string_view credential);

// Whether a credential is a hello credential (else it is meant as a ticket).
bool is_hello_credential(std::string_view credential);

// Compares two tokens in time that depends only on their lengths, not on where they differ.
bool tokens_equal(std::string_view a, std::string_view b);

}  // namespace llmrdzv
