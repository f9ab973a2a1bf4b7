// The client library's private Session against the in-process server: what the public API
// cannot reach on a healthy daemon, a call on the stream that the client gives up on first.
#include <catch2/catch.hpp>

#include "server_fixture.hpp"
#include "session.hpp"

using namespace llmrdzv::server::testing;
namespace v1 = llmrdzv::v1;

TEST_CASE("client session: a call the client gives up on is cancelled in the daemon", "[server][client]") {
  auto config = server_test_config();
  config.settings.limits.max_waiters = 1;  // a waiter left behind makes the next call RESOURCE_EXHAUSTED
  InProcessServer server(config);
  auto stub = server.new_stub();
  llmrdzv::client::detail::SessionSpec spec;
  spec.join = server.join_request("c0", 1);
  spec.endpoint = server.endpoint();
  llmrdzv::client::detail::Session session(*stub, spec, nullptr);
  REQUIRE(session.opened().ok());

  v1::SessionCall call;
  server.scope(call.mutable_wait()->mutable_scope());
  call.mutable_wait()->add_keys("never");
  call.mutable_wait()->set_timeout_ms(60000);  // the daemon would wait a minute
  for (int i = 0; i < 3; ++i) {
    INFO("attempt " << i);
    const auto result = session.call(call, std::chrono::milliseconds(100));
    REQUIRE(result);
    CHECK(result->status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
    CHECK_THAT(result->status.error_message(), Catch::Contains("within 100 ms"));
  }
  session.close();
  CHECK_FALSE(session.call(call, std::chrono::milliseconds(100)));  // nothing sent on a closed stream
}
