// Tells the connection limit which connections have made a call past the credential check
// (connection_limit.hpp): a gRPC server interceptor, which only sees calls the gate let through.
#pragma once

#include <grpcpp/support/server_interceptor.h>

#include <memory>

#include "connection_limit.hpp"

namespace llmrdzv::server {

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> authenticated_calls_reporter(
    std::shared_ptr<ConnectionLimit> limit);

}  // namespace llmrdzv::server
