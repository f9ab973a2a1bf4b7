// How many connections one peer may keep open to rdzvd before they have said Hello, the call whose
// credential proves the token and with which every client of the library (rdzvctl too) begins
// (max_unauthenticated_per_peer, issue 39). An idle connection costs the
// daemon about 20 KiB, so without a bound another user of a node could grow a victim step's rdzvd
// until its descriptor limit. Refusing a peer's new connections would hand that user a cheaper
// attack (a rank on the same node, which shares the address, could no longer connect), so past
// the bound the peer's *oldest* unauthenticated connection is shut down instead: a client with
// the token says Hello within milliseconds of connecting and then no longer counts.
//
// A peer is who the kernel says holds the other end: on this node, the uid owning that socket
// (root and rdzvd's own uid, the step's owner, are not bounded); from another node, its address,
// since nothing more can be told from here. gRPC owns each descriptor once handed over, so a
// connection is recognised by its descriptor number and socket inode, which also tells whether
// gRPC has closed it meanwhile.
#pragma once

#include <netinet/in.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace llmrdzv::server {

struct TcpConnection {
  int fd = -1;
  sockaddr_in local{};  // rdzvd's end
  sockaddr_in peer{};
};

class ConnectionLimit {
 public:
  // The uid owning the socket with these ends on this node (TcpSocketLookup::owner, or a test's).
  using Lookup = std::function<std::optional<std::uint32_t>(const sockaddr_in& local, const sockaddr_in& remote)>;

  struct Verdict {
    std::string peer;  // "uid 1001" or "address 10.0.0.2"; empty when not bounded
    std::size_t pending = 0;  // the peer's unauthenticated connections, the new one included
    int evicted = 0;  // connections of that peer shut down to make room (0 or 1)
  };

  // `per_peer` 0: no bound. `unbounded`: uids whose connections on this node are not counted.
  ConnectionLimit(std::uint32_t per_peer, std::vector<std::uint32_t> unbounded, Lookup lookup);

  // A connection just accepted, before gRPC has it. Called from one thread (the accept loop).
  Verdict admit(const TcpConnection& connection);
  // The connection gRPC names `peer` ("ipv4:10.0.0.2:41234") said Hello, past the credential
  // check: it no longer counts. Any thread.
  void authenticated(const std::string& peer);
  // Connections shut down so far; any thread (for /metrics).
  std::uint64_t evicted() const { return evicted_.load(); }

 private:
  struct Pending {
    TcpConnection ends;
    dev_t device = 0;  // of the socket's inode: the descriptor number alone may be reused
    ino_t inode = 0;
  };
  using Endpoint = std::pair<std::uint32_t, std::uint16_t>;  // the peer's address and port, as on the wire

  static bool still_open(const Pending& pending);
  std::size_t forget_closed(std::deque<Pending>& pending);
  void forget(const Pending& pending);

  std::uint32_t per_peer_;
  std::vector<std::uint32_t> unbounded_;
  Lookup lookup_;
  std::mutex mutex_;
  std::map<std::string, std::deque<Pending>> pending_;  // by peer, oldest first
  std::map<Endpoint, std::string> peer_of_;  // every pending connection's peer
  std::size_t sweep_at_ = 4096;
  std::atomic<std::uint64_t> evicted_{0};
};

}  // namespace llmrdzv::server
