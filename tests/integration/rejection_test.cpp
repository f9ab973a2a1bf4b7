// Requests rdzvd must refuse, sent by real clients and by a raw gRPC stub that bypasses the
// client library's own checks: wrong or missing token, oversized values, malformed and hostile
// requests, floods of keys, and a peer that speaks garbage TCP. Each gets its documented status
// and the daemon keeps serving a real rendezvous afterwards.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "llmrdzv/client/client.hpp"
#include "llmrdzv/client/handshake.hpp"
#include "llmrdzv/v1/rendezvous.grpc.pb.h"
#include "test_clients.hpp"

using namespace llmrdzv::testing;
using namespace std::chrono_literals;
using llmrdzv::client::Client;
using llmrdzv::client::ErrorCode;
using llmrdzv::client::RdzvError;
namespace v1 = llmrdzv::v1;

namespace {

class RawStub {
 public:
  explicit RawStub(const std::string& endpoint)
      : port_(std::uint16_t(std::stoul(endpoint.substr(endpoint.rfind(':') + 1)))),
        stub_(v1::Rendezvous::NewStub(grpc::CreateChannel(endpoint, grpc::InsecureChannelCredentials()))) {}

  // The scope of `rdzv_id` with the ticket a handshake with `token` gives.
  v1::Scope scope(const std::string& rdzv_id, const std::string& token) {
    const auto hello = llmrdzv::client::hello(*stub_, rdzv_id, token, port_, 10s);
    REQUIRE(hello.outcome == llmrdzv::client::HelloOutcome::proven);
    v1::Scope scope;
    scope.set_rdzv_id(rdzv_id);
    scope.set_ticket(hello.ticket);
    return scope;
  }

  template <class Request, class Response>
  grpc::Status call(grpc::Status (v1::Rendezvous::Stub::*method)(grpc::ClientContext*, const Request&, Response*),
                    const Request& request) {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + 10s);
    if constexpr (requires { request.scope(); })
      llmrdzv::client::add_credential(context, request.scope().rdzv_id(), request.scope().ticket());
    Response response;
    return ((*stub_).*method)(&context, request, &response);
  }

 private:
  std::uint16_t port_;
  std::unique_ptr<v1::Rendezvous::Stub> stub_;
};

v1::JoinRequest join_request(const v1::Scope& scope, int min, int max) {
  v1::JoinRequest request;
  *request.mutable_scope() = scope;
  request.set_participant_id("hostile");
  request.set_requested_rank(-1);
  request.set_host("localhost");
  request.set_local_rank(-1);
  request.set_min_participants(min);
  request.set_max_participants(max);
  request.set_timeout_ms(100);
  return request;
}

// After whatever was thrown at it, the daemon still forms a round of two real client processes.
void check_still_serving(const ScratchDir& dir, RdzvdProcess& rdzvd) {
  auto processes = launch_test_clients(dir, rdzvd, 2, ClientLaunch{.processes = 2});
  const auto assignments = collect_lines(processes, "rank=", 1, 30s);
  CHECK(assignments.size() == 2);
  for (auto& process : processes) CHECK(process->wait(30s) == 0);
  CHECK(rdzvd.wait(0ms) == std::nullopt);
}

}  // namespace

TEST_CASE("a wrong token is rejected with PERMISSION_DENIED at connect, naming the endpoint") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  ClientLaunch launch{.processes = 1, .env_for = [](int) { return EnvChanges{{"RDZV_TOKEN", "not-the-token"}}; }};
  auto processes = launch_test_clients(dir, rdzvd, 1, launch);
  CHECK(processes.front()->wait(30s) == 1);
  CHECK_THAT(processes.front()->stderr_text(),
             Catch::Contains("rdzv-test-client: permission_denied: rdzvd " + rdzvd.endpoint()) &&
                 Catch::Contains("refused our credential") && Catch::Contains("the token is wrong"));

  // The daemon refuses the Hello credential of a token it does not hold, so the client stops at
  // once, not after the connect timeout.
  const auto denied = [](const RdzvError& e) { return e.code() == ErrorCode::permission_denied; };
  auto options = rdzvd.client_options(1);
  options.token = rdzvd.token() + "x";
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_MATCHES(Client(options), RdzvError, Catch::Predicate<RdzvError>(denied));
  CHECK(std::chrono::steady_clock::now() - start < options.connect_timeout);
  options.token.clear();
  CHECK_THROWS_MATCHES(Client(options), RdzvError, Catch::Predicate<RdzvError>(denied));
  check_still_serving(dir, rdzvd);
}

TEST_CASE("an oversized value is rejected with RESOURCE_EXHAUSTED and stores nothing") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir, RdzvdConfig{.extra_args = {"--max-value-size", std::to_string(1 << 20),
                                                     "--max-message-bytes", std::to_string(4 << 20)}});
  Client client(rdzvd.client_options(1));
  client.join();
  // 2 MiB: over the daemon's value limit; 6 MiB: over its gRPC message limit as well.
  for (const auto& [size, limit] : {std::pair{std::size_t(2) << 20, "max_value_size"}, std::pair{std::size_t(6) << 20, ""}}) {
    try {
      client.kv(0).set("big", std::string(size, 'x'));
      FAIL("a value of " << size << " bytes was accepted");
    } catch (const RdzvError& error) {
      CHECK(error.code() == ErrorCode::resource_exhausted);
      CHECK_THAT(error.what(), Catch::Contains("set (rdzvd 127.0.0.1:") && Catch::Contains(limit));
    }
  }
  CHECK_FALSE(client.kv(0).check({"big"}));
  client.leave();
  check_still_serving(dir, rdzvd);
}

