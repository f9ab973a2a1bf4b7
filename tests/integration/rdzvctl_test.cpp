// rdzvctl against a real rdzvd: ping, list, show and kv output, and its exit codes for usage
// errors, an unreachable daemon and a wrong token.
#include <catch2/catch.hpp>

#include "llmrdzv/client/client.hpp"
#include "test_clients.hpp"

using namespace llmrdzv::testing;
using namespace std::chrono_literals;

namespace {

struct CtlRun {
  int exit_status = -1;
  std::string out;
  std::string err;
};

// Runs rdzvctl with RDZV_ENDPOINT/RDZV_ID/RDZV_TOKEN unset unless `env` sets them.
CtlRun rdzvctl(const ScratchDir& dir, std::vector<std::string> args, EnvChanges env = {}) {
  args.insert(args.begin(), rdzvctl_path());
  for (const char* name : {"RDZV_ENDPOINT", "RDZV_ID", "RDZV_TOKEN"}) env.try_emplace(name, std::nullopt);
  ChildProcess process(args, env, dir.file("rdzvctl.err"));
  CtlRun run;
  for (const auto& line : process.read_remaining_lines(30s)) run.out += line + "\n";
  run.exit_status = process.wait(10s).value_or(-1);
  run.err = process.stderr_text();
  return run;
}

}  // namespace

TEST_CASE("rdzvctl reports usage errors with exit status 2") {
  ScratchDir dir;
  const auto help = rdzvctl(dir, {"--help"});
  CHECK(help.exit_status == 0);
  CHECK_THAT(help.out, Catch::Contains("usage: rdzvctl"));
  const auto none = rdzvctl(dir, {"--endpoint", "127.0.0.1:1"});
  CHECK(none.exit_status == 2);
  CHECK_THAT(none.err, Catch::Contains("rdzvctl: no command given"));
  const auto unknown = rdzvctl(dir, {"--endpoint", "127.0.0.1:1", "frobnicate"});
  CHECK(unknown.exit_status == 2);
  CHECK_THAT(unknown.err, Catch::Contains("unknown command 'frobnicate'"));
  const auto no_endpoint = rdzvctl(dir, {"list"});
  CHECK(no_endpoint.exit_status == 2);
  CHECK_THAT(no_endpoint.err, Catch::Contains("no --endpoint given and RDZV_ENDPOINT is not set"));
  const auto no_token = rdzvctl(dir, {"--endpoint", "127.0.0.1:1", "show", "x"});
  CHECK(no_token.exit_status == 2);
  CHECK_THAT(no_token.err, Catch::Contains("show needs the rendezvous token"));
  // The daemon shows it serves an id by proving it holds the id's token: ping --id needs one.
  const auto ping_id = rdzvctl(dir, {"--endpoint", "127.0.0.1:1", "--id", "x", "ping"});
  CHECK(ping_id.exit_status == 2);
  CHECK_THAT(ping_id.err, Catch::Contains("ping --id needs the rendezvous token"));
  const auto bad_round = rdzvctl(dir, {"--endpoint", "127.0.0.1:1", "--token", "t", "kv", "x", "--round", "-1"});
  CHECK(bad_round.exit_status == 2);
  CHECK_THAT(bad_round.err, Catch::Contains("--round needs an integer"));
  const auto bad_endpoint = rdzvctl(dir, {"--endpoint", "nowhere", "ping"});
  CHECK(bad_endpoint.exit_status == 2);
  CHECK_THAT(bad_endpoint.err, Catch::Contains("endpoint 'nowhere' is not HOST:PORT"));
  const auto missing_file = rdzvctl(dir, {"--endpoint", "127.0.0.1:1", "--token-file", dir.file("absent"), "show", "x"});
  CHECK(missing_file.exit_status == 2);
  CHECK_THAT(missing_file.err, Catch::Contains("--token-file: cannot read '" + dir.file("absent") + "'"));
  const auto bad_probes = rdzvctl(dir, {"ping"}, {{"RDZV_ENDPOINT", "127.0.0.1:20000"},
                                                  {"LLM_RDZV_PORT_RANGE", "20000-20099"},
                                                  {"LLM_RDZV_PORT_PROBES", "0"}});
  CHECK(bad_probes.exit_status == 2);
  CHECK_THAT(bad_probes.err, Catch::Contains("LLM_RDZV_PORT_PROBES='0' is not an integer in [1, 64]"));
}

