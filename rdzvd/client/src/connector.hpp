// Finding rdzvd: the step-port probe sequence, telling our rdzvd apart from a foreign one or a
// non-rdzvd peer, and waiting with backoff while the daemon is not up yet. Private.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>

#include "llmrdzv/client/options.hpp"
#include "llmrdzv/v1/rendezvous.grpc.pb.h"

namespace llmrdzv::client::detail {

// The optional protocol parts the daemon advertised (StatusResponse.features).
struct Features {
  bool session_join = false;     // SessionOpen may carry the Join
  bool session_calls = false;    // store calls that block may travel on the Session stream
};

struct Connection {
  std::string endpoint;  // "host:port" that answered as our rdzvd
  Features features;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<llmrdzv::v1::Rendezvous::Stub> stub;
};

// A channel with its own TCP connection (no subchannel sharing with other clients in the
// process) and short reconnect backoff.
std::shared_ptr<grpc::Channel> make_channel(const std::string& endpoint);

// Finds the daemon and asks what it speaks (Features). Throws RdzvError: unavailable when
// nothing answered as our rdzvd within connect_timeout (the message lists what each candidate
// port was), not_found when the only candidate serves another rendezvous.
Connection connect(const Options& options);

}  // namespace llmrdzv::client::detail
