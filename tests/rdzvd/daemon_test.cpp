// The rdzvd binary as a process: --help, every kind of bad flag or config (message + exit 2),
// port file, token from the environment, port probing past a busy port, SIGTERM, SIGHUP reload,
// systemd's notifications and watchdog,
// --idle-timeout and --exit-with-parent, SIGUSR1's drain.
#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include <catch2/catch.hpp>

#include "daemon_process.hpp"
#include "llmrdzv/common/port_probe.hpp"
#include "llmrdzv/client/handshake.hpp"
#include "llmrdzv/v1/rendezvous.grpc.pb.h"

using namespace llmrdzv::server::testing;
using namespace std::chrono_literals;
namespace v1 = llmrdzv::v1;

namespace {

// Runs rdzvd to completion and returns (exit status, stderr).
std::pair<int, std::string> run_to_exit(const ScratchDir& dir, const std::vector<std::string>& args,
                                        const std::vector<std::string>& env = {}) {
  DaemonProcess rdzvd(args, dir.file("rdzvd.log"), env);
  const auto status = rdzvd.wait(10s);
  REQUIRE(status);
  return {*status, rdzvd.log()};
}

std::vector<std::string> step_args(const ScratchDir& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--listen", "127.0.0.1:0", "--port-file", dir.file("port"), "--rdzv-id",
                                   "9.0", "--token-file", dir.write("token", "daemon-test-token\n")};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// A stub on the daemon at `port` and the ticket its handshake gave for `token` (empty when the
// daemon did not prove itself: then the calls below are denied).
struct Authenticated {
  std::unique_ptr<v1::Rendezvous::Stub> stub;
  std::string ticket;
};

Authenticated authenticate(int port, const std::string& token) {
  Authenticated a;
  a.stub = v1::Rendezvous::NewStub(
      grpc::CreateChannel("127.0.0.1:" + std::to_string(port), grpc::InsecureChannelCredentials()));
  a.ticket = llmrdzv::client::hello(*a.stub, "9.0", token, std::uint16_t(port), 5s).ticket;
  return a;
}

// A request of rendezvous 9.0 carrying a's ticket, and a context that gives up after `deadline`.
template <class Request>
Request scoped(const Authenticated& a) {
  Request request;
  request.mutable_scope()->set_rdzv_id("9.0");
  request.mutable_scope()->set_ticket(a.ticket);
  return request;
}

void give_up_after(grpc::ClientContext& context, std::chrono::seconds deadline) {
  context.set_deadline(std::chrono::system_clock::now() + deadline);
}

// A Join of participant `id` to a rendezvous of `size` participants, blocking up to `deadline`.
grpc::Status join(int port, const std::string& token, v1::JoinResponse* response, const std::string& id = "p",
                  int size = 1, std::chrono::seconds deadline = 5s) {
  const Authenticated a = authenticate(port, token);
  grpc::ClientContext context;
  give_up_after(context, deadline);
  llmrdzv::client::add_credential(context, "9.0", a.ticket);
  auto request = scoped<v1::JoinRequest>(a);
  request.set_participant_id(id);
  request.set_host("h");
  request.set_requested_rank(-1);
  request.set_min_participants(size);
  request.set_max_participants(size);
  return a.stub->Join(&context, request, response);
}

grpc::Status leave(int port, const std::string& token, const std::string& id = "p") {
  const Authenticated a = authenticate(port, token);
  grpc::ClientContext context;
  give_up_after(context, 5s);
  llmrdzv::client::add_credential(context, "9.0", a.ticket);
  auto request = scoped<v1::LeaveRequest>(a);
  request.set_participant_id(id);
  v1::LeaveResponse response;
  return a.stub->Leave(&context, request, &response);
}

grpc::Status set_key(int port, const std::string& token, const std::string& key, const std::string& value) {
  const Authenticated a = authenticate(port, token);
  grpc::ClientContext context;
  give_up_after(context, 5s);
  llmrdzv::client::add_credential(context, "9.0", a.ticket);
  auto request = scoped<v1::SetRequest>(a);
  request.set_key(key);
  request.set_value(value);
  v1::SetResponse response;
  return a.stub->Set(&context, request, &response);
}

// A Join on a thread of its own, for a round that waits for more participants.
class BlockedJoin {
 public:
  BlockedJoin(int port, const std::string& id, int size, std::chrono::seconds deadline)
      : thread_([=, this] { status_ = join(port, "daemon-test-token", &response_, id, size, deadline); }) {}
  ~BlockedJoin() { wait(); }
  // Its outcome, once the Join returned.
  grpc::Status status() {
    wait();
    return status_;
  }

