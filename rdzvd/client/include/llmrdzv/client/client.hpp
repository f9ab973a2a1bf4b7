// The rendezvous client: finds rdzvd (step-port probing), joins a round, keeps a session alive
// with heartbeats and reports its events, and offers every key-value operation of the wire
// contract. No protobuf or gRPC types appear here, so LibTorch code can include this header.
//
// Thread safety: every method may be called from several threads at once, except that the
// constructor, join() and leave() of one Client must not race each other. Errors are RdzvError.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "llmrdzv/client/error.hpp"
#include "llmrdzv/client/options.hpp"
#include "llmrdzv/client/types.hpp"

namespace llmrdzv::client {

using Bytes = std::string;
using SessionCallback = std::function<void(const SessionEvent&)>;

class Client;

// The key-value space of one round (round 0: the rendezvous-wide space that outlives rounds).
// A cheap handle: it must not outlive the Client that made it.
class KvSpace {
 public:
  std::uint64_t round() const { return round_; }

  void set(const std::string& key, const Bytes& value) const;
  // Waits up to `timeout` for the key (0: do not wait, not_found when absent).
  Bytes get(const std::string& key, std::chrono::milliseconds timeout) const;
  std::int64_t add(const std::string& key, std::int64_t delta) const;
  // c10d semantics: returns the value stored after the call.
  Bytes compare_set(const std::string& key, const Bytes& expected, const Bytes& desired) const;
  bool check(const std::vector<std::string>& keys) const;
  void wait(const std::vector<std::string>& keys, std::chrono::milliseconds timeout) const;
  bool delete_key(const std::string& key) const;
  std::int64_t num_keys() const;
  std::vector<std::string> list_keys() const;
  void append(const std::string& key, const Bytes& value) const;
  std::vector<Bytes> multi_get(const std::vector<std::string>& keys,
                               std::chrono::milliseconds timeout) const;
  void multi_set(const std::vector<std::pair<std::string, Bytes>>& entries) const;
  // Adds 1 to key and waits until it reaches world_size (timeout > 0: invalid_argument otherwise).
  void barrier(const std::string& key, std::int64_t world_size, std::chrono::milliseconds timeout) const;
  void queue_push(const std::string& key, const Bytes& value) const;
  // Oldest value; without block, nullopt when empty. With block, waits up to timeout (> 0).
  std::optional<Bytes> queue_pop(const std::string& key, bool block, std::chrono::milliseconds timeout) const;
  std::int64_t queue_len(const std::string& key) const;

 private:
  friend class Client;
  KvSpace(const Client& client, std::uint64_t round) : client_(&client), round_(round) {}
  const Client* client_;
  std::uint64_t round_;
};

class Client {
 public:
  // Validates the options and finds rdzvd (probing ports when a range is given); throws
  // RdzvError(unavailable) when no rdzvd for this rendezvous answers within connect_timeout.
  explicit Client(Options options);
  ~Client();  // closes the session (without Leave: the daemon sees this member fail)
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Joins the pending round and, when it completes, opens the session: heartbeats at the interval
  // the daemon asked for, and `on_event` called (on the session thread) for each event. The
  // callback must not call join(), leave() or destroy the Client.
  Assignment join(SessionCallback on_event = {});
  // Leaves gracefully (others see MEMBER_LEFT) and closes the session. Safe to call twice.
  void leave();

  KvSpace kv(std::uint64_t round) const { return KvSpace(*this, round); }
  // With_scope: also this rendezvous' members and rounds (token checked).
  DaemonStatus status(bool with_scope) const;

  const Options& options() const;
  // The "host:port" the client settled on after probing.
  const std::string& endpoint() const;
  // The latest assignment, if joined.
  std::optional<Assignment> assignment() const;

  struct Impl;

 private:
  friend class KvSpace;
  std::unique_ptr<Impl> impl_;
};

}  // namespace llmrdzv::client
