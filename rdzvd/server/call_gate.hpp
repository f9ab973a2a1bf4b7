// The check every call passes before rdzvd reads its body: the credential in its metadata (see
// llmrdzv/common/token.hpp). gRPC runs it on the call's headers, so the message of a call from
// a peer without the token is never received: a flood of large calls with a forged ticket costs
// the daemon their headers, not their bodies. Built as the server's credentials (plaintext
// HTTP/2, like grpc::InsecureServerCredentials) with an auth metadata processor.
#pragma once

#include <grpcpp/security/server_credentials.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "llmrdzv/core/auth.hpp"

namespace llmrdzv::server {

// Made with std::make_shared (its credentials share it).
class CallGate : public std::enable_shared_from_this<CallGate> {
 public:
  // A refusal reads "<kGateRefusalPrefix>version=<version> mode=<mode>: <why>" (but a foreign
  // rendezvous id gets the "foreign-rendezvous:" answer port-probing clients look for), so that
  // a tokenless `rdzvctl ping` still learns that an rdzvd answers, and which, without any id.
  CallGate(std::shared_ptr<const core::Authenticator> auth, const std::string& version);

  // The port hello credentials must name: the one the server listens on, once known (calls
  // before are refused as UNAVAILABLE "starting").
  void set_listen_port(int port) { port_.store(port); }
  // limits.max_id_length: a longer id is refused before it is checked (or quoted back).
  void set_max_id_length(std::uint32_t bytes) { max_id_length_.store(bytes); }

  // Credentials for ServerBuilder::AddListeningPort that run this gate on every call.
  std::shared_ptr<grpc::ServerCredentials> credentials();

  // Calls refused, for /metrics.
  std::uint64_t refused() const { return refused_.load(); }

  struct Verdict {
    grpc_status_code code = GRPC_STATUS_OK;
    std::string message;
  };
  // The verdict on one call's metadata values (empty when absent). Thread-safe.
  Verdict check(const std::string& rdzv_id, const std::string& credential);

 private:
  std::shared_ptr<const core::Authenticator> auth_;
  std::string refusal_prefix_;
  std::atomic<int> port_{0};
  std::atomic<std::uint32_t> max_id_length_{128};
  std::atomic<std::uint64_t> refused_{0};
};

}  // namespace llmrdzv::server