 private:
  void wait() {
    if (thread_.joinable()) thread_.join();
  }

  grpc::Status status_;
  v1::JoinResponse response_;
  std::thread thread_;
};

}  // namespace

TEST_CASE("SIGUSR1 stops rdzvd once no member remains, not before", "[daemon]") {
  ScratchDir dir;
  {
    DaemonProcess rdzvd(step_args(dir), dir.file("rdzvd.log"));
    const int port = rdzvd.port(dir.file("port"));
    v1::JoinResponse response;
    REQUIRE(join(port, "daemon-test-token", &response).ok());
    rdzvd.signal(SIGUSR1);
    CHECK(rdzvd.log_contains("SIGUSR1: exiting once no member remains", 5s));
    CHECK_FALSE(rdzvd.wait(700ms));  // a member is still in its round
    REQUIRE(leave(port, "daemon-test-token").ok());
    REQUIRE(rdzvd.wait(5s) == 0);
    CHECK_THAT(rdzvd.log(), Catch::Contains("stopping: SIGUSR1 and no member remains"));
  }
  ScratchDir fresh;  // its own port file: the first daemon's would be read before this one listens
  DaemonProcess idle(step_args(fresh), fresh.file("idle.log"));
  idle.port(fresh.file("port"));
  idle.signal(SIGUSR1);
  CHECK(idle.wait(5s) == std::optional<int>(0));  // nobody ever joined: it goes at once
}

TEST_CASE("SIGUSR1 fails a fixed-size round's waiting joiners at once, and rdzvd exits", "[daemon]") {
  ScratchDir dir;
  DaemonProcess rdzvd(step_args(dir, {"--participants", "2:2", "--log-level", "debug"}), dir.file("rdzvd.log"));
  const int port = rdzvd.port(dir.file("port"));
  BlockedJoin first(port, "a", 2, 20s);  // its partner never comes (say, rank 0 crashed before joining)
  REQUIRE(rdzvd.log_contains("join by a (1 gathered)", 5s));
  const auto signalled = std::chrono::steady_clock::now();
  rdzvd.signal(SIGUSR1);
  const grpc::Status status = first.status();
  CHECK(std::chrono::steady_clock::now() - signalled < 5s);  // not the Join's 20 s
  CHECK(status.error_code() == grpc::StatusCode::ABORTED);
  CHECK_THAT(status.error_message(),
             Catch::Contains("the rendezvous is closing: the step's tasks on the daemon's node have exited, so this "
                             "fixed-size round cannot gather its members"));
  CHECK(rdzvd.wait(5s) == 0);
  CHECK_THAT(rdzvd.log(), Catch::Contains("stopping: SIGUSR1 and no member remains"));
}

TEST_CASE("rdzvd --help describes the flags and exits 0", "[daemon]") {
  ScratchDir dir;
  DaemonProcess rdzvd({"--help"}, dir.file("log"));
  REQUIRE(rdzvd.wait(10s) == 0);
  for (const char* flag : {"--listen", "--port-file", "--port-range", "--port-probes", "--mode", "--rdzv-id",
                           "--token-file", "--site-secret-file", "--exit-with-parent", "--idle-timeout",
                           "--heartbeat-interval", "--heartbeat-timeout", "--last-call", "--join-timeout",
                           "--log-level", "--syslog", "--metrics-listen", "--metrics-expose-ids", "LLM_RDZV_TOKEN"})
    CHECK_THAT(rdzvd.out(), Catch::Contains(flag));
}

