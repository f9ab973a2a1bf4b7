// Rank assignment for a completed round (see rank_assignment.hpp).
#include "llmrdzv/core/rank_assignment.hpp"

#include <algorithm>
#include <numeric>
#include <tuple>
#include <unordered_map>

namespace llmrdzv::core {
namespace {

bool requested_ranks_are_permutation(const std::vector<Candidate>& candidates) {
  std::vector<bool> taken(candidates.size(), false);
  for (const auto& c : candidates) {
    if (c.requested_rank < 0 || std::size_t(c.requested_rank) >= candidates.size() || taken[c.requested_rank])
      return false;
    taken[c.requested_rank] = true;
  }
  return true;
}

}  // namespace

RoundLayout assign_ranks(const std::vector<Candidate>& candidates) {
  const std::size_t n = candidates.size();
  // by_rank[r] = index of the candidate that gets rank r
  std::vector<std::size_t> by_rank(n);
  if (requested_ranks_are_permutation(candidates)) {
    for (std::size_t i = 0; i < n; ++i) by_rank[candidates[i].requested_rank] = i;
  } else {
    std::iota(by_rank.begin(), by_rank.end(), 0);
    std::sort(by_rank.begin(), by_rank.end(), [&](std::size_t a, std::size_t b) {
      const auto& x = candidates[a];
      const auto& y = candidates[b];
      const auto hint = [](std::int32_t local) { return local < 0 ? INT32_MAX : local; };
      return std::forward_as_tuple(x.host, hint(x.local_rank), x.participant_id) <
             std::forward_as_tuple(y.host, hint(y.local_rank), y.participant_id);
    });
  }
  RoundLayout layout;
  layout.placements.resize(n);
  struct HostCount {
    std::int32_t node_rank;
    std::int32_t members;
  };
  std::unordered_map<std::string, HostCount> hosts;
  for (std::size_t rank = 0; rank < n; ++rank) {
    const std::size_t i = by_rank[rank];
    auto [it, inserted] = hosts.try_emplace(candidates[i].host, HostCount{std::int32_t(hosts.size()), 0});
    Placement& p = layout.placements[i];
    p.rank = std::int32_t(rank);
    p.node_rank = it->second.node_rank;
    p.local_rank = it->second.members++;
  }
  for (std::size_t i = 0; i < n; ++i)
    layout.placements[i].local_world_size = hosts.at(candidates[i].host).members;
  layout.num_nodes = std::int32_t(hosts.size());
  if (n > 0) layout.master_host = candidates[by_rank[0]].host;
  return layout;
}

}  // namespace llmrdzv::core
