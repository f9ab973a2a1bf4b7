// Finding rdzvd: the step-port probe sequence, telling our rdzvd (the one that proves it holds
// the token) apart from a foreign one, an impostor or a non-rdzvd peer, and waiting with backoff
// while the daemon is not up yet. Private.
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
  std::string ticket;    // from the handshake; empty without a rendezvous id
  Features features;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<llmrdzv::v1::Rendezvous::Stub> stub;
};

// A channel with its own TCP connection (no subchannel sharing with other clients in the
// process) and short reconnect backoff.
std::shared_ptr<grpc::Channel> make_channel(const std::string& endpoint);

// Finds the daemon that proves it holds our token (the handshake, which also says what it
// speaks). Throws RdzvError: unavailable when nothing answered within connect_timeout (the
// message lists what each candidate port was); at once, when every candidate has answered for
// good: not_found when the only candidate serves another rendezvous, permission_denied (naming
// the endpoint) when a peer failed the handshake: a wrong token or not the rendezvous daemon.
Connection connect(const Options& options);

}  // namespace llmrdzv::client::detail
