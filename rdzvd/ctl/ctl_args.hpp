// rdzvctl's command line: global flags, the command and its arguments. Parsing only; the
// commands live in commands.cpp.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include "llmrdzv/common/port_probe.hpp"

namespace llmrdzv::ctl {

inline constexpr const char* kUsage =
    "usage: rdzvctl [--endpoint HOST:PORT] [--id ID] [--token TOKEN | --token-file FILE]\n"
    "               [--timeout SECONDS] COMMAND\n"
    "commands:\n"
    "  ping                 check that rdzvd answers (version, mode, uptime, round trip)\n"
    "  list                 every rendezvous with its counters (no secrets needed; a site\n"
    "                       rdzvd shows only the totals)\n"
    "  show [ID]            one rendezvous: state, current round and members (needs the token)\n"
    "  kv [ID] [--round N]  keys and values of round N's space (default 0, the\n"
    "                       rendezvous-wide space; needs the token)\n"
    "ID may also be given with --id, else $RDZV_ID; with ping, --id checks that the daemon\n"
    "serves it and holds its token (so it needs the token). Inside an llm-rdzv job step no\n"
    "option is needed.\n"
    "defaults: --endpoint $RDZV_ENDPOINT (and the step's other candidate ports in\n"
    "          $LLM_RDZV_PORT_RANGE, $LLM_RDZV_PORT_PROBES of them), --token $RDZV_TOKEN,\n"
    "          --timeout 5\n"
    "The token never leaves rdzvctl: rdzvd first proves it holds it (exit status 4 when\n"
    "the peer cannot: a wrong token, or not the rendezvous daemon).\n"
    "exit status: 0 ok, 1 other error, 2 usage, 3 rdzvd unreachable, 4 permission denied,\n"
    "             5 not found\n";

enum class Command { ping, list, show, kv };

struct CtlArgs {
  Command command = Command::ping;
  std::string endpoint;
  // Inside a step (endpoint from RDZV_ENDPOINT, LLM_RDZV_PORT_RANGE set): the step's candidate
  // ports, walked as the ranks walk them, since rdzvd may have moved past a busy base port.
  std::optional<PortRange> port_range;
  std::uint32_t port_probes = kDefaultPortProbes;
  std::string rdzv_id;
  std::string token;
  std::uint64_t round = 0;
  std::chrono::seconds timeout{5};
  bool help = false;
};

// Bad usage: the message says what is wrong.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads argv and the RDZV_ENDPOINT / RDZV_TOKEN defaults; reads --token-file. Throws UsageError.
CtlArgs parse_ctl_args(int argc, char** argv);

}  // namespace llmrdzv::ctl
