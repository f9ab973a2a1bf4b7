// Ranks and topology of a completed round: who is rank r, and each member's local rank, local
// world size and node rank, torchrun's meanings.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llmrdzv::core {

struct Candidate {
  std::string participant_id;
  std::int32_t requested_rank = -1;
  std::string host;
  std::int32_t local_rank = -1;
};

struct Placement {
  std::int32_t rank = 0;
  std::int32_t local_rank = 0;
  std::int32_t local_world_size = 0;
  std::int32_t node_rank = 0;
};

struct RoundLayout {
  std::vector<Placement> placements;  // parallel to the candidates passed in
  std::int32_t num_nodes = 0;
  std::string master_host;
};

// Requested ranks are honoured when they are exactly 0..N-1; otherwise ranks follow a stable
// order (host, then local rank hint with unknown last, then participant id). Hosts are numbered
// by their lowest rank; local ranks count up by rank within a host. O(N log N).
RoundLayout assign_ranks(const std::vector<Candidate>& candidates);

}  // namespace llmrdzv::core
