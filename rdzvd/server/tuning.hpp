// Fixed settings that let one rdzvd serve thousands of connections cheaply (measured with
// rdzv-bench; see tuning.cpp for why each one is there). They are not config keys: none of them
// changes what a client sees, and none is something a site admin would tune.
#pragma once

namespace grpc {
class ServerBuilder;
}

namespace llmrdzv::server {

// Process-wide: call from main() before any thread starts.
void tune_process();

// Transport settings for rdzvd's gRPC server (also used by the in-process server tests).
void tune_server(grpc::ServerBuilder& builder);

}  // namespace llmrdzv::server
