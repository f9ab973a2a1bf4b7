// Who may use which rendezvous. Step mode: the daemon serves exactly one rendezvous id with one
// token (other ids are "foreign" so port-probing clients move on). Site mode: tokens are HMACs of
// (uid, id) under the site secret, and each uid gets its own namespace of rendezvous ids.
// Tokens never arrive: the daemon proves it holds one in hello(), and requests carry tickets
// derived from it and from this daemon's nonce (llmrdzv/common/token.hpp has the handshake).
#pragma once

#include <cstdint>
#include <string>

#include "llmrdzv/core/status.hpp"
#include "llmrdzv/core/types.hpp"

namespace llmrdzv::core {

enum class Mode { step, site };

struct AuthConfig {
  Mode mode = Mode::step;
  std::string step_rdzv_id;  // step mode
  std::string step_token;    // step mode
  std::string site_secret;   // site mode
  std::string daemon_nonce;  // kNonceBytes bytes; empty: a random one per Authenticator
};

class Authenticator {
 public:
  explicit Authenticator(AuthConfig config);

  // The daemon's half of the handshake for a client that dialled `port` (the listening port).
  Result<HelloAnswer> hello(const HelloRequest& request, std::uint16_t port) const;
  // The registry key of the rendezvous the scope names, once its ticket proves access.
  Result<std::string> authorize(const Scope& scope) const;
  // Whether a call may have its body read: `credential` (the call's metadata) is a ticket that
  // authorize() would accept for `rdzv_id`, or a hello credential for `rdzv_id` and `port` (the
  // listening port). Needs only the headers, so a peer without the token is refused before the
  // daemon holds any of its message. Thread-safe (const, no state).
  Status admit(const std::string& rdzv_id, const std::string& credential, std::uint16_t port) const;
  // Whose rendezvous a registry key names: the uid in site mode, "" in step mode (one owner).
  std::string owner_of(const std::string& key) const;
  Mode mode() const { return config_.mode; }

 private:
  // Ok for an id this daemon serves; invalid_argument when empty, not_found "foreign-rendezvous:"
  // for another id in step mode (without naming the id served: tokenless peers learn nothing).
  Status check_id(const std::string& rdzv_id) const;

  AuthConfig config_;
  std::string step_ticket_;  // step mode: the one valid ticket, computed once
};

// "step" or "site".
const char* mode_name(Mode mode);

}  // namespace llmrdzv::core
