// Who may use which rendezvous. Step mode: the daemon serves exactly one rendezvous id with one
// token (other ids are "foreign" so port-probing clients move on). Site mode: tokens are HMACs of
// (uid, id) under the site secret, and each uid gets its own namespace of rendezvous ids.
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
};

class Authenticator {
 public:
  explicit Authenticator(AuthConfig config) : config_(std::move(config)) {}

  // The registry key of the rendezvous the scope names, once the token proves access.
  Result<std::string> authorize(const Scope& scope) const;
  // Whose rendezvous a registry key names: the uid in site mode, "" in step mode (one owner).
  std::string owner_of(const std::string& key) const;
  Mode mode() const { return config_.mode; }

 private:
  AuthConfig config_;
};

// "step" or "site".
const char* mode_name(Mode mode);

}  // namespace llmrdzv::core
