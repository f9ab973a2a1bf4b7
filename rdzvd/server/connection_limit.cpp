// Unauthenticated connections per peer (see connection_limit.hpp).
#include "connection_limit.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <string_view>

#include "llmrdzv/common/text_values.hpp"

namespace llmrdzv::server {

ConnectionLimit::ConnectionLimit(std::uint32_t per_peer, std::vector<std::uint32_t> unbounded, Lookup lookup)
    : per_peer_(per_peer), unbounded_(std::move(unbounded)), lookup_(std::move(lookup)) {}

bool ConnectionLimit::still_open(const Pending& pending) {
  struct stat now {};
  return fstat(pending.ends.fd, &now) == 0 && now.st_dev == pending.device && now.st_ino == pending.inode;
}

void ConnectionLimit::forget(const Pending& pending) {
  peer_of_.erase({pending.ends.peer.sin_addr.s_addr, pending.ends.peer.sin_port});
}

std::size_t ConnectionLimit::forget_closed(std::deque<Pending>& pending) {
  std::erase_if(pending, [this](const Pending& p) {
    if (still_open(p)) return false;
    forget(p);
    return true;
  });
  return pending.size();
}

ConnectionLimit::Verdict ConnectionLimit::admit(const TcpConnection& connection) {
  if (per_peer_ == 0) return {};
  // The peer's own end, looked up the other way round: found only when it lives on this node.
  const auto theirs = lookup_(connection.peer, connection.local);
  if (theirs && std::find(unbounded_.begin(), unbounded_.end(), *theirs) != unbounded_.end()) return {};
  Verdict verdict;
  if (theirs) {
    verdict.peer = "uid " + std::to_string(*theirs);
  } else {
    char text[INET_ADDRSTRLEN] = "?";
    inet_ntop(AF_INET, &connection.peer.sin_addr, text, sizeof text);
    verdict.peer = std::string("address ") + text;
  }
  Pending fresh{connection};
  struct stat socket {};
  if (fstat(connection.fd, &socket) != 0) return verdict;
  fresh.device = socket.st_dev;
  fresh.inode = socket.st_ino;

  const std::lock_guard lock(mutex_);
  auto& pending = pending_[verdict.peer];
  if (pending.size() >= per_peer_ && forget_closed(pending) >= per_peer_) {
    // The oldest first. Between the check and the shutdown gRPC could close that descriptor and
    // another connection take its number; the window is a few instructions wide.
    const Pending oldest = pending.front();
    pending.pop_front();
    forget(oldest);
    if (still_open(oldest)) {
      shutdown(oldest.ends.fd, SHUT_RDWR);  // gRPC sees the end of the stream and closes it
      verdict.evicted = 1;
      evicted_.fetch_add(1);
    }
  }
  pending.push_back(fresh);
  peer_of_[{connection.peer.sin_addr.s_addr, connection.peer.sin_port}] = verdict.peer;
  verdict.pending = pending.size();
  // Now and then forget every connection gRPC has closed, so that peers which never reach the
  // bound do not make the bookkeeping grow with every connection ever accepted (amortised: one
  // fstat each).
  if (peer_of_.size() >= sweep_at_) {
    for (auto it = pending_.begin(); it != pending_.end();) {
      if (forget_closed(it->second) == 0) it = pending_.erase(it);
      else ++it;
    }
    sweep_at_ = std::max<std::size_t>(4096, 2 * peer_of_.size());
  }
  return verdict;
}

void ConnectionLimit::authenticated(const std::string& peer) {
  // gRPC's form for IPv4 peers; anything else was never counted.
  constexpr std::string_view kPrefix = "ipv4:";
  if (per_peer_ == 0 || peer.rfind(kPrefix, 0) != 0) return;
  const auto endpoint = parse_host_port(std::string_view(peer).substr(kPrefix.size()));
  in_addr address{};
  if (!endpoint || inet_pton(AF_INET, endpoint->host.c_str(), &address) != 1) return;
  const std::uint16_t port = htons(endpoint->port);
  const std::lock_guard lock(mutex_);
  const auto found = peer_of_.find({address.s_addr, port});
  if (found == peer_of_.end()) return;  // counted no more, or never (an unbounded uid)
  auto& pending = pending_[found->second];
  std::erase_if(pending, [&](const Pending& p) {
    return p.ends.peer.sin_addr.s_addr == address.s_addr && p.ends.peer.sin_port == port;
  });
  if (pending.empty()) pending_.erase(found->second);
  peer_of_.erase(found);
}

}  // namespace llmrdzv::server
