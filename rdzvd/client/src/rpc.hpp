// How every call of the client is made: bounded retries with exponential backoff and jitter for
// UNAVAILABLE on idempotent operations (unary calls, and opening the session stream that joins),
// a fresh context with a deadline per unary attempt, and one translation of gRPC statuses into
// RdzvError. Private to the client library.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <string>
#include <string_view>
#include <thread>

#include "llmrdzv/client/error.hpp"
#include "llmrdzv/client/options.hpp"

namespace llmrdzv::client::detail {

ErrorCode error_code_of(grpc::StatusCode code);

// "<op> (rdzvd <endpoint>): <message>" with the code the status maps to.
RdzvError to_error(const grpc::Status& status, std::string_view op, const std::string& endpoint);

// The attempt-th backoff delay (0-based): initial * 2^attempt capped at max, times a random
// factor in [0.5, 1.0] so that many clients retrying at once spread out.
std::chrono::milliseconds backoff_delay(const Options& options, unsigned attempt);

// Milliseconds as the wire's uint32 timeout; invalid_argument when negative or too long.
std::uint32_t wire_timeout(std::chrono::milliseconds timeout, std::string_view op);

enum class Idempotent { yes, no };

// Runs `attempt()`, which makes one try and returns its gRPC status, until it succeeds or fails
// for good: UNAVAILABLE on idempotent operations is retried with backoff within retry_budget.
// Other failures throw as RdzvError.
template <class Attempt>
void retry(const Options& options, const std::string& endpoint, std::string_view op, Idempotent idempotent,
           Attempt&& attempt) {
  const auto retry_end = std::chrono::steady_clock::now() + options.retry_budget;
  for (unsigned tries = 0;; ++tries) {
    const grpc::Status status = attempt();
    if (status.ok()) return;
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE || idempotent == Idempotent::no) {
      throw to_error(status, op, endpoint);
    }
    const auto delay = backoff_delay(options, tries);
    if (std::chrono::steady_clock::now() + delay >= retry_end) {
      throw to_error(grpc::Status(status.error_code(), status.error_message() + " (after " +
                                                           std::to_string(tries + 1) + " attempts)"),
                     op, endpoint);
    }
    std::this_thread::sleep_for(delay);
  }
}

// One unary call: `attempt(context)` with a fresh context per try. `blocking` is how long the
// daemon may legitimately hold the call (a get's timeout); it extends the per-try deadline.
template <class Attempt>
void call(const Options& options, const std::string& endpoint, std::string_view op, Idempotent idempotent,
          std::chrono::milliseconds blocking, Attempt&& attempt) {
  retry(options, endpoint, op, idempotent, [&] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + options.call_deadline + blocking);
    return attempt(context);
  });
}

}  // namespace llmrdzv::client::detail