// Site mode, so that one rendezvous can be attacked while another one keeps working.
TEST_CASE("malformed and hostile requests get errors while the daemon keeps serving") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir, RdzvdConfig{.mode = "site", .extra_args = {"--max-keys", "5000"}});
  RawStub raw(rdzvd.endpoint());
  const v1::Scope scope = raw.scope(rdzvd.rdzv_id(), rdzvd.token());

  SECTION("empty, huge and unknown rendezvous ids") {
    v1::Scope empty = scope;
    empty.set_rdzv_id("");
    CHECK(raw.call(&v1::Rendezvous::Stub::Join, join_request(empty, 1, 1)).error_code() ==
          grpc::StatusCode::INVALID_ARGUMENT);
    v1::Scope huge = scope;
    huge.set_rdzv_id(std::string(1 << 20, 'i'));
    // Within gRPC's bound on metadata but over max_id_length: the daemon's own limit names itself.
    huge.set_rdzv_id(std::string(1000, 'i'));
    const auto over_limit = raw.call(&v1::Rendezvous::Stub::Join, join_request(huge, 1, 1));
    CHECK(over_limit.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK_THAT(over_limit.error_message(), Catch::Contains("max_id_length"));
    huge.set_rdzv_id(std::string(1 << 20, 'i'));
    v1::GetRequest unknown;
    *unknown.mutable_scope() = raw.scope("nobody.0", rdzvd.token_for("nobody.0"));
    unknown.set_key("k");
    const auto status = raw.call(&v1::Rendezvous::Stub::Get, unknown);
    CHECK(status.error_code() == grpc::StatusCode::NOT_FOUND);
    CHECK_THAT(status.error_message(), Catch::Contains("unknown rendezvous 'nobody.0'"));
    unknown.mutable_scope()->set_ticket(raw.scope("somebody-else.0", rdzvd.token_for("somebody-else.0")).ticket());
    CHECK(raw.call(&v1::Rendezvous::Stub::Get, unknown).error_code() == grpc::StatusCode::PERMISSION_DENIED);
    // A 1 MiB id travels in the call's metadata too, whose size gRPC bounds: refused from the
    // headers, and gRPC closes the connection it came on (last here: the stubs share it).
    const auto too_long = raw.call(&v1::Rendezvous::Stub::Join, join_request(huge, 1, 1));
    CHECK(too_long.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK_THAT(too_long.error_message(), Catch::Contains("metadata size exceeds limit"));
    // The daemon serves on (the client library reconnects).
    CHECK_NOTHROW(llmrdzv::client::Client(rdzvd.client_options(1)).status(false));
  }
  SECTION("negative and inconsistent sizes") {
    // A rendezvous of its own, so the real one below keeps its size.
    const v1::Scope sizes = raw.scope("sizes.0", rdzvd.token_for("sizes.0"));
    REQUIRE(raw.call(&v1::Rendezvous::Stub::Join, join_request(sizes, 1, 1)).ok());
    CHECK(raw.call(&v1::Rendezvous::Stub::Join, join_request(sizes, -3, 2)).error_code() ==
          grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(raw.call(&v1::Rendezvous::Stub::Join, join_request(sizes, 4, 2)).error_code() ==
          grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(raw.call(&v1::Rendezvous::Stub::Join, join_request(sizes, 0, 0)).error_code() ==
          grpc::StatusCode::INVALID_ARGUMENT);
    v1::BarrierRequest barrier;
    *barrier.mutable_scope() = sizes;
    barrier.set_key("b");
    barrier.set_world_size(-5);
    barrier.set_timeout_ms(100);
    CHECK(raw.call(&v1::Rendezvous::Stub::Barrier, barrier).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    v1::SetRequest empty_key;
    *empty_key.mutable_scope() = sizes;
    CHECK(raw.call(&v1::Rendezvous::Stub::Set, empty_key).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  }
  SECTION("a flood of keys hits the key limit of its own rendezvous only") {
    const v1::Scope flood_scope = raw.scope("flood.0", rdzvd.token_for("flood.0"));
    REQUIRE(raw.call(&v1::Rendezvous::Stub::Join, join_request(flood_scope, 1, 1)).ok());
    grpc::Status status;
    int batches = 0;
    for (; batches < 100 && status.ok(); ++batches) {
      v1::MultiSetRequest flood;
      *flood.mutable_scope() = flood_scope;
      for (int i = 0; i < 1000; ++i) {
        auto* entry = flood.add_entries();
        entry->set_key("flood/" + std::to_string(batches) + "/" + std::to_string(i));
        entry->set_value("v");
      }
      status = raw.call(&v1::Rendezvous::Stub::MultiSet, flood);
    }
    CHECK(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK_THAT(status.error_message(), Catch::Contains("max_keys"));
    CHECK(batches == 6);  // 5 batches fit the limit of 5000 keys, the 6th does not
  }
  SECTION("a raw TCP peer that sends garbage, and one that connects and says nothing") {
    const auto connect_raw = [&] {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      sockaddr_in address{};
      address.sin_family = AF_INET;
      address.sin_port = htons(rdzvd.port());
      address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
      return fd;
    };
    const int silent = connect_raw();
    const int garbage = connect_raw();
    std::string noise = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    for (int i = 0; i < 65536; ++i) noise.push_back(char((i * 7919) & 0xff));
    CHECK(send(garbage, noise.data(), noise.size(), MSG_NOSIGNAL) > 0);
    close(garbage);
    check_still_serving(dir, rdzvd);
    close(silent);
  }
  check_still_serving(dir, rdzvd);
}
