// The state behind a Client: its connection to rdzvd, the current assignment and session.
// Shared by client.cpp (membership, status) and kv_space.cpp (key-value calls). Private.
#pragma once

#include <mutex>
#include <optional>
#include <string_view>

#include "connector.hpp"
#include "llmrdzv/client/handshake.hpp"
#include "llmrdzv/client/client.hpp"
#include "rpc.hpp"
#include "session.hpp"

namespace llmrdzv::client {

struct Client::Impl {
  Options options;
  detail::Connection connection;
  llmrdzv::v1::Scope scope;

  mutable std::mutex mutex;  // guards assignment and session
  std::optional<Assignment> assignment;
  std::shared_ptr<detail::Session> session;  // shared: a barrier on it may outlast a re-join

  std::shared_ptr<detail::Session> current_session() const {
    std::lock_guard lock(mutex);
    return session;
  }

  // One unary call on the stub with the client's deadlines and retry policy.
  template <class Attempt>
  void call(std::string_view op, detail::Idempotent idempotent, std::chrono::milliseconds blocking,
            Attempt&& attempt) const {
    detail::call(options, connection.endpoint, op, idempotent, blocking, [&](grpc::ClientContext& context) {
      add_credential(context, scope.rdzv_id(), scope.ticket());
      return attempt(context);
    });
  }
};

}  // namespace llmrdzv::client
