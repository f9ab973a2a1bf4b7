// Scope checks and the daemon's half of the handshake for step and site mode (see auth.hpp).
// Tokens and tickets never appear in messages.
#include "llmrdzv/core/auth.hpp"

#include "llmrdzv/common/token.hpp"

namespace llmrdzv::core {

const char* mode_name(Mode mode) { return mode == Mode::step ? "step" : "site"; }

Authenticator::Authenticator(AuthConfig config) : config_(std::move(config)) {
  if (config_.daemon_nonce.empty()) config_.daemon_nonce = random_bytes(kNonceBytes);
  if (config_.mode == Mode::step)
    step_ticket_ = client_ticket(config_.step_token, config_.step_rdzv_id, config_.daemon_nonce);
}

Status Authenticator::check_id(const std::string& rdzv_id) const {
  if (rdzv_id.empty()) return error(Code::invalid_argument, "rdzv_id is empty");
  if (config_.mode == Mode::step && rdzv_id != config_.step_rdzv_id)
    return error(Code::not_found, "foreign-rendezvous: this rdzvd serves another rendezvous, not '" + rdzv_id + "'");
  return Status::Ok();
}

Result<HelloAnswer> Authenticator::hello(const HelloRequest& request, std::uint16_t port) const {
  if (Status id = check_id(request.rdzv_id); !id.ok()) return id;
  if (request.client_nonce.size() != kNonceBytes)
    return error(Code::invalid_argument, "client_nonce must be " + std::to_string(kNonceBytes) + " bytes, not " +
                                             std::to_string(request.client_nonce.size()));
  std::string token = config_.step_token;
  if (config_.mode == Mode::site) {
    const auto uid = key_id_uid(request.key_id);
    if (!uid)
      return error(Code::invalid_argument,
                   "a site rdzvd needs a site token (v1.<uid>.<hmac>) for rendezvous '" + request.rdzv_id + "'");
    token = site_token(config_.site_secret, *uid, request.rdzv_id);
  }
  return HelloAnswer{config_.daemon_nonce,
                     daemon_proof(token, request.rdzv_id, request.key_id, port, request.client_nonce, config_.daemon_nonce)};
}

Result<std::string> Authenticator::authorize(const Scope& scope) const {
  if (Status id = check_id(scope.rdzv_id); !id.ok()) return id;
  if (scope.ticket.empty())
    return error(Code::permission_denied, "missing ticket: run Hello first (a client older than this rdzvd sends "
                                          "the token itself, which is never accepted)");
  const auto wrong = [&] { return error(Code::permission_denied, "wrong ticket for rendezvous '" + scope.rdzv_id + "'"); };
  if (config_.mode == Mode::step) {
    if (!tokens_equal(scope.ticket, step_ticket_)) return wrong();
    return scope.rdzv_id;
  }
  const auto uid = ticket_uid(scope.ticket);
  if (!uid) return wrong();
  const std::string token = site_token(config_.site_secret, *uid, scope.rdzv_id);
  if (!tokens_equal(scope.ticket, client_ticket(token, scope.rdzv_id, config_.daemon_nonce))) return wrong();
  return std::to_string(*uid) + "/" + scope.rdzv_id;
}

Status Authenticator::admit(const std::string& rdzv_id, const std::string& credential, std::uint16_t port) const {
  if (credential.empty())
    return error(Code::permission_denied,
                 "no credential: every call to rdzvd carries the rendezvous id and a credential derived from its "
                 "token in its metadata (rdzvctl: give --id and --token, or run it inside the step)");
  if (!is_hello_credential(credential)) {
    const auto authorized = authorize(Scope{rdzv_id, credential});
    return authorized.ok() ? Status::Ok() : authorized.status();
  }
  if (Status id = check_id(rdzv_id); !id.ok()) return id;
  std::string token = config_.step_token;
  if (config_.mode == Mode::site) {
    const auto uid = hello_credential_uid(credential);
    if (!uid) return error(Code::permission_denied, "a site rdzvd needs a site token for rendezvous '" + rdzv_id + "'");
    token = site_token(config_.site_secret, *uid, rdzv_id);
  }
  if (!tokens_equal(credential, hello_credential(token, rdzv_id, port)))
    return error(Code::permission_denied, "wrong credential for rendezvous '" + rdzv_id +
                                              "': the token is wrong, or it was made for another port");
  return Status::Ok();
}

std::string Authenticator::owner_of(const std::string& key) const {
  return config_.mode == Mode::site ? key.substr(0, key.find('/')) : std::string();
}

}  // namespace llmrdzv::core
