// Asks the kernel which uid owns one TCP socket, found by its two IPv4 endpoints (sock_diag over
// netlink, as `ss` does, one exact lookup rather than a dump). rdzvd uses it to tell who holds a
// connection: one from this node has its other end in the same kernel, owned by a uid.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <optional>

namespace llmrdzv::server {

class TcpSocketLookup {
 public:
  // Opens the netlink socket; `available()` is false where the kernel offers no sock_diag (then
  // every lookup answers nullopt).
  TcpSocketLookup();
  ~TcpSocketLookup();
  TcpSocketLookup(const TcpSocketLookup&) = delete;
  TcpSocketLookup& operator=(const TcpSocketLookup&) = delete;

  bool available() const { return fd_ >= 0; }
  int open_error() const { return open_error_; }  // errno of the netlink socket's creation
  // The uid that created the socket whose own end is `local` and whose peer is `remote`, or
  // nullopt when this kernel (this network namespace) holds none, or could not be asked.
  std::optional<std::uint32_t> owner(const sockaddr_in& local, const sockaddr_in& remote);

 private:
  int fd_ = -1;
  int open_error_ = 0;
  std::uint32_t sequence_ = 0;
};

}  // namespace llmrdzv::server
