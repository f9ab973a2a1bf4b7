// The credential check on call headers (see call_gate.hpp), as a gRPC core auth metadata
// processor on plaintext server credentials.
#include "call_gate.hpp"

#include <grpc/grpc_security.h>

#include <cstring>

#include "llmrdzv/common/token.hpp"
#include "wire.hpp"

namespace llmrdzv::server {
namespace {

std::string value_of(const grpc_metadata* md, std::size_t count, const char* key) {
  for (std::size_t i = 0; i < count; ++i) {
    const grpc_slice& k = md[i].key;
    if (GRPC_SLICE_LENGTH(k) == std::strlen(key) &&
        std::memcmp(GRPC_SLICE_START_PTR(k), key, GRPC_SLICE_LENGTH(k)) == 0) {
      return {reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(md[i].value)), GRPC_SLICE_LENGTH(md[i].value)};
    }
  }
  return {};
}

void process(void* state, grpc_auth_context*, const grpc_metadata* md, std::size_t count,
             grpc_process_auth_metadata_done_cb done, void* user_data) {
  auto& gate = **static_cast<std::shared_ptr<CallGate>*>(state);
  CallGate::Verdict verdict;
  try {  // on a gRPC thread: nothing may escape
    verdict = gate.check(value_of(md, count, kRdzvIdMetadata), value_of(md, count, kCredentialMetadata));
  } catch (const std::exception& e) {
    verdict = {GRPC_STATUS_INTERNAL, std::string("rdzvd: checking the call's credential failed: ") + e.what()};
  }
  done(user_data, nullptr, 0, nullptr, 0, verdict.code, verdict.code == GRPC_STATUS_OK ? nullptr : verdict.message.c_str());
}

void destroy(void* state) { delete static_cast<std::shared_ptr<CallGate>*>(state); }

// grpc::InsecureServerCredentials with the gate's processor: the C++ class refuses a processor,
// the core's plaintext credentials take one.
class GatedCredentials final : public grpc::ServerCredentials {
 public:
  explicit GatedCredentials(std::shared_ptr<CallGate> gate) : credentials_(grpc_insecure_server_credentials_create()) {
    grpc_server_credentials_set_auth_metadata_processor(
        credentials_, {&process, &destroy, new std::shared_ptr<CallGate>(std::move(gate))});
  }
  ~GatedCredentials() override { grpc_server_credentials_release(credentials_); }
  GatedCredentials(const GatedCredentials&) = delete;
  GatedCredentials& operator=(const GatedCredentials&) = delete;

  void SetAuthMetadataProcessor(const std::shared_ptr<grpc::AuthMetadataProcessor>&) override {
    throw std::logic_error("rdzvd's call gate is the server's only auth metadata processor");
  }

 private:
  int AddPortToServer(const std::string& address, grpc_server* server) override {
    return grpc_server_add_http2_port(server, address.c_str(), credentials_);
  }

  grpc_server_credentials* credentials_;
};

}  // namespace

CallGate::CallGate(std::shared_ptr<const core::Authenticator> auth, const std::string& version)
    : auth_(std::move(auth)),
      refusal_prefix_(std::string(kGateRefusalPrefix) + "version=" + version + " mode=" + core::mode_name(auth_->mode()) + ": ") {}

std::shared_ptr<grpc::ServerCredentials> CallGate::credentials() {
  return std::make_shared<GatedCredentials>(shared_from_this());  // the processor keeps the gate alive
}

CallGate::Verdict CallGate::check(const std::string& rdzv_id, const std::string& credential) {
  const int port = port_.load();
  if (port <= 0) {
    refused_.fetch_add(1);
    return {GRPC_STATUS_UNAVAILABLE, refusal_prefix_ + "rdzvd is starting"};
  }
  if (const std::uint32_t limit = max_id_length_.load(); rdzv_id.size() > limit) {
    refused_.fetch_add(1);
    return {GRPC_STATUS_RESOURCE_EXHAUSTED, refusal_prefix_ + "limit max_id_length (" + std::to_string(limit) +
                                                ") exceeded: rdzv_id of " + std::to_string(rdzv_id.size()) + " bytes"};
  }
  const core::Status admitted = auth_->admit(rdzv_id, credential, std::uint16_t(port));
  if (admitted.ok()) return {};
  refused_.fetch_add(1);
  const grpc::Status status = to_grpc(admitted);
  const bool foreign = admitted.code == core::Code::not_found;  // "foreign-rendezvous:", which clients look for
  return {static_cast<grpc_status_code>(status.error_code()), (foreign ? "" : refusal_prefix_) + status.error_message()};
}

}  // namespace llmrdzv::server
