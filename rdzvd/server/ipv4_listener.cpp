// The IPv4 listener behind `--listen 0.0.0.0:PORT` and `--listen A.B.C.D:PORT` (see ipv4_listener.hpp).
#include "ipv4_listener.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace llmrdzv::server {

std::unique_ptr<Ipv4Listener> Ipv4Listener::bind(const std::string& host, std::uint16_t port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return nullptr;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return nullptr;
  const int on = 1;  // as gRPC's own listeners: a port in TIME_WAIT may be bound again
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  socklen_t size = sizeof addr;
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || listen(fd, SOMAXCONN) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &size) != 0) {
    close(fd);
    return nullptr;
  }
  return std::unique_ptr<Ipv4Listener>(new Ipv4Listener(fd, ntohs(addr.sin_port)));
}

void Ipv4Listener::start(std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor,
                         std::shared_ptr<ConnectionLimit> limit, EvictionLog eviction_log) {
  acceptor_ = std::move(acceptor);
  limit_ = std::move(limit);
  eviction_log_ = std::move(eviction_log);
  thread_ = std::thread([this] { accept_loop(); });
}

void Ipv4Listener::accept_loop() {
  while (!stopping_.load()) {
    // Non-blocking, as gRPC's own listeners hand connections to its pollers (a blocking one would
    // stall the poller thread that reads it), and without Nagle's delay, as theirs.
    const int connection = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (connection < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        usleep(10000);  // out of descriptors: let connections close rather than spin
        continue;
      }
      return;  // shut down (EINVAL) or broken
    }
    count(connection);
    const int on = 1;
    setsockopt(connection, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters params;
    params.listener_fd = fd_;
    params.fd = connection;  // gRPC owns it from here, and closes it
    acceptor_->HandleNewConnection(&params);
  }
}

void Ipv4Listener::count(int connection) {
  TcpConnection ends{connection};
  socklen_t size = sizeof ends.local;
  if (getsockname(connection, reinterpret_cast<sockaddr*>(&ends.local), &size) != 0) return;
  size = sizeof ends.peer;
  if (getpeername(connection, reinterpret_cast<sockaddr*>(&ends.peer), &size) != 0) return;  // gone already
  const auto verdict = limit_->admit(ends);
  if (verdict.evicted == 0) return;
  const auto now = std::chrono::steady_clock::now();
  auto [told, first] = last_told_.try_emplace(verdict.peer, now);
  if (first || now - told->second >= std::chrono::minutes(1)) {
    told->second = now;
    eviction_log_(verdict);
  }
}

Ipv4Listener::~Ipv4Listener() {
  stopping_.store(true);
  shutdown(fd_, SHUT_RDWR);  // wakes accept() with EINVAL
  if (thread_.joinable()) thread_.join();
  close(fd_);
}

}  // namespace llmrdzv::server
