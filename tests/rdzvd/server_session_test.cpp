// The one-stream path in-process over real gRPC: a SessionOpen that carries the Join, the store
// calls that block made on the Session stream, and Status advertising both (raw stubs, as any
// client would see it).
#include <catch2/catch.hpp>
#include <atomic>
#include <set>
#include <thread>

#include "server_fixture.hpp"

using namespace llmrdzv::server::testing;
namespace v1 = llmrdzv::v1;

namespace {

using Code = grpc::StatusCode;

struct Stream {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SessionRequest, v1::SessionEvent>> rw;
};

// A Session stream whose SessionOpen carries `join` (on the server's own stub unless given one).
std::unique_ptr<Stream> start_join(InProcessServer& server, const v1::JoinRequest& join,
                                   v1::Rendezvous::Stub* stub = nullptr) {
  auto stream = std::make_unique<Stream>();
  stream->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));  // no hung test
  stream->rw = (stub ? *stub : server.stub()).Session(&stream->context);
  v1::SessionRequest open;
  *open.mutable_open()->mutable_join() = join;
  REQUIRE(stream->rw->Write(open));
  return stream;
}

v1::SessionEvent next_event(Stream& stream) {
  v1::SessionEvent event;
  REQUIRE(stream.rw->Read(&event));
  return event;
}

// Drains the stream and returns how it ended.
grpc::Status finish(Stream& stream) {
  v1::SessionEvent event;
  while (stream.rw->Read(&event)) {
  }
  return stream.rw->Finish();
}

v1::JoinResponse opened_assignment(Stream& stream) {
  const v1::SessionEvent opened = next_event(stream);
  REQUIRE(opened.kind() == v1::SessionEvent::OPENED);
  REQUIRE(opened.has_assignment());
  CHECK(opened.round() == opened.assignment().round());
  CHECK(opened.rank() == opened.assignment().rank());
  return opened.assignment();
}

// Sends a SessionCall with `id`; `fill` sets its operation (and the server's scope unless it set one).
template <class Fill>
void send_call(InProcessServer& server, Stream& stream, std::uint64_t id, Fill fill) {
  v1::SessionRequest request;
  v1::SessionCall& call = *request.mutable_call();
  call.set_id(id);
  fill(call);
  v1::Scope* scope = nullptr;
  switch (call.op_case()) {
    case v1::SessionCall::kGet: scope = call.mutable_get()->mutable_scope(); break;
    case v1::SessionCall::kWait: scope = call.mutable_wait()->mutable_scope(); break;
    case v1::SessionCall::kMultiGet: scope = call.mutable_multi_get()->mutable_scope(); break;
    case v1::SessionCall::kBarrier: scope = call.mutable_barrier()->mutable_scope(); break;
    case v1::SessionCall::kQueuePop: scope = call.mutable_queue_pop()->mutable_scope(); break;
    case v1::SessionCall::OP_NOT_SET: break;
  }
  if (scope && scope->rdzv_id().empty()) server.scope(scope);
  REQUIRE(stream.rw->Write(request));
}

void send_barrier(InProcessServer& server, Stream& stream, std::uint64_t id, std::uint64_t round,
                  const std::string& key, std::int64_t world_size, std::uint32_t timeout_ms) {
  send_call(server, stream, id, [&](v1::SessionCall& call) {
    v1::BarrierRequest& barrier = *call.mutable_barrier();
    barrier.set_round(round);
    barrier.set_key(key);
    barrier.set_world_size(world_size);
    barrier.set_timeout_ms(timeout_ms);
  });
}

v1::SessionEvent call_done(Stream& stream) {
  const v1::SessionEvent event = next_event(stream);
  REQUIRE(event.kind() == v1::SessionEvent::CALL_DONE);
  return event;
}

std::vector<std::string> values_of(const v1::SessionEvent& event) {
  return {event.values().begin(), event.values().end()};
}

