// How a rendezvous client finds and identifies itself to rdzvd: endpoint, rendezvous id and
// token, the participant's identity and wishes (rank, world size), and every time limit.
// Options::from_env() reads the env contract the SPANK plugin sets in each task.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "llmrdzv/common/port_probe.hpp"
#include "llmrdzv/common/text_values.hpp"

namespace llmrdzv::client {

struct Options {
  // "host:port" (or "[v6addr]:port") of rdzvd.
  std::string endpoint;
  std::string rdzv_id;
  std::string token;
  // Stable identity across retries and rounds. Empty: "<host>:<pid>".
  std::string participant_id;
  // Host name reported to rdzvd (local ranks and node ranks are grouped by it). Empty: gethostname.
  std::string host;

  // With a port range, the endpoint's port is the base of the step-port probe sequence: the client
  // tries probe_port(range, base, k) for k = 0..port_probes-1, skipping peers that are not rdzvd or
  // that serve another rendezvous, and cycles with backoff while nothing answers.
  std::optional<PortRange> port_range;
  std::uint32_t port_probes = kDefaultPortProbes;

  std::int32_t requested_rank = -1;  // SLURM_PROCID / RANK, or -1
  std::int32_t local_rank = -1;      // hint for stable ordering, or -1
  std::int32_t min_world = 1;        // participants; min == max: fixed size
  std::int32_t max_world = 1;
  std::chrono::milliseconds last_call{0};  // elastic rounds; 0 = daemon default

  // Giving up on finding rdzvd (all candidates refused or foreign) after this long.
  std::chrono::milliseconds connect_timeout{30'000};
  // Deadline of one non-blocking call; blocking calls get their own timeout on top of it.
  std::chrono::milliseconds call_deadline{10'000};
  // How long Join may wait for the round to complete (LLM_RDZV_TIMEOUT).
  std::chrono::milliseconds join_timeout{300'000};
  // Idempotent calls that fail with UNAVAILABLE are retried with exponential backoff and jitter
  // for at most this long, so a daemon that went away gives a clear error promptly.
  std::chrono::milliseconds retry_budget{2'000};
  std::chrono::milliseconds backoff_initial{20};
  std::chrono::milliseconds backoff_max{1'000};
  // How long one port-probe call may take before the candidate counts as "not an rdzvd". For a
  // candidate that speaks gRPC but answered too slowly it doubles each round (up to 16x), so a
  // daemon busy with thousands of connecting ranks still gets through.
  std::chrono::milliseconds probe_deadline{1'000};

  // Reads RDZV_ENDPOINT, RDZV_ID, RDZV_TOKEN (required); LLM_RDZV_PORT_RANGE ("LO-HI", enables
  // probing) and LLM_RDZV_PORT_PROBES (candidates, 1..64, as rdzvd's --port-probes); SLURM_PROCID, else RANK (requested rank); LOCAL_RANK; LLM_RDZV_MIN_WORLD and
  // LLM_RDZV_MAX_WORLD (both or neither; elastic size in participants), else WORLD_SIZE (fixed,
  // then required); LLM_RDZV_TIMEOUT (join timeout, whole seconds > 0). A missing or malformed
  // variable throws RdzvError(invalid_argument) naming it.
  static Options from_env();

  // Throws RdzvError(invalid_argument) naming the first bad field (endpoint syntax, sizes, ...).
  void validate() const;
};

// Splits "host:port" / "[v6]:port". Throws RdzvError(invalid_argument) mentioning `what`.
HostPort parse_endpoint(const std::string& endpoint, const std::string& what = "endpoint");

}  // namespace llmrdzv::client
