// `--listen 0.0.0.0:PORT` on IPv4 only. gRPC turns any wildcard address into a dual-stack `[::]`
// listener, so a daemon told 0.0.0.0 also answered on every IPv6 address of the node (issue 39:
// listen where it is told). This listener binds the AF_INET socket itself, accepts on a thread of
// its own and hands each connection to the gRPC server through its external-connection acceptor.
#pragma once

#include <grpcpp/server_builder.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>

namespace llmrdzv::server {

class Ipv4Listener {
 public:
  // Bound and listening on 0.0.0.0:`port` (0: any free port), or nullptr when the port is taken.
  // Never shares a port (no SO_REUSEPORT), so port probing moves past a busy one.
  static std::unique_ptr<Ipv4Listener> bind_any(std::uint16_t port);
  ~Ipv4Listener();
  Ipv4Listener(const Ipv4Listener&) = delete;
  Ipv4Listener& operator=(const Ipv4Listener&) = delete;

  std::uint16_t port() const { return port_; }
  // Starts accepting once the server that `acceptor` belongs to is started.
  void start(std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor);

 private:
  explicit Ipv4Listener(int fd, std::uint16_t port) : fd_(fd), port_(port) {}
  void accept_loop();

  int fd_;
  std::uint16_t port_;
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace llmrdzv::server