TEST_CASE("rdzvd rejects bad flags and config with a message naming the key and exit 2", "[daemon]") {
  ScratchDir dir;
  const auto expect = [&](std::vector<std::string> args, const std::string& text,
                          const std::vector<std::string>& env = {}) {
    const auto [status, log] = run_to_exit(dir, args, env);
    CHECK(status == 2);
    CHECK_THAT(log, Catch::Contains(text));
  };
  expect({"--no-such-flag"}, "unknown argument '--no-such-flag'");
  expect(step_args(dir, {"--heartbeat-timeout", "ten"}), "--heartbeat-timeout: 'ten' is not a whole number");
  expect(step_args(dir, {"--heartbeat-interval", "5000", "--heartbeat-timeout", "1000"}),
         "must be below heartbeat_timeout_ms");
  expect(step_args(dir, {"--last-call", "-1"}), "--last-call: '-1'");
  expect(step_args(dir, {"--mode", "cluster"}), "--mode: 'cluster' is not step or site");
  expect(step_args(dir, {"--log-level", "loud"}), "--log-level: 'loud'");
  expect(step_args(dir, {"--port-range", "900-100"}), "--port-range: '900-100'");
  expect(step_args(dir, {"--port-fd", "2"}), "--port-fd: 2 is stdin, stdout or stderr");
  expect(step_args(dir, {"--port-fd", "97"}), "--port-fd: 97 is not an open file descriptor");
  expect(step_args(dir, {"--participants", "4:2"}), "--participants: '4:2' is not N or MIN:MAX with 1 <= MIN <= MAX");
  expect(step_args(dir, {"--participants", "0"}), "--participants: '0' is not N or MIN:MAX");
  expect(step_args(dir, {"--participants", "two"}), "--participants: 'two' is not a whole number");
  expect({"--mode", "site", "--site-secret-file", dir.write("secret", "s"), "--participants", "2"},
         "--participants is for step mode");
  expect(step_args(dir, {"--max-value-size", "0"}), "--max-value-size: must be at least 1");
  expect(step_args(dir, {"--max-message-bytes", "3000000000"}), "max_message_bytes: 3000000000 is outside");
  expect(step_args(dir, {"--max-message-bytes", "0"}), "max_message_bytes: 0 is outside");
  expect(step_args(dir, {"--max-message-bytes", "1048576"}), "must exceed limits.max_value_size");
  expect(step_args(dir, {"--max-unauthenticated-per-peer", "-1"}), "--max-unauthenticated-per-peer: '-1'");
  expect(step_args(dir, {"--max-unauthenticated-per-peer", "many"}), "--max-unauthenticated-per-peer: 'many'");
  expect(step_args(dir, {"--listen", "127.0.0.1:70000"}), "--listen: '127.0.0.1:70000'");
  expect(step_args(dir, {"--metrics-listen", "127.0.0.1"}), "--metrics-listen: '127.0.0.1' is not HOST:PORT");
  expect(step_args(dir, {"--metrics-listen", "127.0.0.1:70000"}), "--metrics-listen: '127.0.0.1:70000' is not");
  expect(step_args(dir, {"--port-file", dir.file("no/such/dir/port")}), "--port-file: cannot write");
  expect({"--listen", "127.0.0.1:0"}, "--rdzv-id is required in step mode");
  expect({"--rdzv-id", "9.0", "--listen", "127.0.0.1:0"}, "step mode needs a token");
  expect({"--rdzv-id", "9.0", "--token-file", dir.write("empty", "\n")}, "'" + dir.file("empty") + "' is empty");
  expect({"--rdzv-id", "9.0", "--token-file", dir.file("missing")}, "--token-file: cannot read");
  expect({"--mode", "site"}, "--site-secret-file is required in site mode");
  expect({"--heartbeat-interval"}, "--heartbeat-interval: missing value");

  expect({"--config", dir.file("absent.yaml")}, "--config: cannot read");
  expect({"--config", dir.write("bad-syntax.yaml", "listen: [unclosed\n")}, "not valid YAML");
  expect({"--config", dir.write("unknown.yaml", "heartbeat_timout_ms: 5\n")}, "unknown key 'heartbeat_timout_ms'");
  expect({"--config", dir.write("unknown-limit.yaml", "limits:\n  max_cats: 5\n")}, "unknown key 'limits.max_cats'");
  expect({"--config", dir.write("type.yaml", "heartbeat_timeout_ms: [1, 2]\n")},
         "key 'heartbeat_timeout_ms': expected a single value");
  expect({"--config", dir.write("range.yaml", "limits:\n  max_keys: 99999999999\n")}, "key 'limits.max_keys'");
  expect({"--config", dir.write("list.yaml", "- a\n- b\n")}, "the top level must be a mapping");
  expect({"--config", dir.write("metrics.yaml", "metrics_listen: 9464\n")}, "key 'metrics_listen': '9464' is not HOST:PORT");
  expect({"--config", dir.write("complex-key.yaml", "? [a, b]\n: 1\n")}, "a key at the top level is not a plain name");
  expect({"--config", dir.write("twice.yaml", "log_level: debug\nlog_level: error\n")}, "key 'log_level' appears twice");
  expect({"--config", dir.write("two-docs.yaml", "log_level: debug\n---\nbogus: 1\n")}, "holds 2 YAML documents");
  // yaml-cpp's LoadAll never returned on a stray flow-list comma, filling memory.
  expect({"--config", dir.write("stray-comma.yaml", "- a\n,\n")}, "line 2, column 1: unexpected ','");
  expect({"--config", dir.write("limits-scalar.yaml", "limits: 5\n")}, "key 'limits': expected a mapping of limit: value");
  expect({"--config", dir.path()}, "is not a regular file");
  REQUIRE(mkfifo(dir.file("fifo.yaml").c_str(), 0600) == 0);
  expect({"--config", dir.file("fifo.yaml")}, "is not a regular file");  // refused, not waited on
  expect(step_args(dir, {"--max-bytes", "18446744073709551615"}), "limits.max_bytes: 18446744073709551615 is above 2^63-1");
  expect(step_args(dir, {"--rdzv-id", std::string(200, 'r')}), "--rdzv-id: 200 bytes, longer than limits.max_id_length (128)");
  // Server defaults that every call relying on them would find over the limit.
  expect(step_args(dir, {"--wait-timeout", "4000000"}),
         "wait_timeout_ms (4000000) must not exceed limits.max_timeout_ms (3600000)");
  expect(step_args(dir, {"--config", dir.write("join-timeout.yaml", "join_timeout_ms: 20000\nwait_timeout_ms: 5000\n"
                                                                "limits:\n  max_timeout_ms: 10000\n")}),
         "join_timeout_ms (20000) must not exceed limits.max_timeout_ms (10000)");
  expect(step_args(dir, {"--max-reply-bytes", "1000"}),
         "limits.max_reply_bytes (1000) must be at least limits.max_value_size (16777216)");
  // Clients never try a base port outside the range, so the daemon must not listen there.
  expect(step_args(dir, {"--listen", "127.0.0.1:1000", "--port-range", "2000-2100"}),
         "--listen: port 1000 is outside --port-range 2000-2100");
}

