// Attackers of the handshake, for the security tests (in-process and, through rdzv-impostor, on
// the test cluster as another user): a raw TCP squatter that records every byte and never
// answers, and a fake rdzvd that answers every call of every method with OK and an empty message,
// or relays Hello to the real daemon. Each keeps what it received (its "loot"). And two floods of
// the daemon's memory: forged calls, and idle connections.
#pragma once

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "llmrdzv/v1/rendezvous.grpc.pb.h"

namespace llmrdzv::testing {

// What an attacker received: every byte, and (for gRPC fakes) which methods were called.
class Loot {
 public:
  void add(const std::string& method, const std::string& bytes);
  std::string bytes() const;
  std::vector<std::string> methods() const;

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> methods_;
  std::string bytes_;
};

// Accepts every connection on 127.0.0.1:port (or `address`) and records what arrives.
class RawSquatter {
 public:
  explicit RawSquatter(std::uint16_t port, const std::string& address = "127.0.0.1");
  ~RawSquatter();
  const Loot& loot() const { return loot_; }

 private:
  void serve();

  int fd_;
  std::vector<int> clients_;
  std::atomic<bool> stop_{false};
  Loot loot_;
  std::thread thread_;
};

// A fake rdzvd on `listen` ("HOST:PORT", port 0 for any). With `relay_to` it forwards Hello to
// that daemon and hands back the real answer.
class FakeDaemon {
 public:
  explicit FakeDaemon(const std::string& listen = "127.0.0.1:0", const std::string& relay_to = {});
  ~FakeDaemon();
  std::uint16_t port() const { return std::uint16_t(port_); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  const Loot& loot() const { return loot_; }

 private:
  class Call;
  class Service final : public grpc::CallbackGenericService {
   public:
    explicit Service(FakeDaemon& fake) : fake_(fake) {}
    grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override;

   private:
    FakeDaemon& fake_;
  };

  Loot loot_;
  std::unique_ptr<llmrdzv::v1::Rendezvous::Stub> relay_;
  Service service_{*this};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// The attack on memory before authentication: `calls` concurrent Set calls, each on a connection
// of its own, of a `value_bytes` value with a forged ticket in the scope and, with
// `forged_metadata`, a forged credential in the metadata too (else none). One serialized message
// is shared by every call, so the attacker's own memory stays at one copy. Returns each call's
// status once all have ended (or `deadline` passed).
std::vector<grpc::Status> forged_set_flood(const std::string& endpoint, const std::string& rdzv_id, int calls,
                                           std::size_t value_bytes, bool forged_metadata,
                                           std::chrono::milliseconds deadline);

// The attack on memory with idle connections: `count` TCP connections to `target`
// ("HOST:PORT", over IPv4) that never send a byte, held until destroyed.
class IdleConnections {
 public:
  IdleConnections(const std::string& target, int count);
  ~IdleConnections();
  IdleConnections(const IdleConnections&) = delete;
  IdleConnections& operator=(const IdleConnections&) = delete;
  // How many the other end has closed by now (each read until its end, or until nothing is left).
  int closed_by_peer();
  // Of those, how many are the oldest connections in a row (after closed_by_peer).
  int oldest_closed_in_a_row() const;
  int count() const { return int(fds_.size()); }

 private:
  std::vector<int> fds_;
  std::vector<bool> closed_;
};

// VmRSS of process `pid` in bytes, from /proc; 0 when it cannot be read.
std::uint64_t resident_bytes(int pid);

}  // namespace llmrdzv::testing
