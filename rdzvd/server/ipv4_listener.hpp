// rdzvd's own listener for `--listen` on an IPv4 address (0.0.0.0 or a numeric one), which is
// what the plugin and the site service use. gRPC turns a wildcard address into a dual-stack `[::]`
// listener, so a daemon told 0.0.0.0 also answered on every IPv6 address of the node (issue 39:
// listen where it is told); and accepting here lets rdzvd count each peer's connections before
// gRPC has them (max_unauthenticated_per_peer, connection_limit.hpp). It binds the AF_INET socket
// itself, accepts on a thread of its own and hands each connection to the gRPC server through its
// external-connection acceptor.
#pragma once

#include <grpcpp/server_builder.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "connection_limit.hpp"

namespace llmrdzv::server {

class Ipv4Listener {
 public:
  // Told once per peer and minute while connections of that peer are being shut down.
  using EvictionLog = std::function<void(const ConnectionLimit::Verdict&)>;

  // Bound and listening on `host`:`port` (a numeric IPv4 address; port 0: any free port), or
  // nullptr when the port is taken or the address is not this node's. Never shares a port (no
  // SO_REUSEPORT), so port probing moves past a busy one.
  static std::unique_ptr<Ipv4Listener> bind(const std::string& host, std::uint16_t port);
  ~Ipv4Listener();
  Ipv4Listener(const Ipv4Listener&) = delete;
  Ipv4Listener& operator=(const Ipv4Listener&) = delete;

  std::uint16_t port() const { return port_; }
  // Starts accepting once the server that `acceptor` belongs to is started; each connection is
  // first counted by `limit`.
  void start(std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor,
             std::shared_ptr<ConnectionLimit> limit, EvictionLog eviction_log);

 private:
  explicit Ipv4Listener(int fd, std::uint16_t port) : fd_(fd), port_(port) {}
  void accept_loop();
  void count(int connection);

  int fd_;
  std::uint16_t port_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::shared_ptr<ConnectionLimit> limit_;
  EvictionLog eviction_log_;
  std::map<std::string, std::chrono::steady_clock::time_point> last_told_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace llmrdzv::server
