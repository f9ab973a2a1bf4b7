// The client's half of the handshake (see handshake.hpp and llmrdzv/common/token.hpp).
#include "llmrdzv/client/handshake.hpp"

#include "llmrdzv/common/token.hpp"

namespace llmrdzv::client {
namespace {

constexpr std::string_view kForeignPrefix = "foreign-rendezvous:";

HelloResult not_proven(HelloOutcome outcome, grpc::StatusCode code, std::string reason) {
  HelloResult result;
  result.outcome = outcome;
  result.code = code;
  result.reason = std::move(reason);
  return result;
}

}  // namespace

void add_credential(grpc::ClientContext& context, std::string_view rdzv_id, std::string_view credential) {
  if (credential.empty()) return;
  context.AddMetadata(kRdzvIdMetadata, std::string(rdzv_id));
  context.AddMetadata(kCredentialMetadata, std::string(credential));
}

HelloResult hello(llmrdzv::v1::Rendezvous::Stub& stub, std::string_view rdzv_id, std::string_view token,
                  std::uint16_t dialled_port, std::chrono::milliseconds deadline) {
  llmrdzv::v1::HelloRequest request;
  request.set_rdzv_id(std::string(rdzv_id));
  request.set_key_id(token_key_id(token));
  request.set_client_nonce(random_bytes(kNonceBytes));
  llmrdzv::v1::HelloResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + deadline);
  add_credential(context, rdzv_id, hello_credential(token, rdzv_id, dialled_port));
  const grpc::Status status = stub.Hello(&context, request, &response);
  const auto code = status.error_code();
  if (code == grpc::StatusCode::UNAVAILABLE)
    return not_proven(HelloOutcome::silent, code, "unavailable: " + status.error_message());
  if (code == grpc::StatusCode::DEADLINE_EXCEEDED) {
    HelloResult result = not_proven(HelloOutcome::silent, code, "no answer within " + std::to_string(deadline.count()) + " ms");
    result.timed_out = true;
    return result;
  }
  if (code == grpc::StatusCode::NOT_FOUND && status.error_message().starts_with(kForeignPrefix))
    return not_proven(HelloOutcome::foreign, code, status.error_message());
  if (code == grpc::StatusCode::UNIMPLEMENTED)
    return not_proven(HelloOutcome::unproven, code,
                      "does not know Hello: not an rdzvd, or one older than this client (upgrade rdzvd and its "
                      "clients together)");
  if (code == grpc::StatusCode::PERMISSION_DENIED && status.error_message().starts_with(kGateRefusalPrefix))
    return not_proven(HelloOutcome::unproven, code,
                      "refused our credential (" + status.error_message() +
                          "): the token is wrong, or something relays this port to the rendezvous daemon on another; "
                          "nothing secret was sent");
  if (!status.ok()) return not_proven(HelloOutcome::unproven, code, "answered Hello with: " + status.error_message());
  const std::string& daemon_nonce = response.daemon_nonce();
  const std::string expected =
      daemon_proof(token, rdzv_id, request.key_id(), dialled_port, request.client_nonce(), daemon_nonce);
  if (daemon_nonce.size() != kNonceBytes || !tokens_equal(response.proof(), expected)) {
    const bool relayed = response.port() != dialled_port && response.port() <= 65535 &&
                         tokens_equal(response.proof(), daemon_proof(token, rdzv_id, request.key_id(),
                                                                      std::uint16_t(response.port()),
                                                                      request.client_nonce(), daemon_nonce));
    return not_proven(HelloOutcome::unproven, grpc::StatusCode::PERMISSION_DENIED,
                      relayed ? "relays the rendezvous daemon of port " + std::to_string(response.port()) +
                                    " (another process forwarding to it); nothing secret was sent"
                              : "did not prove it holds the rendezvous token: the token is wrong, or this is not "
                                "the rendezvous daemon (another process on that port); nothing secret was sent");
  }
  HelloResult result;
  result.outcome = HelloOutcome::proven;
  result.ticket = client_ticket(token, rdzv_id, daemon_nonce);
  result.version = response.version();
  result.features.assign(response.features().begin(), response.features().end());
  return result;
}

}  // namespace llmrdzv::client
