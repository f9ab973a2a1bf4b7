// ProcessGroupGloo rendezvoused through RdzvStore across real processes: all-reduce, broadcast
// and all-gather give the right values for 2 and 4 ranks.
#include <catch2/catch.hpp>

#include <set>
#include <sstream>

#include "worker_launch.hpp"

using namespace llmrdzv::testing;

TEST_CASE("Gloo collectives through the rdzvd store, 2 and 4 ranks") {
  for (int world : {2, 4}) {
    const auto run = run_workers(world, {"--mode", "collectives"});
    require_success(run);
    const auto lines = lines_with(run, "rank ");
    REQUIRE(lines.size() == std::size_t(world));
    std::set<int> ranks;
    for (const auto& line : lines) {
      std::istringstream in(line);
      std::string word;
      int rank = -1, w = 0;
      float sum = 0, bcast = 0;
      in >> word >> rank >> word >> w >> word >> sum >> word >> bcast >> word;
      ranks.insert(rank);
      CHECK(w == world);
      CHECK(sum == float(world * (world + 1) / 2));  // sum of rank + 1
      CHECK(bcast == 100.f);                         // rank 0's value
      for (int r = 0; r < world; ++r) {
        float v = -1;
        in >> v;
        CHECK(v == float(r));
      }
    }
    CHECK(ranks.size() == std::size_t(world));
  }
}
