// The server layer's share of rdzvd's /metrics: RPCs by method and gRPC status code, and the
// latency of KV calls by method (unary ones and those a Session stream carries). Unlike the core's
// counters these are kept outside the core's lock, from any gRPC thread, so they have their own.
#pragma once

#include <grpcpp/support/status.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "llmrdzv/metrics/histogram.hpp"

namespace llmrdzv::server {

// The status code names of the gRPC spec ("OK", "NOT_FOUND", ...), for labels.
const char* grpc_code_name(grpc::StatusCode code);

class RpcMetrics {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::size_t kCodes = 17;  // OK .. UNAUTHENTICATED
  using CodeCounts = std::array<std::uint64_t, kCodes>;

  struct Snapshot {
    std::map<std::string, CodeCounts, std::less<>> rpcs;                 // by method
    std::map<std::string, metrics::Histogram, std::less<>> kv_seconds;  // by method
  };

  // A unary call or stream from its start; finished() counts it, and its latency for a KV call.
  struct Call {
    std::string_view method;
    bool kv = false;
    Clock::time_point started = Clock::now();
  };

  void finished(const Call& call, grpc::StatusCode code);
  void rpc_finished(std::string_view method, grpc::StatusCode code);
  void kv_call_took(std::string_view method, Clock::duration took);
  Snapshot snapshot() const;

 private:
  mutable std::mutex mutex_;
  Snapshot counts_;
};

}  // namespace llmrdzv::server
