// Rank assignment on its own: permutations of requested ranks, stable fallback order, topology.
#include <catch2/catch.hpp>

#include "llmrdzv/core/rank_assignment.hpp"

using namespace llmrdzv::core;

TEST_CASE("a gap or duplicate in requested ranks falls back to the stable order", "[ranks]") {
  const std::vector<Candidate> gap{{"a", 0, "h2", -1}, {"b", 2, "h1", -1}};
  const auto layout = assign_ranks(gap);
  CHECK(layout.placements[0].rank == 1);  // h1 sorts before h2
  CHECK(layout.placements[1].rank == 0);
  CHECK(layout.master_host == "h1");
  const std::vector<Candidate> dup{{"a", 1, "h", 1}, {"b", 1, "h", 0}};
  const auto d = assign_ranks(dup);
  CHECK(d.placements[0].rank == 1);  // local-rank hint orders within a host
  CHECK(d.placements[1].rank == 0);
}

TEST_CASE("unknown local-rank hints sort after known ones, then by participant id", "[ranks]") {
  const std::vector<Candidate> c{{"z", -1, "h", -1}, {"y", -1, "h", 3}, {"a", -1, "h", -1}};
  const auto layout = assign_ranks(c);
  CHECK(layout.placements[1].rank == 0);
  CHECK(layout.placements[2].rank == 1);
  CHECK(layout.placements[0].rank == 2);
}

TEST_CASE("node ranks follow each host's lowest rank, cyclic layouts keep local ranks by rank", "[ranks]") {
  // SLURM cyclic distribution: ranks alternate between hosts.
  std::vector<Candidate> c;
  for (int r = 0; r < 6; ++r) c.push_back({"t" + std::to_string(r), r, r % 2 ? "hb" : "ha", -1});
  const auto layout = assign_ranks(c);
  CHECK(layout.num_nodes == 2);
  for (int r = 0; r < 6; ++r) {
    CHECK(layout.placements[r].rank == r);
    CHECK(layout.placements[r].node_rank == r % 2);
    CHECK(layout.placements[r].local_rank == r / 2);
    CHECK(layout.placements[r].local_world_size == 3);
  }
}
