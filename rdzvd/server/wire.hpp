// Translation between protobuf messages and the core's plain types, and from core status codes
// to gRPC status codes (the proto's contract). The only place the two vocabularies meet.
#pragma once

#include <grpcpp/support/status.h>

#include "llmrdzv/core/types.hpp"
#include "llmrdzv/v1/rendezvous.pb.h"

namespace llmrdzv::server {

grpc::Status to_grpc(const core::Status& status);
core::Scope from_wire(const llmrdzv::v1::Scope& scope);
core::HelloRequest from_wire(const llmrdzv::v1::HelloRequest& request);
core::JoinRequest from_wire(const llmrdzv::v1::JoinRequest& request);
void to_wire(const core::Assignment& assignment, llmrdzv::v1::JoinResponse& response);
void to_wire(const core::SessionEvent& event, llmrdzv::v1::SessionEvent& wire);
void to_wire(const core::DaemonInfo& info, llmrdzv::v1::StatusResponse& response);

}  // namespace llmrdzv::server
