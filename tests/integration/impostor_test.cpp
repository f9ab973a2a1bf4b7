// The attacks on the handshake, reproduced with real processes over loopback: a squatter on the
// daemon's port that records every byte, a fake daemon that answers OK to every call, and a relay
// that forwards Hello to the real daemon. Each time the client must reach the real rdzvd or fail
// at once with an error naming the endpoint, and the attacker must receive neither the token nor
// a ticket.
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <thread>

#include "llmrdzv/client/client.hpp"
#include "llmrdzv/common/port_probe.hpp"
#include "llmrdzv/v1/rendezvous.grpc.pb.h"
#include "local_ports.hpp"
#include "test_clients.hpp"

using namespace llmrdzv::testing;
using namespace std::chrono_literals;
using llmrdzv::client::Client;
using llmrdzv::client::ErrorCode;
using llmrdzv::client::RdzvError;
namespace v1 = llmrdzv::v1;

namespace {

constexpr std::uint16_t kRangeSize = 4;
constexpr std::string_view kHello = "/llmrdzv.v1.Rendezvous/Hello";

// What an attacker received: every byte, and (for gRPC fakes) which methods were called.
class Loot {
 public:
  void add(const std::string& method, const std::string& bytes) {
    std::lock_guard lock(mutex_);
    if (!method.empty()) methods_.push_back(method);
    bytes_ += bytes;
  }
  std::string bytes() const {
    std::lock_guard lock(mutex_);
    return bytes_;
  }
  std::vector<std::string> methods() const {
    std::lock_guard lock(mutex_);
    return methods_;
  }
  // Neither the token nor any ticket ("t2." followed by the HMAC) is in what was received.
  void check_clean(const std::string& token) const {
    const std::string received = bytes();
    CHECK(received.find(token) == std::string::npos);
    CHECK(received.find("t2.") == std::string::npos);
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> methods_;
  std::string bytes_;
};

// A raw TCP squatter: accepts every connection on its port and records what arrives, never
// answering (not even the HTTP/2 handshake).
class RawSquatter {
 public:
  explicit RawSquatter(std::uint16_t port) : fd_(listen_on(port)) {
    REQUIRE(fd_ >= 0);
    thread_ = std::thread([this] { serve(); });
  }
  ~RawSquatter() {
    stop_ = true;
    thread_.join();
    for (int fd : clients_) close(fd);
    close(fd_);
  }
  const Loot& loot() const { return loot_; }

 private:
  void serve() {
    while (!stop_) {
      std::vector<pollfd> fds{{fd_, POLLIN, 0}};
      for (int fd : clients_) fds.push_back({fd, POLLIN, 0});
      if (poll(fds.data(), fds.size(), 50) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (client >= 0) clients_.push_back(client);
      }
      for (std::size_t i = 1; i < fds.size(); ++i) {
        if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
        char buffer[4096];
        const ssize_t got = read(fds[i].fd, buffer, sizeof buffer);
        if (got > 0) loot_.add("", std::string(buffer, std::size_t(got)));
      }
    }
  }

  int fd_;
  std::vector<int> clients_;
  std::atomic<bool> stop_{false};
  Loot loot_;
  std::thread thread_;
};

std::string to_string(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  std::string text;
  if (!buffer.Dump(&slices).ok()) return text;
  for (const auto& slice : slices) text.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  return text;
}

// A fake rdzvd: a gRPC server that answers every call of every method with OK and an empty
// message (what a fake that "accepts everything" does), recording each request. With a relay
// target it forwards Hello to that daemon and hands back its real answer instead.
class FakeDaemon {
 public:
  explicit FakeDaemon(std::uint16_t port = 0, std::string relay_to = {}) {
    if (!relay_to.empty())
      relay_ = v1::Rendezvous::NewStub(grpc::CreateChannel(relay_to, grpc::InsecureChannelCredentials()));
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:" + std::to_string(port), grpc::InsecureServerCredentials(), &port_);
    builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
    builder.RegisterCallbackGenericService(&service_);
    server_ = builder.BuildAndStart();
    REQUIRE(server_);
    REQUIRE(port_ > 0);
  }
  ~FakeDaemon() { server_->Shutdown(std::chrono::system_clock::now() + 1s); }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  std::uint16_t port() const { return std::uint16_t(port_); }
  const Loot& loot() const { return loot_; }

 private:
  class Call final : public grpc::ServerGenericBidiReactor {
   public:
    Call(FakeDaemon& fake, std::string method) : fake_(fake), method_(std::move(method)) { StartRead(&request_); }
    void OnReadDone(bool ok) override {
      if (!ok) return Finish(grpc::Status::OK);
      const std::string request = to_string(request_);
      fake_.loot_.add(method_, request);
      std::string answer;
      if (method_ == kHello && fake_.relay_) {
        v1::HelloRequest hello;
        hello.ParseFromString(request);
        v1::HelloResponse response;
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() + 5s);
        if (fake_.relay_->Hello(&context, hello, &response).ok()) answer = response.SerializeAsString();
      }
      grpc::Slice slice(answer);
      response_ = grpc::ByteBuffer(&slice, 1);
      StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
    }
    void OnDone() override { delete this; }

