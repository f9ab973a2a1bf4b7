// The gRPC service in-process: Join across threads, blocking Get woken by Set, status-code
// mapping, gRPC deadlines cancelling waiters, Session events, graceful shutdown.
#include <catch2/catch.hpp>
#include <future>
#include <set>

#include "server_fixture.hpp"

using namespace llmrdzv::server::testing;
namespace v1 = llmrdzv::v1;

namespace {

grpc::Status join(InProcessServer& server, v1::Rendezvous::Stub& stub, const std::string& id, int n,
                  v1::JoinResponse* response) {
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  return stub.Join(&context, server.join_request(id, n), response);
}

std::vector<v1::JoinResponse> join_all(InProcessServer& server, int n) {
  std::vector<std::future<v1::JoinResponse>> futures;
  for (int i = 0; i < n; ++i)
    futures.push_back(std::async(std::launch::async, [&server, i, n] {
      v1::JoinResponse response;
      const grpc::Status status = join(server, server.stub(), "p" + std::to_string(i), n, &response);
      REQUIRE(status.ok());
      return response;
    }));
  std::vector<v1::JoinResponse> responses;
  for (auto& f : futures) responses.push_back(f.get());
  return responses;
}

using SessionStream = grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionEvent>;

std::unique_ptr<SessionStream> open_session(InProcessServer& server, grpc::ClientContext& context,
                                            const std::string& id, std::uint64_t round) {
  auto stream = server.stub().Session(&context);
  v1::SessionRequest open;
  server.scope(open.mutable_open()->mutable_scope());
  open.mutable_open()->set_participant_id(id);
  open.mutable_open()->set_round(round);
  REQUIRE(stream->Write(open));
  v1::SessionEvent opened;
  REQUIRE(stream->Read(&opened));
  REQUIRE(opened.kind() == v1::SessionEvent::OPENED);
  return stream;
}

}  // namespace

TEST_CASE("server: concurrent Joins form a round, then a blocked Get wakes on Set", "[server]") {
  InProcessServer server;
  const auto responses = join_all(server, 4);
  std::set<int> ranks;
  for (const auto& r : responses) {
    CHECK(r.round() == 1);
    CHECK(r.world_size() == 4);
    CHECK(r.heartbeat_interval_ms() == 100);
    ranks.insert(r.rank());
  }
  CHECK(ranks.size() == 4);

  auto getter = std::async(std::launch::async, [&server] {
    grpc::ClientContext context;
    v1::GetRequest request;
    server.scope(request.mutable_scope());
    request.set_round(1);
    request.set_key("addr");
    request.set_timeout_ms(10000);
    v1::GetResponse response;
    const grpc::Status status = server.stub().Get(&context, request, &response);
    REQUIRE(status.ok());
    return response.value();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  grpc::ClientContext context;
  v1::SetRequest set;
  server.scope(set.mutable_scope());
  set.set_round(1);
  set.set_key("addr");
  set.set_value(std::string("10.0.0.1\0:29500", 15));
  v1::SetResponse set_response;
  REQUIRE(server.stub().Set(&context, set, &set_response).ok());
  CHECK(getter.get() == std::string("10.0.0.1\0:29500", 15));
}

TEST_CASE("server: core errors map to the proto's gRPC codes", "[server]") {
  InProcessServer server;
  v1::SetRequest request;
  request.mutable_scope()->set_rdzv_id("other.0");
  request.mutable_scope()->set_ticket("x");
  request.set_key("k");
  v1::SetResponse response;
  {
    grpc::ClientContext context;
    const grpc::Status status = server.stub().Set(&context, request, &response);
    CHECK(status.error_code() == grpc::StatusCode::NOT_FOUND);
    CHECK(status.error_message().rfind("foreign-rendezvous:", 0) == 0);
  }
  request.mutable_scope()->set_rdzv_id("7.0");
  {
    grpc::ClientContext context;
    CHECK(server.stub().Set(&context, request, &response).error_code() == grpc::StatusCode::PERMISSION_DENIED);
  }
  server.scope(request.mutable_scope());
  {
    grpc::ClientContext context;
    const grpc::Status status = server.stub().Set(&context, request, &response);
    CHECK(status.error_code() == grpc::StatusCode::NOT_FOUND);  // nobody joined yet
    CHECK_THAT(status.error_message(), Catch::Contains("unknown rendezvous"));
  }
}

TEST_CASE("server: a gRPC deadline cancels the blocked call and the daemon keeps serving", "[server]") {
  auto config = server_test_config();
  config.settings.limits.max_waiters = 3;  // leaked waiters would hit this after three calls
  InProcessServer server(config);
  join_all(server, 1);
  const auto wait_once = [&server] {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(20));
    v1::WaitRequest request;
    server.scope(request.mutable_scope());
    request.set_round(1);
    request.add_keys("never");
    request.set_timeout_ms(60000);
    v1::WaitResponse response;
    return server.stub().Wait(&context, request, &response).error_code();
  };
  for (int i = 0; i < 10; ++i) {
    CHECK(wait_once() == grpc::StatusCode::DEADLINE_EXCEEDED);
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the server sees the cancel
  }
  grpc::ClientContext context;
  v1::StatusRequest request;
  server.scope(request.mutable_scope());
  v1::StatusResponse response;
  REQUIRE(server.stub().Status(&context, request, &response).ok());
  CHECK(response.rendezvous(0).members() == 1);
}

TEST_CASE("server: a session that ends without Leave tells the others MEMBER_FAILED", "[server]") {
  InProcessServer server;
  const auto responses = join_all(server, 2);
  grpc::ClientContext survivor_context, leaver_context;
  auto survivor = open_session(server, survivor_context, "p0", 1);
  auto leaver = open_session(server, leaver_context, "p1", 1);
  leaver->WritesDone();
  v1::SessionEvent event;
  while (leaver->Read(&event)) {
  }
  CHECK(leaver->Finish().ok());
  REQUIRE(survivor->Read(&event));
  CHECK(event.kind() == v1::SessionEvent::MEMBER_FAILED);
  CHECK(event.round() == 1);
  const int p1_rank = responses[1].rank();
  CHECK(event.rank() == p1_rank);
  survivor->WritesDone();
  while (survivor->Read(&event)) {
  }
  survivor->Finish();
}

TEST_CASE("server: shutdown sends SHUTDOWN and fails blocked calls with UNAVAILABLE", "[server]") {
  InProcessServer server;
  join_all(server, 1);
  grpc::ClientContext session_context;
  auto session = open_session(server, session_context, "p0", 1);
  auto blocked = std::async(std::launch::async, [&server] {
    grpc::ClientContext context;
    v1::GetRequest request;
    server.scope(request.mutable_scope());
    request.set_key("never");
    request.set_timeout_ms(60000);
    v1::GetResponse response;
    return server.stub().Get(&context, request, &response);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  server.host().run([](llmrdzv::core::Core& core) { core.shutdown("SIGTERM"); });
  const grpc::Status get_status = blocked.get();
  CHECK(get_status.error_code() == grpc::StatusCode::UNAVAILABLE);
  CHECK_THAT(get_status.error_message(), Catch::Contains("shutting down"));
  v1::SessionEvent event;
  REQUIRE(session->Read(&event));
  CHECK(event.kind() == v1::SessionEvent::SHUTDOWN);
  CHECK_FALSE(session->Read(&event));
  CHECK(session->Finish().error_code() == grpc::StatusCode::UNAVAILABLE);
}
