// The one exception type the rendezvous client throws, so callers (the trainer's c10d Store
// adapter, rdzvctl, tests) can react to what went wrong by code instead of parsing messages.
// No gRPC types here: the code enum mirrors the status codes the wire contract documents.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace llmrdzv::client {

enum class ErrorCode {
  permission_denied,    // wrong or missing token
  not_found,            // unknown rendezvous, absent key (non-blocking get), empty queue
  aborted,              // the round the call refers to was closed (a member failed or left)
  deadline_exceeded,    // a blocking call ran out of time
  unavailable,          // rdzvd not reachable, or shutting down
  invalid_argument,     // malformed request or option
  resource_exhausted,   // a daemon limit was hit (the message names it)
  failed_precondition,  // join parameters disagree with the rendezvous
  internal,             // anything else, including a peer that is not an rdzvd
};

// "permission_denied", "not_found", ...
std::string_view error_code_name(ErrorCode code);

class RdzvError : public std::runtime_error {
 public:
  RdzvError(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace llmrdzv::client
