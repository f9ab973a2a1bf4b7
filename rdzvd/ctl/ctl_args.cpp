// Parsing rdzvctl's command line (see ctl_args.hpp).
#include "ctl_args.hpp"

#include "llmrdzv/common/text_values.hpp"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace llmrdzv::ctl {
namespace {

std::uint64_t parse_flag_number(const std::string& flag, const std::string& text, std::uint64_t max) {
  const auto value = parse_unsigned(text, 0, max);
  if (!value) throw UsageError(flag + " needs an integer in [0, " + std::to_string(max) + "], got '" + text + "'");
  return *value;
}

std::string read_token_file(const std::string& path) {
  try {
    return read_secret_file(path);
  } catch (const std::runtime_error& e) {
    throw UsageError(std::string("--token-file: ") + e.what());
  }
}

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

}  // namespace

CtlArgs parse_ctl_args(int argc, char** argv) {
  CtlArgs args;
  args.endpoint = env_or_empty("RDZV_ENDPOINT");
  args.token = env_or_empty("RDZV_TOKEN");
  std::optional<std::string> token_flag, token_file;
  std::optional<std::uint64_t> round;
  bool endpoint_flag = false;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      args.help = true;
      return args;
    }
    if (!flag.starts_with("--")) {
      positional.push_back(flag);
      continue;
    }
    if (i + 1 >= argc) throw UsageError(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--endpoint") {
      args.endpoint = value;
      endpoint_flag = true;
    } else if (flag == "--id") {
      args.rdzv_id = value;
    } else if (flag == "--token") {
      token_flag = value;
    } else if (flag == "--token-file") {
      token_file = value;
    } else if (flag == "--timeout") {
      args.timeout = std::chrono::seconds(parse_flag_number(flag, value, 3600));
      if (args.timeout.count() == 0) throw UsageError("--timeout must be at least 1 second");
    } else if (flag == "--round") {
      round = parse_flag_number(flag, value, UINT64_MAX);
    } else {
      throw UsageError("unknown flag " + flag);
    }
  }
  if (token_flag && token_file) throw UsageError("give --token or --token-file, not both");
  if (token_flag) args.token = *token_flag;
  if (token_file) args.token = read_token_file(*token_file);

  if (positional.empty()) throw UsageError("no command given");
  const std::string& name = positional.front();
  const std::size_t expected = (name == "show" || name == "kv") ? 2 : 1;
  if (name == "ping") {
    args.command = Command::ping;
  } else if (name == "list") {
    args.command = Command::list;
  } else if (name == "show") {
    args.command = Command::show;
  } else if (name == "kv") {
    args.command = Command::kv;
  } else {
    throw UsageError("unknown command '" + name + "'");
  }
  // Inside a step the rendezvous is the step's own (RDZV_ID) unless an ID or --id names another.
  if (expected == 2 && positional.size() == 1 && args.rdzv_id.empty()) args.rdzv_id = env_or_empty("RDZV_ID");
  const bool id_by_flag = expected == 2 && positional.size() == 1 && !args.rdzv_id.empty();
  if (positional.size() != expected && !id_by_flag) {
    throw UsageError(name + (expected == 2 ? " needs exactly one rendezvous ID (or RDZV_ID)" : " takes no arguments"));
  }
  if (expected == 2 && !id_by_flag) args.rdzv_id = positional[1];
  // ping and list of the step's own rendezvous when the token is at hand (inside a step).
  if (expected == 1 && args.rdzv_id.empty() && !args.token.empty()) args.rdzv_id = env_or_empty("RDZV_ID");
  if (round && args.command != Command::kv) throw UsageError("--round only applies to kv");
  args.round = round.value_or(0);
  if (args.endpoint.empty()) throw UsageError("no --endpoint given and RDZV_ENDPOINT is not set");
  if (!endpoint_flag && std::getenv("LLM_RDZV_PORT_RANGE")) {
    const std::string range = env_or_empty("LLM_RDZV_PORT_RANGE");
    args.port_range = parse_port_range(range);
    if (!args.port_range) throw UsageError("LLM_RDZV_PORT_RANGE='" + range + "' is not LO-HI");
    if (const char* probes = std::getenv("LLM_RDZV_PORT_PROBES")) {
      const auto count = parse_signed(probes, 1, 64);
      if (!count) throw UsageError("LLM_RDZV_PORT_PROBES='" + std::string(probes) + "' is not an integer in [1, 64]");
      args.port_probes = std::uint32_t(*count);
    }
  }
  if ((args.command == Command::show || args.command == Command::kv) && args.token.empty()) {
    throw UsageError(name + " needs the rendezvous token: --token, --token-file or RDZV_TOKEN");
  }
  // rdzvd answers tokenless calls with a refusal only (docs/security.md): a list needs an id it serves.
  if (args.command == Command::list && (args.rdzv_id.empty() || args.token.empty())) {
    throw UsageError("list needs a rendezvous id and its token (--id and --token, --token-file or RDZV_TOKEN): "
                     "rdzvd shows its rendezvous only to those who hold one of their tokens");
  }
  // The daemon shows that it serves an id by proving it holds its token: nothing to check without one.
  if (args.command == Command::ping && !args.rdzv_id.empty() && args.token.empty()) {
    throw UsageError("ping --id needs the rendezvous token: --token, --token-file or RDZV_TOKEN");
  }
  return args;
}

}  // namespace llmrdzv::ctl
