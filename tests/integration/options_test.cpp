// Client Options: the env contract (Options::from_env) and option validation, including every
// bad-input path with the message that names the problem.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

#include "llmrdzv/client/error.hpp"
#include "llmrdzv/client/options.hpp"

using llmrdzv::client::ErrorCode;
using llmrdzv::client::Options;
using llmrdzv::client::RdzvError;

namespace {

const char* const kContractVariables[] = {"RDZV_ENDPOINT", "RDZV_ID",           "RDZV_TOKEN",         "WORLD_SIZE",
                                          "SLURM_PROCID",  "RANK",              "LOCAL_RANK",         "LLM_RDZV_PORT_RANGE",
                                          "LLM_RDZV_PORT_PROBES",
                                          "LLM_RDZV_MIN_WORLD", "LLM_RDZV_MAX_WORLD", "LLM_RDZV_TIMEOUT"};

// Sets exactly the given contract variables (others unset) for the test's lifetime.
class ScopedEnv {
 public:
  explicit ScopedEnv(const std::map<std::string, std::string>& values) {
    for (const char* name : kContractVariables) {
      if (const char* old = std::getenv(name)) saved_[name] = old;
      unsetenv(name);
    }
    for (const auto& [name, value] : values) setenv(name.c_str(), value.c_str(), 1);
  }
  ~ScopedEnv() {
    for (const char* name : kContractVariables) unsetenv(name);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  std::map<std::string, std::string> saved_;
};

std::map<std::string, std::string> minimal_env() {
  return {{"RDZV_ENDPOINT", "node1:29500"}, {"RDZV_ID", "42.0"}, {"RDZV_TOKEN", "secret"}, {"WORLD_SIZE", "8"}};
}

// from_env with `changes` applied to the minimal env (an empty value removes the variable).
std::string from_env_error(const std::map<std::string, std::string>& changes) {
  auto values = minimal_env();
  for (const auto& [name, value] : changes) {
    if (value.empty()) {
      values.erase(name);
    } else {
      values[name] = value;
    }
  }
  ScopedEnv env(values);
  try {
    Options::from_env();
  } catch (const RdzvError& error) {
    CHECK(error.code() == ErrorCode::invalid_argument);
    return error.what();
  }
  return "no error";
}

}  // namespace

TEST_CASE("from_env reads the fixed-size contract") {
  auto values = minimal_env();
  values["SLURM_PROCID"] = "5";
  values["RANK"] = "3";
  values["LOCAL_RANK"] = "1";
  values["LLM_RDZV_TIMEOUT"] = "90";
  values["LLM_RDZV_PORT_RANGE"] = "29500-29599";
  values["LLM_RDZV_PORT_PROBES"] = "12";
  ScopedEnv env(values);
  const Options options = Options::from_env();
  CHECK(options.endpoint == "node1:29500");
  CHECK(options.rdzv_id == "42.0");
  CHECK(options.token == "secret");
  CHECK(options.min_world == 8);
  CHECK(options.max_world == 8);
  CHECK(options.requested_rank == 5);  // SLURM_PROCID wins over RANK
  CHECK(options.local_rank == 1);
  CHECK(options.join_timeout == std::chrono::seconds(90));
  REQUIRE(options.port_range);
  CHECK(options.port_range->lo == 29500);
  CHECK(options.port_range->hi == 29599);
  CHECK(options.port_probes == 12);
  CHECK_NOTHROW(options.validate());
}

TEST_CASE("from_env falls back to RANK and reads an elastic size") {
  auto values = minimal_env();
  values.erase("WORLD_SIZE");
  values["RANK"] = "2";
  values["LLM_RDZV_MIN_WORLD"] = "2";
  values["LLM_RDZV_MAX_WORLD"] = "6";
  ScopedEnv env(values);
  const Options options = Options::from_env();
  CHECK(options.requested_rank == 2);
  CHECK(options.min_world == 2);
  CHECK(options.max_world == 6);
  CHECK_FALSE(options.port_range);
  CHECK(options.port_probes == llmrdzv::kDefaultPortProbes);
}

TEST_CASE("from_env names each missing or malformed variable") {
  CHECK_THAT(from_env_error({{"RDZV_ENDPOINT", ""}}), Catch::Contains("RDZV_ENDPOINT is not set"));
  CHECK_THAT(from_env_error({{"RDZV_ID", ""}}), Catch::Contains("RDZV_ID is not set"));
  CHECK_THAT(from_env_error({{"RDZV_TOKEN", ""}}), Catch::Contains("RDZV_TOKEN is not set"));
  CHECK_THAT(from_env_error({{"WORLD_SIZE", ""}}), Catch::Contains("WORLD_SIZE is not set"));
  CHECK_THAT(from_env_error({{"RDZV_ENDPOINT", "node1"}}), Catch::Contains("RDZV_ENDPOINT 'node1' is not HOST:PORT"));
  CHECK_THAT(from_env_error({{"RDZV_ENDPOINT", "node1:99999"}}), Catch::Contains("RDZV_ENDPOINT 'node1:99999' is not HOST:PORT"));
  CHECK_THAT(from_env_error({{"WORLD_SIZE", "0"}}), Catch::Contains("WORLD_SIZE='0' is not an integer in [1,"));
  CHECK_THAT(from_env_error({{"WORLD_SIZE", "eight"}}), Catch::Contains("WORLD_SIZE='eight'"));
  CHECK_THAT(from_env_error({{"SLURM_PROCID", "-1"}}), Catch::Contains("SLURM_PROCID='-1'"));
  CHECK_THAT(from_env_error({{"SLURM_PROCID", "8"}}), Catch::Contains("SLURM_PROCID=8 is not below the world size 8"));
  CHECK_THAT(from_env_error({{"RANK", "x"}}), Catch::Contains("RANK='x'"));
  CHECK_THAT(from_env_error({{"LOCAL_RANK", "1.5"}}), Catch::Contains("LOCAL_RANK='1.5'"));
  CHECK_THAT(from_env_error({{"LLM_RDZV_TIMEOUT", "0"}}), Catch::Contains("LLM_RDZV_TIMEOUT='0'"));
  CHECK_THAT(from_env_error({{"LLM_RDZV_PORT_RANGE", "30000-20000"}}),
             Catch::Contains("LLM_RDZV_PORT_RANGE='30000-20000' is not LO-HI"));
  CHECK_THAT(from_env_error({{"LLM_RDZV_PORT_PROBES", "0"}}), Catch::Contains("LLM_RDZV_PORT_PROBES='0' is not an integer in [1, 64]"));
  CHECK_THAT(from_env_error({{"LLM_RDZV_PORT_PROBES", "65"}}), Catch::Contains("LLM_RDZV_PORT_PROBES='65'"));
  CHECK_THAT(from_env_error({{"LLM_RDZV_MIN_WORLD", "2"}}),
             Catch::Contains("LLM_RDZV_MIN_WORLD is set but LLM_RDZV_MAX_WORLD is not"));
  CHECK_THAT(from_env_error({{"LLM_RDZV_MAX_WORLD", "2"}}),
             Catch::Contains("LLM_RDZV_MAX_WORLD is set but LLM_RDZV_MIN_WORLD is not"));
  CHECK_THAT(from_env_error({{"LLM_RDZV_MIN_WORLD", "4"}, {"LLM_RDZV_MAX_WORLD", "2"}}),
             Catch::Contains("LLM_RDZV_MIN_WORLD=4 is greater than LLM_RDZV_MAX_WORLD=2"));
}

TEST_CASE("validate rejects inconsistent options") {
  Options options;
  options.endpoint = "127.0.0.1:1";
  CHECK_NOTHROW(options.validate());
  options.min_world = 3;
  CHECK_THROWS_WITH(options.validate(), Catch::Contains("min=3 max=1 is not 1 <= min <= max"));
  options.max_world = 4;
  options.requested_rank = 4;
  CHECK_THROWS_WITH(options.validate(), Catch::Contains("requested rank 4 is outside [-1, 4)"));
  options.requested_rank = 0;
  options.call_deadline = std::chrono::milliseconds(0);
  CHECK_THROWS_WITH(options.validate(), Catch::Contains("call_deadline must be positive"));
  options.call_deadline = std::chrono::seconds(1);
  options.endpoint = "[::1:5";
  CHECK_THROWS_WITH(options.validate(), Catch::Contains("endpoint '[::1:5' is not HOST:PORT"));
  options.endpoint = "[::1]:5";
  CHECK_NOTHROW(options.validate());
}

TEST_CASE("parse_endpoint splits host and port") {
  const auto v4 = llmrdzv::client::parse_endpoint("10.0.0.1:29500");
  CHECK(v4.host == "10.0.0.1");
  CHECK(v4.port == 29500);
  const auto v6 = llmrdzv::client::parse_endpoint("[fe80::1]:80");
  CHECK(v6.host == "[fe80::1]");
  CHECK(v6.port == 80);
  CHECK_THROWS_WITH(llmrdzv::client::parse_endpoint(":80"), Catch::Contains("is not HOST:PORT"));
  CHECK_THROWS_WITH(llmrdzv::client::parse_endpoint("host:"), Catch::Contains("is not HOST:PORT"));
  CHECK_THROWS_WITH(llmrdzv::client::parse_endpoint("host:0"), Catch::Contains("endpoint 'host:0' is not HOST:PORT (or [IPV6]:PORT) with PORT in 1..65535"));
}
