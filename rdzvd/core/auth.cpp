// Scope checks for step and site mode (see auth.hpp). Tokens never appear in messages.
#include "llmrdzv/core/auth.hpp"

#include "llmrdzv/common/token.hpp"

namespace llmrdzv::core {

const char* mode_name(Mode mode) { return mode == Mode::step ? "step" : "site"; }

Result<std::string> Authenticator::authorize(const Scope& scope) const {
  if (scope.rdzv_id.empty()) return error(Code::invalid_argument, "rdzv_id is empty");
  if (config_.mode == Mode::step) {
    if (scope.rdzv_id != config_.step_rdzv_id)
      return error(Code::not_found, "foreign-rendezvous: this rdzvd serves rendezvous '" +
                                        config_.step_rdzv_id + "', not '" + scope.rdzv_id + "'");
    if (scope.token.empty()) return error(Code::permission_denied, "missing token");
    if (!tokens_equal(scope.token, config_.step_token))
      return error(Code::permission_denied, "wrong token for rendezvous '" + scope.rdzv_id + "'");
    return scope.rdzv_id;
  }
  if (scope.token.empty()) return error(Code::permission_denied, "missing token");
  const auto uid = site_token_uid(scope.token);
  if (!uid || !tokens_equal(scope.token, site_token(config_.site_secret, *uid, scope.rdzv_id)))
    return error(Code::permission_denied, "wrong token for rendezvous '" + scope.rdzv_id + "'");
  return std::to_string(*uid) + "/" + scope.rdzv_id;
}

std::string Authenticator::owner_of(const std::string& key) const {
  return config_.mode == Mode::site ? key.substr(0, key.find('/')) : std::string();
}

}  // namespace llmrdzv::core
