// The text rdzvd's /metrics serves: the core's counters and gauges, the server's RPC counters and
// the process' own figures, as Prometheus families (see docs/admin-guide.md for the list).
// Rendezvous ids appear only when the admin asks for them (metrics_expose_ids).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "llmrdzv/core/core_metrics.hpp"
#include "rpc_metrics.hpp"

namespace llmrdzv::server {

struct PageInfo {
  std::string version;
  std::string mode;  // step | site
  bool expose_ids = false;
  double start_time_seconds = 0;  // the process' start, Unix time
  std::optional<std::uint64_t> resident_bytes;
  std::uint64_t calls_refused_unauthenticated = 0;  // by the call gate, before their body was read
  std::uint64_t connections_evicted = 0;  // unauthenticated, past max_unauthenticated_per_peer
};

std::string render_metrics_page(const core::CoreMetrics& core, const RpcMetrics::Snapshot& rpcs, const PageInfo& info);

// This process' resident set from /proc/self/statm; nullopt where it cannot be read.
std::optional<std::uint64_t> resident_memory_bytes();

}  // namespace llmrdzv::server
