// A rank's share of its node: which visible GPU it binds (per-task and per-node GPU visibility)
// and how many torch threads it takes when ranks share the cores.
#include "llmrdzv/dist/rank_resources.hpp"

#include <sched.h>

#include <catch2/catch.hpp>
#include <stdexcept>

using namespace llmrdzv::dist;

TEST_CASE("a rank binds the visible GPU its local rank picks", "[dist][devices]") {
  // One GPU per local rank visible to every task (no Slurm GPU binding): torchrun's cuda:LOCAL_RANK.
  for (int local_rank = 0; local_rank < 4; ++local_rank) CHECK(cuda_device_for(local_rank, 4) == local_rank);
  // --gpus-per-task=1 (or a per-task CUDA_VISIBLE_DEVICES): each task sees only its own GPU as 0.
  for (int local_rank = 0; local_rank < 4; ++local_rank) CHECK(cuda_device_for(local_rank, 1) == 0);
  // --gpus-per-task=2 with 4 tasks: each task picks within its own pair.
  CHECK(cuda_device_for(2, 2) == 0);
  CHECK(cuda_device_for(3, 2) == 1);
  CHECK(cuda_device_for(-1, 2) == 0);  // no local rank known
  CHECK_THROWS_AS(cuda_device_for(0, 0), std::invalid_argument);
}

TEST_CASE("ranks sharing a node share its cores unless Slurm bound them", "[dist][threads]") {
  CHECK(threads_per_rank(8, 8, 4) == 2);   // unbound: a quarter of the node each
  CHECK(threads_per_rank(8, 8, 1) == 8);
  CHECK(threads_per_rank(2, 2, 4) == 1);   // more ranks than cores: at least one thread
  CHECK(threads_per_rank(3, 8, 4) == 3);   // bound to 3 cores of its own: all of them
  CHECK(threads_per_rank(1, 8, 4) == 1);
}

TEST_CASE("available_cpus follows the affinity mask", "[dist][threads]") {
  cpu_set_t saved;
  REQUIRE(sched_getaffinity(0, sizeof saved, &saved) == 0);
  CHECK(available_cpus() == CPU_COUNT(&saved));
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  CHECK(available_cpus() == 1);
  REQUIRE(sched_setaffinity(0, sizeof saved, &saved) == 0);
  CHECK(node_cpus() >= available_cpus());
}
