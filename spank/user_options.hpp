// What a user asks for with `--llm-rdzv[=ARGS]` on srun, sbatch or salloc.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "args.hpp"

namespace llmrdzv::spank {

struct UserOptions {
  bool enabled = true;  // `--llm-rdzv=off` turns a site default off for one job or step
  std::optional<PortRange> ports;
  std::optional<NodeBounds> nodes;
  std::optional<std::uint32_t> timeout_s;
  std::optional<AddrPolicy> addr;
  std::optional<std::string> id;
  std::optional<Mode> mode;
};

// The keys of --llm-rdzv=ARGS (the one list: parser, usage text, man page check).
const std::vector<KeySpec<UserOptions>>& user_keys();

// Parses the option argument; nullptr or "" (a bare --llm-rdzv) means all defaults; the single
// word "off" turns the option off. Throws ArgError naming the bad key.
UserOptions parse_user_options(const char* arg);

// The usage text srun --help shows for the option.
std::string user_option_usage();

}  // namespace llmrdzv::spank
