// ZeRO-3's host memory plan (sharded_host_memory.hpp): the bytes per parameter and per rank, the
// units in flight, the node's ranks together, the refusal's wording and the log's line; what a
// memory cgroup (v2, or v1's memory controller) still allows, from a cgroup tree made here.
#include "llmrdzv/train/sharded_host_memory.hpp"

#include <catch2/catch.hpp>

#include <fstream>

#include "scratch_dir.hpp"

using namespace llmrdzv::train;
using llmrdzv::testing::ScratchDir;

TEST_CASE("ZeRO-3's host memory: 16 or 18 bytes per parameter over the ranks, the units in flight, times the node's ranks",
          "[sharded][memory]") {
  const ShardedModelSize size{1e9, 1e8, 5e7};
  const ShardedHostNeed bf16 = sharded_host_need(size, ComputeDtype::bf16, 8, 4);
  CHECK(bf16.bytes_per_parameter == 18);  // bf16 shard, fp32 gradient shard, two fp32 moments, fp32 master
  CHECK(bf16.state_bytes == Approx(18e9 / 8));
  // unit 0 and two blocks gathered in bf16, the gradient buffers of unit 0 and two blocks (one
  // filling, one being reduced) in fp32, unit 0's gradients as autograd makes them in bf16
  CHECK(bf16.in_flight_bytes == Approx((1e8 + 2 * 5e7) * 2 + (1e8 + 2 * 5e7) * 4 + 1e8 * 2));
  CHECK(bf16.node_bytes == Approx(4 * (18e9 / 8 + bf16.in_flight_bytes)));

  const ShardedHostNeed fp32 = sharded_host_need(size, ComputeDtype::fp32, 2, 1);
  CHECK(fp32.bytes_per_parameter == 16);  // no master copy
  CHECK(fp32.state_bytes == Approx(8e9));
  CHECK(fp32.node_bytes == Approx(8e9 + (1e8 + 1e8) * 4 + (1e8 + 1e8) * 4 + 1e8 * 4));

  const ShardedHostNeed largest_block = sharded_host_need({1e9, 1e7, 2e8}, ComputeDtype::fp16, 1, 1);
  CHECK(largest_block.in_flight_bytes == Approx((1e7 + 4e8) * 2 + (1e7 + 4e8) * 4 + 1e7 * 2));  // blocks larger than unit 0

  CHECK_FALSE(sharded_host_shortfall(bf16, bf16.node_bytes));
  const auto refused = sharded_host_shortfall(bf16, bf16.node_bytes - 1);
  REQUIRE(refused);
  CHECK_THAT(*refused, Catch::Contains("--shard_parameters: this model's 1 billion parameters need 13.6 GiB of host "
                                       "memory on this node (4 ranks x 3.4 GiB: 18 bytes per parameter over 8 ranks "
                                       "for the bf16 shards, their fp32 gradients and AdamW state, plus 1.3 GiB of units "
                                       "in flight), and it has 13.6 GiB available"));
  CHECK_THAT(*refused, Catch::Contains("run on more nodes or fewer ranks per node"));

  CHECK_THAT(describe_sharded_host_need(fp32, 64.0 * (1 << 30)),
             Catch::Contains("each rank holds about 9.31 GiB of host memory before activations (16 bytes per parameter "
                             "over 2 ranks for the fp32 shards") &&
                 Catch::Contains("plus 1.86 GiB of units in flight); this node's 1 rank: 9.31 GiB of the 64.0 GiB available"));
  CHECK_THAT(describe_sharded_host_need(sharded_host_need({1e6, 1e5, 1e5}, ComputeDtype::fp32, 1, 2), 64.0 * (1 << 30)),
             Catch::Contains("each rank holds about 17.9 MiB") && Catch::Contains("over 1 rank for") &&
                 Catch::Contains("this node's 2 ranks: 35.9 MiB of the 64.0 GiB available"));
}

TEST_CASE("a memory cgroup caps the host memory available: the tightest of its and its ancestors' limits less their use, inactive file pages not counted",
          "[sharded][memory]") {
  ScratchDir root("cgroups");
  const auto put = [&](const std::string& file, const std::string& text) { std::ofstream(root.file(file)) << text; };
  std::filesystem::create_directories(root.file("job/step"));
  // cgroup v2: the step may use 6 GB and uses 5 GB, 1 GB of it inactive file pages; its job 8 GB, 7 GB used.
  put("job/step/memory.max", "6000000000\n");
  put("job/step/memory.current", "5000000000\n");
  put("job/step/memory.stat", "anon 4000000000\ninactive_file 1000000000\nactive_file 0\n");
  put("job/memory.max", "8000000000\n");
  put("job/memory.current", "7000000000\n");
  put("memory.max", "max\n");  // the root: never read
  CHECK(cgroup_memory_headroom(root.path(), "0::/job/step\n") == Approx(1e9));  // the job's 1 GB left
  put("job/memory.max", "max\n");
  CHECK(cgroup_memory_headroom(root.path(), "0::/job/step\n") == Approx(2e9));  // 6 - (5 - 1)
  put("job/step/memory.max", "max\n");
  CHECK_FALSE(cgroup_memory_headroom(root.path(), "0::/job/step\n"));  // no limit anywhere
  CHECK_FALSE(cgroup_memory_headroom(root.path(), "0::/\n"));

  // cgroup v1: the memory controller's own hierarchy; "unlimited" is near 2^63.
  std::filesystem::create_directories(root.file("memory/slurm/job_7"));
  put("memory/slurm/job_7/memory.limit_in_bytes", "4000000000\n");
  put("memory/slurm/job_7/memory.usage_in_bytes", "3500000000\n");
  put("memory/slurm/job_7/memory.stat", "cache 600000000\ntotal_inactive_file 500000000\n");
  put("memory/slurm/memory.limit_in_bytes", "9223372036854771712\n");
  put("memory/slurm/memory.usage_in_bytes", "9000000000\n");
  CHECK(cgroup_memory_headroom(root.path(), "12:pids:/slurm\n4:memory:/slurm/job_7\n0::/\n") == Approx(1e9));
  CHECK(cgroup_memory_headroom(root.path(), "4:cpu,memory:/slurm/job_7\n") == Approx(1e9));
  CHECK_FALSE(cgroup_memory_headroom(root.path(), "4:cpu:/slurm/job_7\n"));
  CHECK_FALSE(cgroup_memory_headroom(root.path(), "garbage"));
}

TEST_CASE("the host memory available is read from /proc/meminfo and this process's cgroups", "[sharded][memory]") {
  const auto available = available_host_memory();
  REQUIRE(available);
  CHECK(*available > 64.0 * (1 << 20));
}
