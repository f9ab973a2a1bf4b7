// ZeRO-3's host memory plan (sharded_host_memory.hpp): the bytes per parameter and per rank, the
// units in flight, the node's ranks together, the refusal's wording and the log's line.
#include "llmrdzv/train/sharded_host_memory.hpp"

#include <catch2/catch.hpp>

using namespace llmrdzv::train;

TEST_CASE("ZeRO-3's host memory: 16 or 18 bytes per parameter over the ranks, the units in flight, times the node's ranks",
          "[sharded][memory]") {
  const ShardedModelSize size{1e9, 1e8, 5e7};
  const ShardedHostNeed bf16 = sharded_host_need(size, ComputeDtype::bf16, 8, 4);
  CHECK(bf16.bytes_per_parameter == 18);  // bf16 shard, fp32 gradient shard, two fp32 moments, fp32 master
  CHECK(bf16.state_bytes == Approx(18e9 / 8));
  // unit 0 and two blocks gathered in bf16, and unit 0's gradients in bf16 with their fp32 copy
  CHECK(bf16.in_flight_bytes == Approx((1e8 + 2 * 5e7) * 2 + 1e8 * 6));
  CHECK(bf16.node_bytes == Approx(4 * (18e9 / 8 + 1e9)));

  const ShardedHostNeed fp32 = sharded_host_need(size, ComputeDtype::fp32, 2, 1);
  CHECK(fp32.bytes_per_parameter == 16);  // no master copy
  CHECK(fp32.state_bytes == Approx(8e9));
  CHECK(fp32.node_bytes == Approx(8e9 + (1e8 + 1e8) * 4 + 1e8 * 8));

  const ShardedHostNeed largest_block = sharded_host_need({1e9, 1e7, 2e8}, ComputeDtype::fp16, 1, 1);
  CHECK(largest_block.in_flight_bytes == Approx((1e7 + 4e8) * 2 + 2e8 * 6));  // a block's gradients the largest

  CHECK_FALSE(sharded_host_shortfall(bf16, size, ComputeDtype::bf16, 8, 4, bf16.node_bytes));
  const auto refused = sharded_host_shortfall(bf16, size, ComputeDtype::bf16, 8, 4, bf16.node_bytes - 1);
  REQUIRE(refused);
  CHECK_THAT(*refused, Catch::Contains("--shard_parameters: this model's 1 billion parameters need 12.1 GiB of host "
                                       "memory on this node (4 ranks x 3.0 GiB: 18 bytes per parameter over 8 ranks "
                                       "for the bf16 shards, their fp32 gradients and AdamW state, plus 0.9 GiB of units "
                                       "in flight), and it has 12.1 GiB available"));
  CHECK_THAT(*refused, Catch::Contains("run on more nodes or fewer ranks per node"));

  CHECK_THAT(describe_sharded_host_need(fp32, ComputeDtype::fp32, 2, 1, 64.0 * (1 << 30)),
             Catch::Contains("each rank holds about 8.94 GiB of host memory before activations (16 bytes per parameter "
                             "over 2 ranks for the fp32 shards") &&
                 Catch::Contains("plus 1.49 GiB of units in flight); this node's 1 rank 8.94 GiB of 64.0 GiB available"));
  CHECK_THAT(describe_sharded_host_need(sharded_host_need({1e6, 1e5, 1e5}, ComputeDtype::fp32, 2, 2), ComputeDtype::fp32, 2, 2,
                                        64.0 * (1 << 30)),
             Catch::Contains("each rank holds about 9.5 MiB") && Catch::Contains("this node's 2 ranks 19.1 MiB of 64.0 GiB"));
}

TEST_CASE("the host memory available is read from /proc/meminfo", "[sharded][memory]") {
  const auto available = available_host_memory();
  REQUIRE(available);
  CHECK(*available > 64.0 * (1 << 20));
}
