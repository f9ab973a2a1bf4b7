// Status translation, backoff and timeout conversion for the client's calls (see rpc.hpp).
#include "rpc.hpp"

#include <algorithm>
#include <climits>
#include <random>

namespace llmrdzv::client::detail {

ErrorCode error_code_of(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::UNAUTHENTICATED: return ErrorCode::permission_denied;
    case grpc::StatusCode::NOT_FOUND: return ErrorCode::not_found;
    case grpc::StatusCode::ABORTED: return ErrorCode::aborted;
    case grpc::StatusCode::DEADLINE_EXCEEDED: return ErrorCode::deadline_exceeded;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED: return ErrorCode::unavailable;
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE: return ErrorCode::invalid_argument;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return ErrorCode::resource_exhausted;
    case grpc::StatusCode::FAILED_PRECONDITION: return ErrorCode::failed_precondition;
    default: return ErrorCode::internal;
  }
}

RdzvError to_error(const grpc::Status& status, std::string_view op, const std::string& endpoint) {
  const ErrorCode code = error_code_of(status.error_code());
  std::string message = std::string(op) + " (rdzvd " + endpoint + "): " + std::string(error_code_name(code));
  if (!status.error_message().empty()) message += ": " + status.error_message();
  return RdzvError(code, message);
}

std::chrono::milliseconds backoff_delay(const Options& options, unsigned attempt) {
  thread_local std::minstd_rand random(std::random_device{}());
  const auto doubled = options.backoff_initial.count() << std::min(attempt, 20u);
  const auto capped = std::min<std::int64_t>(doubled, std::max(options.backoff_max, options.backoff_initial).count());
  std::uniform_real_distribution<double> jitter(0.5, 1.0);
  return std::chrono::milliseconds(std::max<std::int64_t>(1, std::int64_t(double(capped) * jitter(random))));
}

std::uint32_t wire_timeout(std::chrono::milliseconds timeout, std::string_view op) {
  if (timeout.count() < 0 || timeout.count() > std::int64_t(UINT32_MAX)) {
    throw RdzvError(ErrorCode::invalid_argument,
                    std::string(op) + ": timeout " + std::to_string(timeout.count()) + " ms is outside [0, 2^32) ms");
  }
  return std::uint32_t(timeout.count());
}

}  // namespace llmrdzv::client::detail
