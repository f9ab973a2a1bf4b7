// Human-readable names of the client's enums, used in messages and by the tools' output.
#include "llmrdzv/client/error.hpp"
#include "llmrdzv/client/types.hpp"

namespace llmrdzv::client {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::permission_denied: return "permission_denied";
    case ErrorCode::not_found: return "not_found";
    case ErrorCode::aborted: return "aborted";
    case ErrorCode::deadline_exceeded: return "deadline_exceeded";
    case ErrorCode::unavailable: return "unavailable";
    case ErrorCode::invalid_argument: return "invalid_argument";
    case ErrorCode::resource_exhausted: return "resource_exhausted";
    case ErrorCode::failed_precondition: return "failed_precondition";
    case ErrorCode::internal: return "internal";
  }
  return "internal";
}

std::string_view event_kind_name(SessionEvent::Kind kind) {
  switch (kind) {
    case SessionEvent::Kind::member_failed: return "member_failed";
    case SessionEvent::Kind::member_left: return "member_left";
    case SessionEvent::Kind::round_closed: return "round_closed";
    case SessionEvent::Kind::participant_waiting: return "participant_waiting";
    case SessionEvent::Kind::shutdown: return "shutdown";
    case SessionEvent::Kind::stream_lost: return "stream_lost";
  }
  return "unknown";
}

}  // namespace llmrdzv::client
