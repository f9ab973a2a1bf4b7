// What a user asks for with `--llm-rdzv[=ARGS]` on srun, sbatch or salloc.
#pragma once

#include <optional>
#include <string>
#include <string_view>

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

// Parses the option argument; nullptr or "" (a bare --llm-rdzv) means all defaults.
// Keys: port=LO-HI, nodes=N|MIN:MAX, timeout=SECONDS, addr=hostname|ip|iface:NAME, id=NAME,
// mode=step|site; or the single word "off". Throws ArgError naming the bad key.
UserOptions parse_user_options(const char* arg);

// The usage text srun --help shows for the option.
inline constexpr const char* kUserOptionUsage =
    "Rendezvous for distributed training: sets MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, "
    "LOCAL_RANK, RDZV_ENDPOINT, RDZV_ID, RDZV_TOKEN... in every task and runs a per-step rdzvd. "
    "ARGS: port=LO-HI, nodes=MIN:MAX, timeout=SECONDS, addr=hostname|ip|iface:NAME, id=NAME, "
    "mode=step|site, or off";

}  // namespace llmrdzv::spank
