// The client's half of the handshake (Hello, see llmrdzv/common/token.hpp): one call that finds
// out whether the peer on a port is the daemon holding our rendezvous token, without sending it
// anything secret, and yields the ticket for later requests. Used by the client library's
// connector, and by the benchmark and tests that drive raw stubs. Carries gRPC types, hence its
// own library beside the gRPC-free client headers.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "llmrdzv/v1/rendezvous.grpc.pb.h"

namespace llmrdzv::client {

enum class HelloOutcome {
  proven,    // the daemon proved it holds the token: `ticket` is ready
  foreign,   // an rdzvd serving another rendezvous ("foreign-rendezvous:")
  unproven,  // something answered but did not prove it holds the token
  silent,    // nothing answered in time, or the daemon is not ready yet: worth asking again
};

struct HelloResult {
  HelloOutcome outcome = HelloOutcome::silent;
  std::string reason;  // why not proven, naming nothing secret
  grpc::StatusCode code = grpc::StatusCode::OK;  // how the call ended (PERMISSION_DENIED for a bad proof)
  bool timed_out = false;                        // silent because the deadline passed
  std::string ticket;                            // proven only
  std::string version;                           // the daemon's release (proven only)
  std::vector<std::string> features;             // what the daemon speaks (proven only)
};

// Puts the rendezvous id and a credential (the ticket; hello() sends the hello credential) into
// a call's metadata, where rdzvd checks them before it reads the call's body. Every call but a
// tokenless one (no id) needs them; nothing when `credential` is empty.
void add_credential(grpc::ClientContext& context, std::string_view rdzv_id, std::string_view credential);

// One Hello on `stub`, dialled at `dialled_port`, within `deadline`.
HelloResult hello(llmrdzv::v1::Rendezvous::Stub& stub, std::string_view rdzv_id, std::string_view token,
                  std::uint16_t dialled_port, std::chrono::milliseconds deadline);

}  // namespace llmrdzv::client