void set_key(InProcessServer& server, std::uint64_t round, const std::string& key, const std::string& value) {
  grpc::ClientContext context;
  v1::SetRequest request;
  server.scope(request.mutable_scope());
  request.set_round(round);
  request.set_key(key);
  request.set_value(value);
  v1::SetResponse response;
  REQUIRE(server.stub().Set(&context, request, &response).ok());
}

}  // namespace

TEST_CASE("session join: SessionOpen with a join forms the round and OPENED carries the assignment",
          "[server][session-join]") {
  InProcessServer server;
  const int n = 3;
  std::vector<std::unique_ptr<Stream>> streams;
  for (int i = 0; i < n; ++i) streams.push_back(start_join(server, server.join_request("p" + std::to_string(i), n)));
  std::set<int> ranks;
  for (auto& stream : streams) {
    const v1::JoinResponse assignment = opened_assignment(*stream);
    CHECK(assignment.round() == 1);
    CHECK(assignment.world_size() == n);
    CHECK(assignment.heartbeat_interval_ms() == 100);
    CHECK(assignment.master_host() == "localhost");
    ranks.insert(assignment.rank());
  }
  CHECK(ranks.size() == std::size_t(n));

  streams[2]->context.TryCancel();  // a member's stream ends without Leave: it failed
  finish(*streams[2]);
  for (int i = 0; i < 2; ++i) {
    const v1::SessionEvent event = next_event(*streams[std::size_t(i)]);
    CHECK(event.kind() == v1::SessionEvent::MEMBER_FAILED);
    CHECK(event.round() == 1);
    streams[std::size_t(i)]->rw->WritesDone();
    CHECK(finish(*streams[std::size_t(i)]).ok());
  }
}

TEST_CASE("session join: errors end the stream with the codes and messages Join gives", "[server][session-join]") {
  auto config = server_test_config();
  config.settings.limits.max_participants = 4;
  InProcessServer server(config);

  auto wrong_token = server.join_request("p0", 1);
  wrong_token.mutable_scope()->set_ticket("t2.not-the-ticket");
  CHECK(finish(*start_join(server, wrong_token)).error_code() == Code::PERMISSION_DENIED);

  auto bad_sizes = server.join_request("p0", 1);
  bad_sizes.set_min_participants(2);
  const grpc::Status invalid = finish(*start_join(server, bad_sizes));
  CHECK(invalid.error_code() == Code::INVALID_ARGUMENT);
  CHECK_THAT(invalid.error_message(), Catch::Contains("min_participants <= max_participants"));

  const grpc::Status limited = finish(*start_join(server, server.join_request("p0", 8)));
  CHECK(limited.error_code() == Code::RESOURCE_EXHAUSTED);
  CHECK_THAT(limited.error_message(), Catch::Contains("max_participants"));

  auto slow = server.join_request("p0", 2);
  slow.set_timeout_ms(50);
  const grpc::Status timed_out = finish(*start_join(server, slow));
  CHECK(timed_out.error_code() == Code::DEADLINE_EXCEEDED);
  CHECK_THAT(timed_out.error_message(), Catch::Contains("did not complete within 50 ms"));

  auto other_size = server.join_request("p1", 3);  // the rendezvous exists now, as 2:2
  CHECK(finish(*start_join(server, other_size)).error_code() == Code::FAILED_PRECONDITION);
}

