// The core's error model: a code from a small fixed set plus a human-readable message. The
// server maps codes to gRPC status codes (the proto documents what each one means); the core
// itself knows nothing of gRPC.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace llmrdzv::core {

enum class Code {
  ok,
  not_found,
  permission_denied,
  invalid_argument,
  resource_exhausted,
  failed_precondition,
  aborted,
  deadline_exceeded,
  unavailable,
  cancelled,
};

struct Status {
  Code code = Code::ok;
  std::string message;

  bool ok() const { return code == Code::ok; }
  static Status Ok() { return {}; }
};

inline Status error(Code code, std::string message) { return {code, std::move(message)}; }

const char* code_name(Code code);

// A value or the error that prevented it.
template <class T>
class Result {
 public:
  Result(T value) : state_(std::move(value)) {}
  Result(Status status) : state_(std::move(status)) {}

  bool ok() const { return std::holds_alternative<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T& value() & { return std::get<T>(state_); }
  const Status& status() const& { return std::get<Status>(state_); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace llmrdzv::core
