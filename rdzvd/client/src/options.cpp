// Options: validation, endpoint parsing and the env contract (see options.hpp for the variables).
#include "llmrdzv/client/options.hpp"

#include <unistd.h>

#include <charconv>
#include <climits>
#include <cstdlib>

#include "llmrdzv/client/error.hpp"

namespace llmrdzv::client {
namespace {

[[noreturn]] void invalid(const std::string& message) { throw RdzvError(ErrorCode::invalid_argument, message); }

std::optional<std::string> env(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

std::string required_env(const char* name) {
  auto value = env(name);
  if (!value || value->empty()) invalid(std::string(name) + " is not set (the llm-rdzv env contract needs it)");
  return *value;
}

std::int64_t parse_integer(const std::string& text, const std::string& what, std::int64_t lo, std::int64_t hi) {
  const auto value = parse_signed(text, lo, hi);
  if (!value) {
    invalid(what + "='" + text + "' is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return *value;
}

std::optional<std::int64_t> integer_env(const char* name, std::int64_t lo, std::int64_t hi) {
  auto value = env(name);
  if (!value) return std::nullopt;
  return parse_integer(*value, name, lo, hi);
}

}  // namespace

HostPort parse_endpoint(const std::string& endpoint, const std::string& what) {
  const auto address = parse_host_port(endpoint);
  if (!address) invalid(what + " '" + endpoint + "' is not HOST:PORT (or [IPV6]:PORT) with PORT in 1..65535");
  return *address;
}

void Options::validate() const {
  parse_endpoint(endpoint);
  if (min_world < 1 || max_world < min_world) {
    invalid("world size min=" + std::to_string(min_world) + " max=" + std::to_string(max_world) +
            " is not 1 <= min <= max");
  }
  if (requested_rank < -1 || requested_rank >= max_world) {
    invalid("requested rank " + std::to_string(requested_rank) + " is outside [-1, " + std::to_string(max_world) + ")");
  }
  if (port_probes == 0) invalid("port_probes must be at least 1");
  const auto positive = [](std::chrono::milliseconds value, const char* name) {
    if (value.count() <= 0) invalid(std::string(name) + " must be positive");
  };
  positive(connect_timeout, "connect_timeout");
  positive(call_deadline, "call_deadline");
  positive(join_timeout, "join_timeout");
  positive(probe_deadline, "probe_deadline");
  positive(backoff_initial, "backoff_initial");
  if (join_timeout.count() > std::int64_t(UINT32_MAX)) invalid("join_timeout is longer than 2^32 ms");
}

Options Options::from_env() {
  Options options;
  options.endpoint = required_env("RDZV_ENDPOINT");
  parse_endpoint(options.endpoint, "RDZV_ENDPOINT");
  options.rdzv_id = required_env("RDZV_ID");
  options.token = required_env("RDZV_TOKEN");

  if (auto range = env("LLM_RDZV_PORT_RANGE")) {
    options.port_range = parse_port_range(*range);
    if (!options.port_range) invalid("LLM_RDZV_PORT_RANGE='" + *range + "' is not LO-HI with 1 <= LO <= HI <= 65535");
  }

  if (auto probes = integer_env("LLM_RDZV_PORT_PROBES", 1, 64)) options.port_probes = std::uint32_t(*probes);

  const auto min_world = integer_env("LLM_RDZV_MIN_WORLD", 1, INT32_MAX);
  const auto max_world = integer_env("LLM_RDZV_MAX_WORLD", 1, INT32_MAX);
  if (min_world.has_value() != max_world.has_value()) {
    invalid(std::string(min_world ? "LLM_RDZV_MIN_WORLD is set but LLM_RDZV_MAX_WORLD is not"
                                  : "LLM_RDZV_MAX_WORLD is set but LLM_RDZV_MIN_WORLD is not") +
            " (set both for an elastic rendezvous, or neither and WORLD_SIZE)");
  }
  if (min_world) {
    if (*min_world > *max_world) {
      invalid("LLM_RDZV_MIN_WORLD=" + std::to_string(*min_world) + " is greater than LLM_RDZV_MAX_WORLD=" +
              std::to_string(*max_world));
    }
    options.min_world = std::int32_t(*min_world);
    options.max_world = std::int32_t(*max_world);
  } else {
    const auto world = parse_integer(required_env("WORLD_SIZE"), "WORLD_SIZE", 1, INT32_MAX);
    options.min_world = options.max_world = std::int32_t(world);
  }

  const char* rank_variable = env("SLURM_PROCID") ? "SLURM_PROCID" : "RANK";
  if (auto rank = integer_env(rank_variable, 0, INT32_MAX)) {
    if (*rank >= options.max_world) {
      invalid(std::string(rank_variable) + "=" + std::to_string(*rank) + " is not below the world size " +
              std::to_string(options.max_world));
    }
    options.requested_rank = std::int32_t(*rank);
  }
  if (auto local_rank = integer_env("LOCAL_RANK", 0, INT32_MAX)) options.local_rank = std::int32_t(*local_rank);
  if (auto timeout = integer_env("LLM_RDZV_TIMEOUT", 1, UINT32_MAX / 1000)) {
    options.join_timeout = std::chrono::seconds(*timeout);
  }
  return options;
}

}  // namespace llmrdzv::client
