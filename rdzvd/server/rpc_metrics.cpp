// RPC and KV-call counting for /metrics (see rpc_metrics.hpp).
#include "rpc_metrics.hpp"

namespace llmrdzv::server {

const char* grpc_code_name(grpc::StatusCode code) {
  static constexpr std::array<const char*, RpcMetrics::kCodes> names{
      "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
      "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
      "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
  const auto index = std::size_t(code);
  return index < names.size() ? names[index] : "UNKNOWN";
}

void RpcMetrics::finished(const Call& call, grpc::StatusCode code) {
  rpc_finished(call.method, code);
  if (call.kv) kv_call_took(call.method, Clock::now() - call.started);
}

void RpcMetrics::rpc_finished(std::string_view method, grpc::StatusCode code) {
  const auto index = std::size_t(code) < kCodes ? std::size_t(code) : std::size_t(grpc::StatusCode::UNKNOWN);
  std::lock_guard lock(mutex_);
  auto it = counts_.rpcs.find(method);
  if (it == counts_.rpcs.end()) it = counts_.rpcs.emplace(std::string(method), CodeCounts{}).first;
  ++it->second[index];
}

void RpcMetrics::kv_call_took(std::string_view method, Clock::duration took) {
  const double seconds = std::chrono::duration<double>(took).count();
  std::lock_guard lock(mutex_);
  auto it = counts_.kv_seconds.find(method);
  if (it == counts_.kv_seconds.end())
    it = counts_.kv_seconds.emplace(std::string(method), metrics::Histogram(metrics::request_seconds_buckets())).first;
  it->second.observe(seconds);
}

RpcMetrics::Snapshot RpcMetrics::snapshot() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

}  // namespace llmrdzv::server
