// The bound on each peer's unauthenticated connections (rdzvd/server/connection_limit.hpp) over
// real loopback connections, and the kernel lookup that tells this node's users apart.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "connection_limit.hpp"
#include "tcp_socket_lookup.hpp"

using llmrdzv::server::ConnectionLimit;
using llmrdzv::server::TcpConnection;
using llmrdzv::server::TcpSocketLookup;

namespace {

// A listener on 127.0.0.1 and the connections made to it: each with its client end (the test's
// view of the peer) and its accepted end (what rdzvd would hand gRPC).
class Loopback {
 public:
  Loopback() {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in where{};
    where.sin_family = AF_INET;
    where.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof where;
    REQUIRE(bind(listener_, reinterpret_cast<sockaddr*>(&where), sizeof where) == 0);
    REQUIRE(listen(listener_, 64) == 0);
    REQUIRE(getsockname(listener_, reinterpret_cast<sockaddr*>(&where), &size) == 0);
    address_ = where;
  }
  ~Loopback() {
    for (const auto& [client, accepted] : pairs_) {
      close(client);
      close(accepted.fd);
    }
    close(listener_);
  }

  // A new connection: its client descriptor, and the accepted end with both addresses.
  std::pair<int, TcpConnection> connect_one() {
    const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(::connect(client, reinterpret_cast<const sockaddr*>(&address_), sizeof address_) == 0);
    TcpConnection accepted;
    socklen_t size = sizeof accepted.peer;
    accepted.fd = accept4(listener_, reinterpret_cast<sockaddr*>(&accepted.peer), &size, SOCK_CLOEXEC);
    REQUIRE(accepted.fd >= 0);
    size = sizeof accepted.local;
    REQUIRE(getsockname(accepted.fd, reinterpret_cast<sockaddr*>(&accepted.local), &size) == 0);
    pairs_.emplace_back(client, accepted);
    return pairs_.back();
  }

 private:
  int listener_ = -1;
  sockaddr_in address_{};
  std::vector<std::pair<int, TcpConnection>> pairs_;
};

// Whether the server side shut the connection down: the client reads the end of the stream.
bool shut_down(int client) {
  char byte;
  return recv(client, &byte, 1, MSG_DONTWAIT) == 0;
}

std::string grpc_peer(const TcpConnection& c) {
  char text[INET_ADDRSTRLEN];
  inet_ntop(AF_INET, &c.peer.sin_addr, text, sizeof text);
  return std::string("ipv4:") + text + ":" + std::to_string(ntohs(c.peer.sin_port));
}

// A kernel stand-in: each client port belongs to the uid the test says, or to another node.
struct Owners {
  std::map<std::uint16_t, std::uint32_t> uid_of_port;
  ConnectionLimit::Lookup lookup() {
    return [this](const sockaddr_in& local, const sockaddr_in&) -> std::optional<std::uint32_t> {
      const auto found = uid_of_port.find(ntohs(local.sin_port));
      if (found == uid_of_port.end()) return std::nullopt;
      return found->second;
    };
  }
};

}  // namespace

TEST_CASE("a peer past max_unauthenticated_per_peer loses its oldest unauthenticated connection") {
  Loopback loopback;
  Owners owners;
  ConnectionLimit limit(2, {0, 1000}, owners.lookup());
  std::vector<std::pair<int, TcpConnection>> mallory;
  for (int i = 0; i < 3; ++i) {
    mallory.push_back(loopback.connect_one());
    owners.uid_of_port[ntohs(mallory.back().second.peer.sin_port)] = 1002;
  }
  CHECK(limit.admit(mallory[0].second).evicted == 0);
  const auto second = limit.admit(mallory[1].second);
  CHECK(second.peer == "uid 1002");
  CHECK(second.pending == 2);
  CHECK(second.evicted == 0);
  const auto third = limit.admit(mallory[2].second);
  CHECK(third.evicted == 1);
  CHECK(third.pending == 2);
  CHECK(limit.evicted() == 1);
  CHECK(shut_down(mallory[0].first));
  CHECK_FALSE(shut_down(mallory[1].first));
  CHECK_FALSE(shut_down(mallory[2].first));

  SECTION("an authenticated connection no longer counts") {
    limit.authenticated(grpc_peer(mallory[1].second));
    auto fourth = loopback.connect_one();
    owners.uid_of_port[ntohs(fourth.second.peer.sin_port)] = 1002;
    CHECK(limit.admit(fourth.second).evicted == 0);
    auto fifth = loopback.connect_one();
    owners.uid_of_port[ntohs(fifth.second.peer.sin_port)] = 1002;
    CHECK(limit.admit(fifth.second).evicted == 1);  // the third, not the authenticated second
    CHECK(shut_down(mallory[2].first));
    CHECK_FALSE(shut_down(mallory[1].first));
  }
  SECTION("a connection gRPC has closed no longer counts") {
    // Closed, and its descriptor number taken at once by an unrelated socket (left for Loopback
    // to close): the inode tells them apart.
    const int unrelated = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(dup2(unrelated, mallory[1].second.fd) == mallory[1].second.fd);
    close(unrelated);
    auto fourth = loopback.connect_one();
    owners.uid_of_port[ntohs(fourth.second.peer.sin_port)] = 1002;
    CHECK(limit.admit(fourth.second).evicted == 0);
    CHECK(shut_down(mallory[1].first));  // the client sees its connection closed
    CHECK_FALSE(shut_down(mallory[2].first));
  }
  SECTION("other peers are counted apart, and unbounded uids not at all") {
    std::vector<std::pair<int, TcpConnection>> others;
    for (int i = 0; i < 4; ++i) others.push_back(loopback.connect_one());
    owners.uid_of_port[ntohs(others[0].second.peer.sin_port)] = 1003;
    owners.uid_of_port[ntohs(others[1].second.peer.sin_port)] = 1000;  // rdzvd's own uid
    owners.uid_of_port[ntohs(others[2].second.peer.sin_port)] = 0;
    // others[3]: from another node, its address
    CHECK(limit.admit(others[0].second).peer == "uid 1003");
    CHECK(limit.admit(others[1].second).peer.empty());
    CHECK(limit.admit(others[2].second).peer.empty());
    const auto remote = limit.admit(others[3].second);
    CHECK(remote.peer == "address 127.0.0.1");
    CHECK(remote.evicted == 0);
    for (const auto& [client, accepted] : others) CHECK_FALSE(shut_down(client));
    CHECK(limit.evicted() == 1);
  }
}

TEST_CASE("max_unauthenticated_per_peer 0 bounds nothing") {
  Loopback loopback;
  Owners owners;
  ConnectionLimit limit(0, {}, owners.lookup());
  for (int i = 0; i < 5; ++i) {
    const auto [client, accepted] = loopback.connect_one();
    CHECK(limit.admit(accepted).evicted == 0);
    CHECK_FALSE(shut_down(client));
  }
}

TEST_CASE("the kernel names the uid owning the other end of a connection on this node") {
  TcpSocketLookup sockets;
  REQUIRE(sockets.available());
  Loopback loopback;
  const auto [client, accepted] = loopback.connect_one();
  // The client's end: its own address is the accepted end's peer.
  CHECK(sockets.owner(accepted.peer, accepted.local) == geteuid());
  // Nothing has that pair of ends the other way round with a wrong port.
  sockaddr_in nowhere = accepted.peer;
  nowhere.sin_port = htons(1);
  CHECK_FALSE(sockets.owner(nowhere, accepted.local));
}