TEST_CASE("rdzvctl says when rdzvd is unreachable (exit status 3)") {
  ScratchDir dir;
  // Port 1 on loopback: nothing listens there, so the connection is refused.
  const auto run = rdzvctl(dir, {"--endpoint", "127.0.0.1:1", "--timeout", "1", "ping"});
  CHECK(run.exit_status == 3);
  CHECK_THAT(run.err, Catch::Contains("rdzvctl: unavailable: no rdzvd serving rendezvous"));
  CHECK_THAT(run.err, Catch::Contains("127.0.0.1:1: unavailable"));
}

TEST_CASE("rdzvctl ping, list, show and kv describe a live rendezvous") {
  ScratchDir dir;
  RdzvdProcess rdzvd(dir);
  auto options = rdzvd.client_options(1);
  options.participant_id = "ctl-member";
  llmrdzv::client::Client member(options);
  const auto assignment = member.join();
  member.kv(0).set("greeting", "hello\x01");
  member.kv(assignment.round).set("in-round", "r");

  // Tokenless: rdzvd's refusal is the answer, and it names no rendezvous and counts no member.
  const auto ping = rdzvctl(dir, {"--endpoint", rdzvd.endpoint(), "ping"});
  CHECK(ping.exit_status == 0);
  CHECK_THAT(ping.out, Catch::Contains("rdzvd " + rdzvd.endpoint() + " answers: version=") &&
                           Catch::Contains("mode=step") && Catch::Contains("shows nothing more"));
  CHECK_THAT(ping.out, !Catch::Contains(rdzvd.rdzv_id()) && !Catch::Contains("members="));

  const auto ping_id = rdzvctl(dir, {"--endpoint", rdzvd.endpoint(), "--id", rdzvd.rdzv_id(), "--token",
                                     rdzvd.token(), "ping"});
  CHECK(ping_id.exit_status == 0);
  CHECK_THAT(ping_id.out, Catch::Contains("answers: version="));
  const auto ping_other = rdzvctl(dir, {"--endpoint", rdzvd.endpoint(), "--id", "other.7", "--token", "t", "ping"});
  CHECK(ping_other.exit_status == 5);

  const auto tokenless_list = rdzvctl(dir, {"--endpoint", rdzvd.endpoint(), "list"});
  CHECK(tokenless_list.exit_status == 2);
  CHECK_THAT(tokenless_list.err, Catch::Contains("list needs a rendezvous id and its token"));
  const auto list = rdzvctl(dir, {"--endpoint", rdzvd.endpoint(), "--id", rdzvd.rdzv_id(), "--token", rdzvd.token(), "list"});
  CHECK(list.exit_status == 0);
  CHECK_THAT(list.out, Catch::Contains(rdzvd.rdzv_id()) && Catch::Contains("1:1"));
  CHECK_THAT(list.out, !Catch::Contains(rdzvd.token()));

  const std::string token_file = dir.write("ctl.token", rdzvd.token() + "\n");
  const auto show = rdzvctl(dir, {"--endpoint", rdzvd.endpoint(), "--token-file", token_file, "show", rdzvd.rdzv_id()});
  CHECK(show.exit_status == 0);
  CHECK_THAT(show.out, Catch::Contains("ctl-member") && Catch::Contains("open"));

  const auto wide = rdzvctl(dir, {"--endpoint", rdzvd.endpoint(), "--token", rdzvd.token(), "kv", rdzvd.rdzv_id()});
  CHECK(wide.exit_status == 0);
  CHECK_THAT(wide.out, Catch::Contains("greeting = hello\\x01"));
  CHECK_THAT(wide.out, !Catch::Contains("in-round"));
  const auto round = rdzvctl(dir, {"--endpoint", rdzvd.endpoint(), "--token", rdzvd.token(), "kv", rdzvd.rdzv_id(),
                                   "--round", std::to_string(assignment.round)});
  CHECK_THAT(round.out, Catch::Contains("in-round = r"));

  // Inside a step the env contract is enough: no options, no ID.
  const auto in_step = rdzvctl(dir, {"show"}, {{"RDZV_ENDPOINT", rdzvd.endpoint()}, {"RDZV_ID", rdzvd.rdzv_id()},
                                              {"RDZV_TOKEN", rdzvd.token()}});
  CHECK(in_step.exit_status == 0);
  CHECK_THAT(in_step.out, Catch::Contains("ctl-member"));

  const auto denied = rdzvctl(dir, {"--endpoint", rdzvd.endpoint(), "--token", "wrong", "show", rdzvd.rdzv_id()});
  CHECK(denied.exit_status == 4);
  CHECK_THAT(denied.err, Catch::Contains("rdzvctl: permission_denied"));
  const auto foreign = rdzvctl(dir, {"--endpoint", rdzvd.endpoint(), "--token", "t", "show", "other.7"});
  CHECK(foreign.exit_status == 5);
  CHECK_THAT(foreign.err, Catch::Contains("foreign-rendezvous:"));
}