TEST_CASE("session join: a stream that ends while joining gives its join up", "[server][session-join]") {
  InProcessServer server;
  const auto gathered = [&server] {
    grpc::ClientContext context;
    v1::StatusRequest request;
    server.scope(request.mutable_scope());
    v1::StatusResponse response;
    return server.stub().Status(&context, request, &response).ok() ? response.rendezvous(0).joined() : -1;
  };
  const auto wait_gathered = [&gathered](int n) {
    for (int i = 0; i < 500 && gathered() != n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    REQUIRE(gathered() == n);
  };
  auto quitter = start_join(server, server.join_request("quitter", 2));
  wait_gathered(1);
  quitter->context.TryCancel();
  finish(*quitter);
  wait_gathered(0);
  auto a = start_join(server, server.join_request("a", 2));
  auto b = start_join(server, server.join_request("b", 2));
  std::set<int> ranks{opened_assignment(*a).rank(), opened_assignment(*b).rank()};
  CHECK(ranks == std::set<int>{0, 1});  // the quitter was not counted into the round
  a->context.TryCancel();
  b->context.TryCancel();
  finish(*a);
  finish(*b);
}

TEST_CASE("session calls: a barrier is answered on the stream with the Barrier RPC's status", "[server][session-calls]") {
  InProcessServer server;
  auto a = start_join(server, server.join_request("a", 2));
  auto b = start_join(server, server.join_request("b", 2));
  const std::uint64_t round = opened_assignment(*a).round();
  opened_assignment(*b);

  send_barrier(server, *a, 7, round, "together", 2, 10000);
  send_barrier(server, *b, 9, round, "together", 2, 10000);
  const v1::SessionEvent done_a = call_done(*a);
  const v1::SessionEvent done_b = call_done(*b);
  CHECK(done_a.call_id() == 7);
  CHECK(done_b.call_id() == 9);
  CHECK(done_a.code() == 0);
  CHECK(done_b.code() == 0);

  send_barrier(server, *a, 8, round, "alone", 2, 50);
  const v1::SessionEvent timed_out = call_done(*a);
  CHECK(timed_out.call_id() == 8);
  CHECK(timed_out.code() == int(Code::DEADLINE_EXCEEDED));
  CHECK_THAT(timed_out.detail(), Catch::Contains("alone"));

  send_barrier(server, *a, 10, round, "bad", 0, 50);
  CHECK(call_done(*a).code() == int(Code::INVALID_ARGUMENT));
  send_barrier(server, *a, 11, round + 1, "later", 1, 50);
  CHECK(call_done(*a).code() == int(Code::INVALID_ARGUMENT));  // a round that has not completed

  v1::SessionRequest heartbeat;  // the stream is still the member's session
  heartbeat.mutable_heartbeat()->set_seq(1);
  CHECK(a->rw->Write(heartbeat));
  send_barrier(server, *a, 12, 0, "rendezvous-wide", 1, 50);
  CHECK(call_done(*a).code() == 0);
  for (auto* stream : {a.get(), b.get()}) {
    stream->context.TryCancel();
    finish(*stream);
  }
}

TEST_CASE("session calls: calls still blocked when the stream ends are cancelled", "[server][session-calls]") {
  auto config = server_test_config();
  config.settings.limits.max_waiters = 4;  // leaked waiters would hit this
  InProcessServer server(config);
  for (int i = 0; i < 4; ++i) {
    auto stream = start_join(server, server.join_request("p0", 1));
    opened_assignment(*stream);
    send_barrier(server, *stream, 1, 0, "never", 100, 60000);
    send_call(server, *stream, 2, [](v1::SessionCall& call) {
      call.mutable_wait()->add_keys("never");
      call.mutable_wait()->set_timeout_ms(60000);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stream->context.TryCancel();
    finish(*stream);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto stream = start_join(server, server.join_request("p0", 1));
  opened_assignment(*stream);
  send_barrier(server, *stream, 2, 0, "short", 2, 50);
  CHECK(call_done(*stream).code() == int(Code::DEADLINE_EXCEEDED));  // not RESOURCE_EXHAUSTED
  stream->context.TryCancel();
  finish(*stream);
}

TEST_CASE("session calls: an id still outstanding is refused, the first call goes on", "[server][session-calls]") {
  auto config = server_test_config();
  config.settings.limits.max_waiters = 2;
  InProcessServer server(config);
  auto a = start_join(server, server.join_request("a", 1));
  const std::uint64_t round = opened_assignment(*a).round();
  const auto get = [&](std::uint64_t id, const std::string& key, std::uint32_t timeout_ms) {
    send_call(server, *a, id, [&](v1::SessionCall& call) {
      call.mutable_get()->set_round(round);
      call.mutable_get()->set_key(key);
      call.mutable_get()->set_timeout_ms(timeout_ms);
    });
  };
  get(1, "A", 60000);
  get(1, "B", 60000);
  const v1::SessionEvent refused = call_done(*a);
  CHECK(refused.call_id() == 1);
  CHECK(refused.code() == int(Code::INVALID_ARGUMENT));
  CHECK_THAT(refused.detail(), Catch::Contains("call id 1 is still outstanding"));
  set_key(server, round, "A", "a");
  const v1::SessionEvent first = call_done(*a);
  CHECK(first.call_id() == 1);
  CHECK(values_of(first) == std::vector<std::string>{"a"});
  // No waiter was left behind: both of max_waiters' slots are free for blocked calls again.
  get(1, "C", 60000);  // the id is free once its call finished
  get(2, "D", 50);
  const v1::SessionEvent timed_out = call_done(*a);
  CHECK(timed_out.call_id() == 2);
  CHECK(timed_out.code() == int(Code::DEADLINE_EXCEEDED));  // not RESOURCE_EXHAUSTED
  a->context.TryCancel();
  finish(*a);
}

TEST_CASE("session calls: get, wait, multi_get and queue_pop answer on the stream with their values",
          "[server][session-calls]") {
  InProcessServer server;
  auto a = start_join(server, server.join_request("a", 1));
  const std::uint64_t round = opened_assignment(*a).round();

  // Blocked calls finish in the order their keys appear, not the order they were sent.
  send_call(server, *a, 1, [&](v1::SessionCall& call) {
    call.mutable_wait()->set_round(round);
    call.mutable_wait()->add_keys("x");
    call.mutable_wait()->add_keys("y");
    call.mutable_wait()->set_timeout_ms(10000);
  });
  send_call(server, *a, 2, [&](v1::SessionCall& call) {
    call.mutable_get()->set_round(round);
    call.mutable_get()->set_key("x");
    call.mutable_get()->set_timeout_ms(10000);
  });
  set_key(server, round, "x", std::string("one\0byte", 8));
  const v1::SessionEvent got = call_done(*a);
  CHECK(got.call_id() == 2);
  CHECK(got.code() == 0);
  CHECK(values_of(got) == std::vector<std::string>{std::string("one\0byte", 8)});
  set_key(server, round, "y", "two");
  const v1::SessionEvent waited = call_done(*a);
  CHECK(waited.call_id() == 1);
  CHECK(waited.code() == 0);
  CHECK(waited.values().empty());

  send_call(server, *a, 3, [&](v1::SessionCall& call) {
    call.mutable_multi_get()->set_round(round);
    call.mutable_multi_get()->add_keys("y");
    call.mutable_multi_get()->add_keys("x");
    call.mutable_multi_get()->set_timeout_ms(1000);
  });
  CHECK(values_of(call_done(*a)) == std::vector<std::string>{"two", std::string("one\0byte", 8)});

  send_call(server, *a, 4, [&](v1::SessionCall& call) {
    call.mutable_queue_pop()->set_round(round);
    call.mutable_queue_pop()->set_key("jobs");
    call.mutable_queue_pop()->set_block(true);
    call.mutable_queue_pop()->set_timeout_ms(10000);
  });
  {
    grpc::ClientContext context;
    v1::QueuePushRequest push;
    server.scope(push.mutable_scope());
    push.set_round(round);
    push.set_key("jobs");
    push.set_value("job-1");
    v1::QueuePushResponse pushed;
    REQUIRE(server.stub().QueuePush(&context, push, &pushed).ok());
  }
  const v1::SessionEvent popped = call_done(*a);
  CHECK(popped.call_id() == 4);
  CHECK(values_of(popped) == std::vector<std::string>{"job-1"});

  // Errors come back as the unary calls' codes, and the stream stays up.
  send_call(server, *a, 5, [&](v1::SessionCall& call) {
    call.mutable_get()->set_round(round);
    call.mutable_get()->set_key("absent");
    call.mutable_get()->set_timeout_ms(50);
  });
  const v1::SessionEvent timed_out = call_done(*a);
  CHECK(timed_out.code() == int(Code::DEADLINE_EXCEEDED));
  CHECK(timed_out.values().empty());
  send_call(server, *a, 6, [&](v1::SessionCall& call) {
    call.mutable_wait()->set_round(round);
    call.mutable_wait()->set_timeout_ms(50);
    server.scope(call.mutable_wait()->mutable_scope());
    call.mutable_wait()->mutable_scope()->set_ticket("wrong");
  });
  CHECK(call_done(*a).code() == int(Code::PERMISSION_DENIED));
  send_call(server, *a, 7, [](v1::SessionCall&) {});  // no operation
  const v1::SessionEvent empty = call_done(*a);
  CHECK(empty.code() == int(Code::INVALID_ARGUMENT));
  CHECK_THAT(empty.detail(), Catch::Contains("needs an operation"));
  send_call(server, *a, 10, [&](v1::SessionCall& call) {  // each repeat would copy the value again
    call.mutable_multi_get()->set_round(round);
    for (const char* key : {"x", "y", "x"}) call.mutable_multi_get()->add_keys(key);
  });
  const v1::SessionEvent repeated = call_done(*a);
  CHECK(repeated.code() == int(Code::INVALID_ARGUMENT));
  CHECK_THAT(repeated.detail(), Catch::Contains("key 'x' given twice"));
  send_barrier(server, *a, 8, round, "solo", 1, 1000);
  CHECK(call_done(*a).code() == 0);

  // A cancel ends a blocked call at once; one for an unknown id changes nothing.
  send_call(server, *a, 9, [&](v1::SessionCall& call) {
    call.mutable_wait()->set_round(round);
    call.mutable_wait()->add_keys("never");
    call.mutable_wait()->set_timeout_ms(60000);
  });
  v1::SessionRequest cancel;
  cancel.set_cancel(99);
  REQUIRE(a->rw->Write(cancel));
  cancel.set_cancel(9);
  const auto cancelled_at = std::chrono::steady_clock::now();
  REQUIRE(a->rw->Write(cancel));
  const v1::SessionEvent cancelled = call_done(*a);
  CHECK(std::chrono::steady_clock::now() - cancelled_at < std::chrono::seconds(30));
  CHECK(cancelled.call_id() == 9);
  CHECK(cancelled.code() == int(Code::CANCELLED));
  a->context.TryCancel();
  finish(*a);
}

TEST_CASE("status: features are advertised, and daemon_only leaves the rendezvous out", "[server]") {
  const auto status_of = [](InProcessServer& server, bool daemon_only) {
    grpc::ClientContext context;
    v1::StatusRequest request;
    request.set_daemon_only(daemon_only);
    v1::StatusResponse response;
    REQUIRE(server.stub().Status(&context, request, &response).ok());
    return response;
  };
  InProcessServer server;
  auto stream = start_join(server, server.join_request("p0", 1));
  opened_assignment(*stream);
  const auto brief = status_of(server, true);
  CHECK(brief.version() == "test");
  CHECK(brief.mode() == "step");
  CHECK(brief.rendezvous().empty());
  CHECK(std::vector<std::string>(brief.features().begin(), brief.features().end()) ==
        std::vector<std::string>{"session-join", "session-calls"});
  const auto full = status_of(server, false);
  CHECK(full.rendezvous_size() == 1);
  CHECK(full.features_size() == 2);
  CHECK(full.totals().rendezvous() == 1);
  CHECK(brief.totals().members() == 1);  // the totals come with the brief reply too
  stream->context.TryCancel();
  finish(*stream);

  InProcessServer plain(server_test_config(), {});
  CHECK(status_of(plain, true).features().empty());
}

TEST_CASE("session bounds: a stream that never sends SessionOpen is ended after the heartbeat timeout",
          "[server][session-bounds]") {
  auto config = server_test_config();
  config.settings.heartbeat_timeout = llmrdzv::core::Millis(1000);
  InProcessServer server(config);
  Stream stream;
  stream.context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  const auto started = std::chrono::steady_clock::now();
  stream.rw = server.stub().Session(&stream.context);
  const grpc::Status status = finish(stream);
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(status.error_code() == Code::DEADLINE_EXCEEDED);
  CHECK_THAT(status.error_message(), Catch::Contains("no SessionOpen within 1000 ms"));
  CHECK(took >= std::chrono::milliseconds(900));
  CHECK(took < std::chrono::seconds(20));  // the stream's own deadline would say 30 s
}

TEST_CASE("session bounds: a member declared failed for its silence has its stream ended with ABORTED",
          "[server][session-bounds]") {
  auto config = server_test_config();
  config.settings.heartbeat_timeout = llmrdzv::core::Millis(1000);
  InProcessServer server(config);
  auto silent = start_join(server, server.join_request("silent", 1));
  opened_assignment(*silent);
  const auto opened = std::chrono::steady_clock::now();
  const grpc::Status status = finish(*silent);  // it sends no heartbeat
  CHECK(status.error_code() == Code::ABORTED);
  CHECK_THAT(status.error_message(), Catch::Contains("declared failed: no heartbeat for 1000 ms"));
  CHECK(std::chrono::steady_clock::now() - opened < std::chrono::seconds(20));  // not the stream's 30 s deadline
}

// A SessionCall `id` getting `key` of `round` in the server's rendezvous.
v1::SessionRequest get_call(InProcessServer& server, std::uint64_t id, std::uint64_t round, const std::string& key) {
  v1::SessionRequest request;
  request.mutable_call()->set_id(id);
  v1::GetRequest& get = *request.mutable_call()->mutable_get();
  server.scope(get.mutable_scope());
  get.set_round(round);
  get.set_key(key);
  return request;
}

// Sends get calls for `key` (each followed by a heartbeat) on its own thread until the server
// stops taking them, without reading a single answer.
class CallFlood {
 public:
  CallFlood(InProcessServer& server, Stream& stream, std::uint64_t round, const std::string& key)
      : thread_([&server, &stream, round, key, this] {
          for (std::uint64_t id = 1; id <= 1'000'000; ++id) {  // far past any backlog bound
            v1::SessionRequest heartbeat;
            heartbeat.mutable_heartbeat();
            if (!stream.rw->Write(get_call(server, id, round, key)) || !stream.rw->Write(heartbeat)) break;
            sent_ = id;
          }
        }) {}
  ~CallFlood() { join(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  std::uint64_t sent() const { return sent_; }

 private:
  std::atomic<std::uint64_t> sent_{0};
  std::thread thread_;
};

TEST_CASE("session bounds: a client that sends calls but does not read their answers is cut off",
          "[server][session-bounds]") {
  auto config = server_test_config();
  config.settings.limits.max_value_size = 64u << 10;
  config.settings.limits.max_bytes = 1u << 20;  // also the bound on answers waiting to be written
  InProcessServer server(config);
  auto stream = start_join(server, server.join_request("p0", 1));
  const std::uint64_t round = opened_assignment(*stream).round();
  set_key(server, round, "v", std::string(60u << 10, 'x'));
  CallFlood flood(server, *stream, round, "v");
  // However much the transport buffers, the answers pile up at the daemon until it cuts the stream.
  REQUIRE(server.log().wait_for("does not read its Session stream", std::chrono::seconds(25)));
  CHECK(server.log().wait_for("participant 'p0' of rendezvous '7.0' (round 1)", std::chrono::seconds(0)));
  // Reading now drains what was written: the daemon then ends the stream with its reason.
  std::uint64_t answered = 0;
  v1::SessionEvent event;
  while (stream->rw->Read(&event))
    if (event.kind() == v1::SessionEvent::CALL_DONE) ++answered;
  flood.join();  // its write fails once the stream is over
  const grpc::Status status = stream->rw->Finish();
  INFO(flood.sent() << " calls sent, " << answered << " answered");
  CHECK(status.error_code() == Code::RESOURCE_EXHAUSTED);
  CHECK_THAT(status.error_message(), Catch::Contains("does not read its Session stream"));
  CHECK(answered > 0);
  CHECK(answered < flood.sent());
  CHECK_FALSE(server.log().wait_for("cancelled it", std::chrono::seconds(0)));
}

TEST_CASE("session bounds: a client that reads nothing at all is cancelled a heartbeat timeout after the cut",
          "[server][session-bounds]") {
  auto config = server_test_config();
  config.settings.heartbeat_timeout = llmrdzv::core::Millis(3000);
  config.settings.limits.max_value_size = 64u << 10;
  config.settings.limits.max_bytes = 1u << 20;
  InProcessServer server(config);
  // A fixed 64 KiB receive window (no BDP probing), so the client's transport holds about one
  // answer and the daemon's write in flight stalls for certain.
  grpc::ChannelArguments fixed_window;
  fixed_window.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  const auto stub = server.new_stub(fixed_window);
  auto stream = start_join(server, server.join_request("p0", 1), stub.get());
  const std::uint64_t round = opened_assignment(*stream).round();
  set_key(server, round, "v", std::string(60u << 10, 'x'));
  const auto started = std::chrono::steady_clock::now();
  CallFlood flood(server, *stream, round, "v");
  REQUIRE(server.log().wait_for("does not read its Session stream", std::chrono::seconds(25)));
  // The write in flight can never be taken, so the daemon cancels the stream; the flood's blocked
  // write then fails (before the stream's own 30 s deadline).
  flood.join();
  const auto took = std::chrono::steady_clock::now() - started;
  CHECK(server.log().wait_for("cancelled it", std::chrono::seconds(5)));
  CHECK(finish(*stream).error_code() == Code::CANCELLED);  // after what the transport had buffered
  CHECK(took >= std::chrono::milliseconds(2900));
  CHECK(took < std::chrono::seconds(25));
}

TEST_CASE("session bounds: an ended stream whose client reads slowly is not cancelled and gets every event",
          "[server][session-bounds]") {
  auto config = server_test_config();
  config.settings.heartbeat_timeout = llmrdzv::core::Millis(1500);  // the grace an ended stream gets
  config.settings.limits.max_value_size = 64u << 10;
  InProcessServer server(config);
  grpc::ChannelArguments fixed_window;  // the transport holds about one answer (see above)
  fixed_window.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
  const auto stub = server.new_stub(fixed_window);
  auto stream = start_join(server, server.join_request("p0", 1), stub.get());
  const std::uint64_t round = opened_assignment(*stream).round();
  set_key(server, round, "v", std::string(60u << 10, 'x'));
  constexpr int kCalls = 8;  // ~480 KiB of answers: queued at the daemon, far below its bounds
  for (int id = 1; id <= kCalls; ++id) REQUIRE(stream->rw->Write(get_call(server, std::uint64_t(id), round, "v")));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the answers pile up
  server.host().run([](llmrdzv::core::Core& core) { core.shutdown("test"); });  // SHUTDOWN, then the end
  // One event every 300 ms: the last comes well past the 1.5 s grace, but the client never stops taking.
  int answered = 0;
  bool shutdown_seen = false;
  v1::SessionEvent event;
  while (stream->rw->Read(&event)) {
    answered += event.kind() == v1::SessionEvent::CALL_DONE;
    shutdown_seen |= event.kind() == v1::SessionEvent::SHUTDOWN;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  const grpc::Status status = stream->rw->Finish();
  CHECK(answered == kCalls);
  CHECK(shutdown_seen);
  CHECK(status.error_code() == Code::UNAVAILABLE);
  CHECK_FALSE(server.log().wait_for("cancelled it", std::chrono::seconds(0)));
}