   private:
    FakeDaemon& fake_;
    std::string method_;
    grpc::ByteBuffer request_;
    grpc::ByteBuffer response_;
  };
  class Service final : public grpc::CallbackGenericService {
   public:
    explicit Service(FakeDaemon& fake) : fake_(fake) {}
    grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* context) override {
      return new Call(fake_, context->method());
    }

   private:
    FakeDaemon& fake_;
  };

  Loot loot_;
  std::unique_ptr<v1::Rendezvous::Stub> relay_;
  Service service_{*this};
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

std::vector<std::string> probing_args(const llmrdzv::PortRange& range) {
  return {"--port-range", std::to_string(range.lo) + "-" + std::to_string(range.hi), "--port-probes",
          std::to_string(kRangeSize)};
}

// A client of `rdzvd` that is told only the base port of `range`, as ranks on other nodes are.
llmrdzv::client::Options probing_options(const RdzvdProcess& rdzvd, const llmrdzv::PortRange& range) {
  auto options = rdzvd.client_options(1);
  options.endpoint = "127.0.0.1:" + std::to_string(range.lo);
  options.port_range = range;
  options.port_probes = kRangeSize;
  return options;
}

const auto denied = [](const RdzvError& e) { return e.code() == ErrorCode::permission_denied; };

}  // namespace

TEST_CASE("a raw squatter on the base port receives no token and the client finds the real rdzvd", "[security]") {
  ScratchDir dir;
  const auto range = free_port_range(kRangeSize);
  RawSquatter squatter(range.lo);
  RdzvdProcess rdzvd(dir, RdzvdConfig{.listen = "127.0.0.1:" + std::to_string(range.lo), .extra_args = probing_args(range)});
  CHECK(rdzvd.port() == llmrdzv::probe_port(range, range.lo, 1));
  Client client(probing_options(rdzvd, range));
  CHECK(client.endpoint() == rdzvd.endpoint());
  const auto assignment = client.join();
  client.kv(assignment.round).set("k", "v");
  client.leave();
  CHECK_FALSE(squatter.loot().bytes().empty());  // the client did knock
  squatter.loot().check_clean(rdzvd.token());
}

TEST_CASE("a fake daemon that answers OK to everything is refused by name and gets only a Hello", "[security]") {
  ScratchDir dir;
  SECTION("told its endpoint: the client fails at once") {
    FakeDaemon fake;
    RdzvdProcess rdzvd(dir);  // the token a real step would have
    auto options = rdzvd.client_options(1);
    options.endpoint = fake.endpoint();
    const auto start = std::chrono::steady_clock::now();
    try {
      Client client(options);
      FAIL("the fake daemon was accepted");
    } catch (const RdzvError& error) {
      CHECK(error.code() == ErrorCode::permission_denied);
      CHECK_THAT(error.what(), Catch::Contains("rdzvd " + fake.endpoint()) &&
                                   Catch::Contains("did not prove it holds the rendezvous token"));
    }
    CHECK(std::chrono::steady_clock::now() - start < 5s);
    for (const auto& method : fake.loot().methods()) CHECK(method == kHello);
    CHECK_FALSE(fake.loot().methods().empty());
    fake.loot().check_clean(rdzvd.token());
  }
  SECTION("on the base port: the client passes it by and joins the real rdzvd") {
    const auto range = free_port_range(kRangeSize);
    FakeDaemon fake(range.lo);
    RdzvdProcess rdzvd(dir, RdzvdConfig{.listen = "127.0.0.1:" + std::to_string(range.lo), .extra_args = probing_args(range)});
    Client client(probing_options(rdzvd, range));
    CHECK(client.endpoint() == rdzvd.endpoint());
    client.join();
    client.leave();
    for (const auto& method : fake.loot().methods()) CHECK(method == kHello);
    fake.loot().check_clean(rdzvd.token());
  }
}

TEST_CASE("a relay that forwards Hello to the real rdzvd is refused: the proof names the daemon's port", "[security]") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  FakeDaemon relay(0, rdzvd.endpoint());
  auto options = rdzvd.client_options(1);
  options.endpoint = relay.endpoint();
  CHECK_THROWS_MATCHES(Client(options), RdzvError, Catch::Predicate<RdzvError>(denied));
  try {
    Client client(options);
  } catch (const RdzvError& error) {
    CHECK_THAT(error.what(), Catch::Contains("rdzvd " + relay.endpoint()) &&
                                 Catch::Contains("relays the rendezvous daemon of port " + std::to_string(rdzvd.port())));
  }
  for (const auto& method : relay.loot().methods()) CHECK(method == kHello);
  relay.loot().check_clean(rdzvd.token());
  // The real daemon is untouched: a client that dials it directly works.
  Client direct(rdzvd.client_options(1));
  direct.join();
  direct.leave();
}