TEST_CASE("rdzvd writes its port file, takes the token from LLM_RDZV_TOKEN and stops on SIGTERM", "[daemon]") {
  ScratchDir dir;
  DaemonProcess rdzvd({"--listen", "127.0.0.1:0", "--port-file", dir.file("port"), "--rdzv-id", "9.0"},
                      dir.file("rdzvd.log"), {"LLM_RDZV_TOKEN=from-the-env"});
  const int port = rdzvd.port(dir.file("port"));
  CHECK(std::stoi(rdzvd.out()) == port);
  v1::JoinResponse response;
  REQUIRE(join(port, "from-the-env", &response).ok());
  CHECK(response.world_size() == 1);
  CHECK(join(port, "wrong", &response).error_code() == grpc::StatusCode::PERMISSION_DENIED);
  rdzvd.signal(SIGTERM);
  REQUIRE(rdzvd.wait(10s) == 0);
  CHECK_THAT(rdzvd.log(), Catch::Contains("stopping: SIGTERM"));
  CHECK(rdzvd.log().find("from-the-env") == std::string::npos);  // the token is never logged
}

namespace {

// A socket listening on an ephemeral loopback port: (descriptor, port).
std::pair<int, std::uint16_t> hold_a_port() {
  const int busy = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(bind(busy, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  REQUIRE(listen(busy, 1) == 0);
  socklen_t length = sizeof address;
  getsockname(busy, reinterpret_cast<sockaddr*>(&address), &length);
  return {busy, ntohs(address.sin_port)};
}

}  // namespace

TEST_CASE("rdzvd walks the step-port probe sequence past a busy port", "[daemon]") {
  ScratchDir dir;
  // Hold a port of our own; the daemon asked to start there must take the next candidate.
  const auto [busy, base] = hold_a_port();
  const llmrdzv::PortRange range{std::uint16_t(base - (base > 1100 ? 100 : 0)), std::uint16_t(base + 100 < 65535 ? base + 100 : 65535)};
  const std::string range_text = std::to_string(range.lo) + "-" + std::to_string(range.hi);
  DaemonProcess rdzvd(step_args(dir, {"--listen", "127.0.0.1:" + std::to_string(base), "--port-range", range_text,
                                      "--port-probes", "4"}),
                      dir.file("rdzvd.log"));
  const int port = rdzvd.port(dir.file("port"));
  // The next candidate is normally free; should it be taken too, a later one is used.
  bool on_sequence = false;
  for (std::uint32_t attempt = 1; attempt < 4; ++attempt)
    on_sequence = on_sequence || port == llmrdzv::probe_port(range, base, attempt);
  CHECK(on_sequence);
  CHECK(port != base);
  close(busy);
}

TEST_CASE("rdzvd --listen 0.0.0.0 serves IPv4 only, not the node's IPv6 addresses", "[daemon]") {
  ScratchDir dir;
  DaemonProcess rdzvd(step_args(dir, {"--listen", "0.0.0.0:0"}), dir.file("rdzvd.log"));
  const int port = rdzvd.port(dir.file("port"));
  v1::JoinResponse response;
  REQUIRE(join(port, "daemon-test-token", &response).ok());  // over 127.0.0.1
  CHECK(response.world_size() == 1);
  const int v6 = socket(AF_INET6, SOCK_STREAM, 0);
  if (v6 < 0) {
    WARN("no IPv6 here: only the IPv4 side was checked");
    return;
  }
  sockaddr_in6 loopback{};
  loopback.sin6_family = AF_INET6;
  loopback.sin6_addr = in6addr_loopback;
  loopback.sin6_port = htons(std::uint16_t(port));
  const int rc = connect(v6, reinterpret_cast<sockaddr*>(&loopback), sizeof loopback);
  const int error = errno;
  close(v6);
  CHECK(rc != 0);
  if (rc != 0 && error != ECONNREFUSED) WARN("[::1] is not reachable here (" << std::strerror(error) << ")");
  rdzvd.signal(SIGTERM);
  CHECK(rdzvd.wait(10s) == 0);
}

TEST_CASE("rdzvd exits 2 naming --metrics-listen when the metrics port is taken", "[daemon]") {
  ScratchDir dir;
  const auto [busy, port] = hold_a_port();
  const std::string taken = "127.0.0.1:" + std::to_string(port);
  const auto [status, log] = run_to_exit(dir, step_args(dir, {"--metrics-listen", taken}));
  CHECK(status == 2);
  CHECK_THAT(log, Catch::Contains("--metrics-listen: cannot listen on " + taken + ": Address already in use"));
  close(busy);
}

TEST_CASE("SIGHUP reloads the config file and reports what changed", "[daemon]") {
  ScratchDir dir;
  const std::string config = dir.write("rdzvd.yaml", "heartbeat_timeout_ms: 4000\nlog_level: info\n");
  DaemonProcess rdzvd(step_args(dir, {"--config", config}), dir.file("rdzvd.log"));
  const int port = rdzvd.port(dir.file("port"));
  dir.write("rdzvd.yaml", "heartbeat_timeout_ms: 7000\nlog_level: info\nport_probes: 3\n");
  rdzvd.signal(SIGHUP);
  CHECK(rdzvd.log_contains("heartbeat_timeout_ms: 4000 -> 7000", 5s));
  CHECK(rdzvd.log_contains("port_probes: changed in the file but needs a restart", 1s));
  v1::JoinResponse response;
  REQUIRE(join(port, "daemon-test-token", &response).ok());
  CHECK(response.heartbeat_timeout_ms() == 7000);
  dir.write("rdzvd.yaml", "heartbeat_timeout_ms: soon\n");
  rdzvd.signal(SIGHUP);
  CHECK(rdzvd.log_contains("reload failed, keeping the running config: " + config + ": key 'heartbeat_timeout_ms'", 5s));
  // Whatever the file turns into, the daemon keeps serving on its running config.
  dir.write("rdzvd.yaml", "? [a, b]\n: 1\n");
  rdzvd.signal(SIGHUP);
  CHECK(rdzvd.log_contains("reload failed, keeping the running config: " + config + ": a key at the top level", 5s));
  std::filesystem::remove(config);
  std::filesystem::create_directory(config);
  rdzvd.signal(SIGHUP);
  CHECK(rdzvd.log_contains("'" + config + "' is not a regular file", 5s));
  CHECK(leave(port, "daemon-test-token").ok());
  rdzvd.signal(SIGTERM);
  CHECK(rdzvd.wait(10s) == 0);
}

TEST_CASE("a SIGHUP reload that does not fit the keys kept until a restart changes nothing", "[daemon]") {
  ScratchDir dir;
  const std::string config = dir.write("rdzvd.yaml", "limits:\n  max_value_size: 1000\n");
  DaemonProcess rdzvd(step_args(dir, {"--config", config}), dir.file("rdzvd.log"));
  const int port = rdzvd.port(dir.file("port"));
  v1::JoinResponse response;
  REQUIRE(join(port, "daemon-test-token", &response).ok());
  // Valid as a file, but max_message_bytes needs a restart: the running 17 MiB would stay below
  // the new max_value_size, and values that size could never be sent.
  dir.write("rdzvd.yaml", "max_message_bytes: 200000000\nlimits:\n  max_value_size: 100000000\n"
                          "  max_reply_bytes: 100000000\n");
  rdzvd.signal(SIGHUP);
  CHECK(rdzvd.log_contains("reload failed, keeping the running config: with the keys that need a restart kept as "
                           "they run: max_message_bytes (17825792) must exceed limits.max_value_size (100000000)",
                           5s));
  CHECK_THAT(rdzvd.log(), !Catch::Contains("max_value_size: 1000 -> 100000000"));
  const grpc::Status refused = set_key(port, "daemon-test-token", "k", std::string(2000, 'v'));
  CHECK(refused.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK_THAT(refused.error_message(), Catch::Contains("limit max_value_size (1000)"));
  rdzvd.signal(SIGTERM);
  CHECK(rdzvd.wait(10s) == 0);
}

TEST_CASE("rdzvd --idle-timeout exits after that long without activity", "[daemon]") {
  ScratchDir dir;
  DaemonProcess rdzvd(step_args(dir, {"--idle-timeout", "1"}), dir.file("rdzvd.log"));
  rdzvd.port(dir.file("port"));
  REQUIRE(rdzvd.wait(10s) == 0);
  CHECK_THAT(rdzvd.log(), Catch::Contains("no rendezvous activity for 1 s"));
}

TEST_CASE("rdzvd --idle-timeout counts a Join waiting for its round as activity", "[daemon]") {
  ScratchDir dir;
  DaemonProcess rdzvd(step_args(dir, {"--idle-timeout", "1", "--participants", "2:2", "--log-level", "debug"}),
                      dir.file("rdzvd.log"));
  const int port = rdzvd.port(dir.file("port"));
  BlockedJoin first(port, "a", 2, 20s);
  REQUIRE(rdzvd.log_contains("join by a (1 gathered)", 5s));
  CHECK_FALSE(rdzvd.wait(3s));  // three idle timeouts while the node of "b" starts late
  v1::JoinResponse response;
  REQUIRE(join(port, "daemon-test-token", &response, "b", 2).ok());
  CHECK(first.status().ok());
  REQUIRE(leave(port, "daemon-test-token", "a").ok());
  REQUIRE(leave(port, "daemon-test-token", "b").ok());
  REQUIRE(rdzvd.wait(10s) == 0);  // then, with nothing left, it goes
  CHECK_THAT(rdzvd.log(), Catch::Contains("no rendezvous activity for 1 s"));
}

TEST_CASE("SIGHUP turns the idle timeout off and on", "[daemon]") {
  ScratchDir dir;
  const std::string config = dir.write("rdzvd.yaml", "idle_timeout_s: 60\n");
  DaemonProcess rdzvd(step_args(dir, {"--config", config}), dir.file("rdzvd.log"));
  rdzvd.port(dir.file("port"));
  dir.write("rdzvd.yaml", "idle_timeout_s: 0\n");  // 0 = never, not "idle for 0 s"
  rdzvd.signal(SIGHUP);
  REQUIRE(rdzvd.log_contains("idle_timeout_s: 60 -> 0", 5s));
  CHECK_FALSE(rdzvd.wait(2500ms));
  dir.write("rdzvd.yaml", "idle_timeout_s: 1\n");  // from never to 1 s: the watch must be running
  rdzvd.signal(SIGHUP);
  REQUIRE(rdzvd.wait(10s) == 0);
  CHECK_THAT(rdzvd.log(), Catch::Contains("no rendezvous activity for 1 s"));
}

TEST_CASE("rdzvd --exit-with-parent exits when its parent dies", "[daemon]") {
  ScratchDir dir;
  // Become the subreaper so the orphaned rdzvd is re-parented to this test and can be waited on.
  REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
  const pid_t parent = fork();
  REQUIRE(parent >= 0);
  if (parent == 0) {
    DaemonProcess rdzvd(step_args(dir, {"--exit-with-parent"}), dir.file("rdzvd.log"));
    rdzvd.port(dir.file("port"));
    std::ofstream(dir.file("pid")) << rdzvd.pid();
    _exit(0);  // the daemon loses its parent here; its destructor never runs
  }
  int status = 0;
  REQUIRE(waitpid(parent, &status, 0) == parent);
  pid_t daemon = 0;
  REQUIRE(std::ifstream(dir.file("pid")) >> daemon);
  const auto give_up = std::chrono::steady_clock::now() + 10s;
  int daemon_status = 0;
  pid_t reaped = 0;
  while (reaped != daemon && std::chrono::steady_clock::now() < give_up) {
    reaped = waitpid(daemon, &daemon_status, WNOHANG);
    std::this_thread::sleep_for(10ms);
  }
  REQUIRE(reaped == daemon);
  CHECK(WIFEXITED(daemon_status));
  CHECK(WEXITSTATUS(daemon_status) == 0);
  CHECK_THAT(read_file(dir.file("rdzvd.log")), Catch::Contains("stopping: SIGTERM"));
  prctl(PR_SET_CHILD_SUBREAPER, 0);
}

namespace {

// Makes the caller's next child pid 1 of a new pid namespace (in a user namespace of its own
// unless root); false where the kernel or a sandbox does not allow it.
bool next_child_is_pid_one() {
  const uid_t uid = geteuid();
  const gid_t gid = getegid();
  if (uid == 0) return unshare(CLONE_NEWPID) == 0;
  if (unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0) return false;
  // Map ourselves, so that files the daemon writes are still ours.
  std::ofstream("/proc/self/setgroups") << "deny";
  std::ofstream("/proc/self/uid_map") << uid << " " << uid << " 1";
  std::ofstream("/proc/self/gid_map") << gid << " " << gid << " 1";
  return true;
}

}  // namespace

TEST_CASE("rdzvd --exit-with-parent runs under a parent that is pid 1", "[daemon]") {
  ScratchDir dir;
  const std::vector<std::string> args = step_args(dir, {"--exit-with-parent"});
  constexpr int kNoNamespace = 77;
  const pid_t outer = fork();
  REQUIRE(outer >= 0);
  if (outer == 0) {
    if (!next_child_is_pid_one()) _exit(kNoNamespace);
    const pid_t init = fork();  // pid 1, as `trainer --nproc` is as a container's entrypoint
    if (init == 0) {
      int code = 1;
      try {
        DaemonProcess rdzvd(args, dir.file("rdzvd.log"));
        rdzvd.port(dir.file("port"));           // throws when it exits without listening
        code = rdzvd.wait(500ms) ? 2 : 0;       // and still up a while later
      } catch (const std::exception&) {
        code = 3;
      }
      _exit(code);
    }
    int status = 0;
    _exit(init > 0 && waitpid(init, &status, 0) == init && WIFEXITED(status) ? WEXITSTATUS(status) : 4);
  }
  int status = 0;
  REQUIRE(waitpid(outer, &status, 0) == outer);
  REQUIRE(WIFEXITED(status));
  if (WEXITSTATUS(status) == kNoNamespace) {
    WARN("no pid namespace can be made here: not tested");
    return;
  }
  CHECK(WEXITSTATUS(status) == 0);
  CHECK_THAT(read_file(dir.file("rdzvd.log")), !Catch::Contains("the parent process is already gone"));
}

namespace {

// A NOTIFY_SOCKET as systemd makes one: a datagram socket; receive() returns each message.
class NotifySocket {
 public:
  explicit NotifySocket(std::string path) : path_(std::move(path)) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    std::snprintf(address.sun_path, sizeof address.sun_path, "%s", path_.c_str());
    REQUIRE(bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0);
  }
  ~NotifySocket() { close(fd_); }
  // The next message within `limit`, or "" when none came.
  std::string receive(std::chrono::milliseconds limit) {
    pollfd ready{fd_, POLLIN, 0};
    if (poll(&ready, 1, int(limit.count())) <= 0) return {};
    char buffer[4096];
    const ssize_t got = recv(fd_, buffer, sizeof buffer, 0);
    return got > 0 ? std::string(buffer, std::size_t(got)) : std::string();
  }
  // The next message that is not WATCHDOG=1, within `limit`; counts the WATCHDOG=1 seen.
  std::string receive_state(std::chrono::milliseconds limit, int* watchdogs = nullptr) {
    const auto end = std::chrono::steady_clock::now() + limit;
    std::string message;  // not in the loop: GCC 12 warns a bogus -Wrestrict on moving that one out
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return {};
      message = receive(left);
      if (message != "WATCHDOG=1") return message;
      if (watchdogs) ++*watchdogs;
    }
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace

TEST_CASE("under systemd rdzvd says READY once listening, RELOADING around SIGHUP, STOPPING, and pets the watchdog",
          "[daemon][systemd]") {
  ScratchDir dir;
  NotifySocket notify(dir.file("notify.sock"));
  const std::string config = dir.write("rdzvd.yaml", "heartbeat_timeout_ms: 4000\n");
  DaemonProcess rdzvd(step_args(dir, {"--config", config}), dir.file("rdzvd.log"),
                      {"NOTIFY_SOCKET=" + notify.path(), "WATCHDOG_USEC=200000"});
  const std::string ready = notify.receive_state(10s);
  CHECK_THAT(ready, Catch::StartsWith("READY=1\nSTATUS=listening on 127.0.0.1:"));
  // By READY the port is taken: a client connects at once.
  const int port = rdzvd.port(dir.file("port"), 1s);
  v1::JoinResponse response;
  CHECK(join(port, "daemon-test-token", &response).ok());
  // WATCHDOG=1 every 100 ms (half of WATCHDOG_USEC).
  int watchdogs = 0;
  CHECK(notify.receive_state(1s, &watchdogs).empty());
  CHECK(watchdogs >= 3);
  // A stopped daemon stops petting; a continued one resumes.
  rdzvd.signal(SIGSTOP);
  while (!notify.receive(200ms).empty()) {}  // what was sent just before the stop
  CHECK(notify.receive(600ms).empty());
  rdzvd.signal(SIGCONT);
  CHECK(notify.receive(1s) == "WATCHDOG=1");
  rdzvd.signal(SIGHUP);
  CHECK(notify.receive_state(5s) == "RELOADING=1");
  CHECK(notify.receive_state(5s) == "READY=1");
  rdzvd.signal(SIGTERM);
  CHECK_THAT(notify.receive_state(5s), Catch::StartsWith("STOPPING=1\nSTATUS=stopping: SIGTERM"));
  CHECK(rdzvd.wait(10s) == 0);
}

TEST_CASE("without NOTIFY_SOCKET, or with another process's watchdog, rdzvd sends nothing", "[daemon][systemd]") {
  ScratchDir dir;
  NotifySocket notify(dir.file("notify.sock"));
  DaemonProcess plain(step_args(dir), dir.file("plain.log"), {"WATCHDOG_USEC=200000"});
  plain.port(dir.file("port"));
  CHECK(notify.receive(500ms).empty());
  plain.signal(SIGTERM);
  CHECK(plain.wait(10s) == 0);
  DaemonProcess other(step_args(dir), dir.file("other.log"),
                      {"NOTIFY_SOCKET=" + notify.path(), "WATCHDOG_USEC=200000", "WATCHDOG_PID=1"});
  CHECK_THAT(notify.receive(10s), Catch::StartsWith("READY=1"));
  CHECK(notify.receive(600ms).empty());  // no WATCHDOG=1: the watchdog is pid 1's, not ours
  other.signal(SIGTERM);
  CHECK(other.wait(10s) == 0);
}
