// One exact sock_diag lookup per call (see tcp_socket_lookup.hpp). The kernel finds the socket in
// its established (or time-wait) hash by the four-tuple; no privilege is needed.
#include "tcp_socket_lookup.hpp"

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace llmrdzv::server {

TcpSocketLookup::TcpSocketLookup() {
  fd_ = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd_ < 0) {
    open_error_ = errno;
    return;
  }
  // A kernel that never answers must not stall the accept loop for long.
  const timeval timeout{1, 0};
  setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
}

TcpSocketLookup::~TcpSocketLookup() {
  if (fd_ >= 0) close(fd_);
}

std::optional<std::uint32_t> TcpSocketLookup::owner(const sockaddr_in& local, const sockaddr_in& remote) {
  if (fd_ < 0) return std::nullopt;
  struct {
    nlmsghdr header;
    inet_diag_req_v2 body;
  } request{};
  request.header.nlmsg_len = sizeof request;
  request.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  request.header.nlmsg_flags = NLM_F_REQUEST;
  request.header.nlmsg_seq = ++sequence_;
  request.body.sdiag_family = AF_INET;
  request.body.sdiag_protocol = IPPROTO_TCP;
  request.body.idiag_states = ~0u;
  request.body.id.idiag_sport = local.sin_port;  // both already in network order, as the kernel wants
  request.body.id.idiag_dport = remote.sin_port;
  request.body.id.idiag_src[0] = local.sin_addr.s_addr;
  request.body.id.idiag_dst[0] = remote.sin_addr.s_addr;
  request.body.id.idiag_cookie[0] = INET_DIAG_NOCOOKIE;
  request.body.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (sendto(fd_, &request, sizeof request, 0, reinterpret_cast<const sockaddr*>(&kernel), sizeof kernel) < 0)
    return std::nullopt;
  alignas(nlmsghdr) char reply[8192];
  for (;;) {
    const ssize_t size = recv(fd_, reply, sizeof reply, 0);
    if (size < 0 && errno == EINTR) continue;
    if (size <= 0) return std::nullopt;
    int remaining = int(size);
    for (auto* header = reinterpret_cast<const nlmsghdr*>(reply); NLMSG_OK(header, remaining);
         header = NLMSG_NEXT(header, remaining)) {
      if (header->nlmsg_seq != sequence_) continue;  // a late answer to a lookup that timed out
      if (header->nlmsg_type == NLMSG_ERROR) return std::nullopt;  // ENOENT: no such socket here
      if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY) continue;
      const auto* message = static_cast<const inet_diag_msg*>(NLMSG_DATA(header));
      return message->idiag_uid;
    }
  }
}

}  // namespace llmrdzv::server
