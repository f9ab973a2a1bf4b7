// The sampler: deterministic permutations, rank slices whose union is the 1-rank global batch,
// epochs, checkpoint state (v2 offsets, v1 still read) and its validation, resuming at another
// global batch from the exact block offset, and evaluation shards.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <set>

#include "llmrdzv/data/corpus.hpp"
#include "llmrdzv/data/sampler.hpp"

using namespace llmrdzv::data;

TEST_CASE("shuffled_indices is a permutation fixed by seed and epoch") {
  const auto a = shuffled_indices(1000, 42, 0);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  std::vector<std::uint64_t> iota(1000);
  std::iota(iota.begin(), iota.end(), 0);
  CHECK(sorted == iota);
  CHECK(a != iota);
  CHECK(shuffled_indices(1000, 42, 0) == a);
  CHECK(shuffled_indices(1000, 42, 1) != a);
  CHECK(shuffled_indices(1000, 43, 0) != a);
  CHECK(shuffled_indices(0, 1, 0).empty());
  CHECK(shuffled_indices(1, 1, 0) == std::vector<std::uint64_t>{0});
  // Pinned (computed by an independent Python SplitMix64 + Fisher-Yates): checkpoints store (seed,
  // epoch, offset), so this order must never change between builds.
  CHECK(shuffled_indices(8, 42, 0) == std::vector<std::uint64_t>{3, 6, 0, 1, 2, 5, 7, 4});
}

TEST_CASE("every position of a permutation takes every value about equally often") {
  constexpr std::uint64_t n = 5;
  std::vector<std::vector<int>> counts(n, std::vector<int>(n));
  for (std::uint64_t seed = 0; seed < 5000; ++seed) {
    const auto order = shuffled_indices(n, seed, 0);
    for (std::uint64_t i = 0; i < n; ++i) ++counts[i][order[i]];
  }
  for (const auto& row : counts) {
    for (const int c : row) CHECK((c > 850 && c < 1150));  // expected 1000
  }
}

TEST_CASE("the ranks' micro-batches of a step are exactly the 1-rank run's global batch") {
  const std::uint64_t blocks = 103;
  BlockSampler one(blocks, 7, {8, 1, 1}, 0);
  std::vector<BlockSampler> ranks;
  for (std::uint64_t r = 0; r < 4; ++r) ranks.emplace_back(blocks, 7, BatchShape{1, 4, 2}, r);
  CHECK(one.steps_per_epoch() == 12);
  CHECK(ranks[0].steps_per_epoch() == 12);

  for (int step = 0; step < 30; ++step) {  // across an epoch boundary
    const auto global = one.next_step();
    REQUIRE(global.size() == 1);
    std::vector<std::uint64_t> joined;
    for (auto& rank : ranks) {
      const auto micro = rank.next_step();
      REQUIRE(micro.size() == 2);
      for (const auto& m : micro) {
        REQUIRE(m.size() == 1);
        joined.insert(joined.end(), m.begin(), m.end());
      }
    }
    REQUIRE(joined == global[0]);
    REQUIRE(std::set<std::uint64_t>(joined.begin(), joined.end()).size() == 8);
  }
  CHECK(one.position() == SamplerPosition{2, 6, 48});
  CHECK(ranks[3].position() == SamplerPosition{2, 6, 48});
}

TEST_CASE("an epoch visits each block at most once and the next epoch reshuffles") {
  BlockSampler sampler(50, 3, {4, 1, 2}, 0);
  REQUIRE(sampler.steps_per_epoch() == 6);
  std::set<std::uint64_t> seen;
  std::vector<std::uint64_t> first_epoch;
  for (int s = 0; s < 6; ++s) {
    for (const auto& m : sampler.next_step()) {
      for (const auto b : m) {
        CHECK(b < 50);
        CHECK(seen.insert(b).second);
        first_epoch.push_back(b);
      }
    }
  }
  CHECK(seen.size() == 48);  // 2 blocks of the partial last batch dropped
  CHECK(sampler.position() == SamplerPosition{1, 0, 0});
  const auto next = sampler.next_step();
  CHECK(std::vector<std::uint64_t>(first_epoch.begin(), first_epoch.begin() + 4) != next[0]);
}

TEST_CASE("without shuffle blocks come in order") {
  BlockSampler sampler(10, 1, {2, 2, 1}, 1, false);
  CHECK(sampler.next_step() == std::vector<std::vector<std::uint64_t>>{{2, 3}});
  CHECK(sampler.next_step() == std::vector<std::vector<std::uint64_t>>{{6, 7}});
}

TEST_CASE("sampler state restores the position and refuses another corpus, seed or shuffle") {
  BlockSampler sampler(100, 9, {2, 2, 2}, 1);
  for (int i = 0; i < 15; ++i) sampler.next_step();
  const std::string state = sampler.state();
  CHECK(state == "llmrdzv-sampler v2 seed=9 blocks=100 shuffle=1 epoch=1 offset=24");
  CHECK(sampler.position() == SamplerPosition{1, 3, 24});

  BlockSampler resumed(100, 9, {2, 2, 2}, 1);
  resumed.restore(state);
  CHECK(resumed.position() == sampler.position());
  CHECK(resumed.next_step() == sampler.next_step());

  BlockSampler other_world(100, 9, {4, 1, 2}, 0);  // same global batch, other world size
  CHECK_NOTHROW(other_world.restore(state));

  CHECK_THROWS_WITH(BlockSampler(100, 10, {2, 2, 2}, 0).restore(state), Catch::Contains("seed=9") && Catch::Contains("this run has 10"));
  CHECK_THROWS_WITH(BlockSampler(99, 9, {2, 2, 2}, 0).restore(state), Catch::Contains("blocks=100"));
  CHECK_THROWS_WITH(BlockSampler(100, 9, {2, 2, 2}, 0, false).restore(state), Catch::Contains("shuffle=1"));
  CHECK_THROWS_WITH(sampler.restore("garbage"), Catch::Contains("malformed") && Catch::Contains("llmrdzv-sampler v2"));
  CHECK_THROWS_WITH(sampler.restore("llmrdzv-sampler v2 seed=9 blocks=100 shuffle=1 epoch=1"),
                    Catch::Contains("'offset' is missing"));
  CHECK_THROWS_WITH(sampler.restore(state + " extra=1"), Catch::Contains("unknown key 'extra'"));
  CHECK_THROWS_WITH(sampler.restore("llmrdzv-sampler v2 seed=9 blocks=100 shuffle=1 epoch=-1 offset=0"),
                    Catch::Contains("'epoch' is not an unsigned integer"));
  CHECK_THROWS_WITH(sampler.restore("llmrdzv-sampler v2 seed=9 blocks=100 shuffle=1 epoch=0 offset=100"),
                    Catch::Contains("offset is past the epoch"));
  // v1 has no global_batch any more; v2 has no step.
  CHECK_THROWS_WITH(sampler.restore("llmrdzv-sampler v2 seed=9 blocks=100 global_batch=8 shuffle=1 epoch=0 offset=0"),
                    Catch::Contains("unknown key 'global_batch'"));
}

TEST_CASE("v1 sampler states of older checkpoints resume at step x global batch, with any batch") {
  const std::string v1 = "llmrdzv-sampler v1 seed=9 blocks=100 global_batch=8 shuffle=1 epoch=1 step=3";
  BlockSampler same(100, 9, {2, 2, 2}, 1);
  same.restore(v1);
  CHECK(same.position() == SamplerPosition{1, 3, 24});
  BlockSampler reference(100, 9, {2, 2, 2}, 1);
  for (int i = 0; i < 15; ++i) reference.next_step();
  CHECK(same.next_step() == reference.next_step());

  BlockSampler smaller(100, 9, {2, 3, 1}, 0);  // another global batch (6): the same offset
  smaller.restore(v1);
  CHECK(smaller.position() == SamplerPosition{1, 4, 24});

  CHECK_THROWS_WITH(same.restore("llmrdzv-sampler v1 seed=9 blocks=100 global_batch=8 shuffle=1 epoch=1"),
                    Catch::Contains("'step' is missing"));
  CHECK_THROWS_WITH(same.restore("llmrdzv-sampler v1 seed=9 blocks=100 global_batch=8 shuffle=1 epoch=0 step=12"),
                    Catch::Contains("past the epoch"));
  CHECK_THROWS_WITH(same.restore("llmrdzv-sampler v1 seed=8 blocks=100 global_batch=8 shuffle=1 epoch=0 step=1"),
                    Catch::Contains("seed=8"));
}

TEST_CASE("a resume at another global batch continues at the exact block offset") {
  // 3 ranks x 2 = 6 blocks a step for 5 steps, then the run continues with 2 ranks (4 a step):
  // the blocks it takes are the next ones of the same permutation, no block skipped or repeated,
  // and the epoch ends when fewer than 4 blocks are left.
  const std::uint64_t blocks = 50;
  std::vector<BlockSampler> three;
  for (std::uint64_t r = 0; r < 3; ++r) three.emplace_back(blocks, 5, BatchShape{2, 3, 1}, r);
  std::vector<std::uint64_t> consumed;
  for (int step = 0; step < 5; ++step) {
    for (auto& rank : three) {
      for (const auto& micro : rank.next_step()) consumed.insert(consumed.end(), micro.begin(), micro.end());
    }
  }
  const std::string state = three[0].state();
  CHECK(state == "llmrdzv-sampler v2 seed=5 blocks=50 shuffle=1 epoch=0 offset=30");
  for (const auto& rank : three) CHECK(rank.state() == state);

  std::vector<BlockSampler> two;
  for (std::uint64_t r = 0; r < 2; ++r) {
    two.emplace_back(blocks, 5, BatchShape{1, 2, 2}, r);  // global batch 4, with accumulation
    two.back().restore(state);
    CHECK(two.back().position() == SamplerPosition{0, 7, 30});  // 30 / 4 = 7 whole batches
  }
  for (int step = 0; step < 5; ++step) {  // offsets 30, 34, 38, 42, 46: the last one ends the epoch
    std::vector<std::uint64_t> global;
    for (auto& rank : two) {
      for (const auto& micro : rank.next_step()) global.insert(global.end(), micro.begin(), micro.end());
    }
    REQUIRE(global.size() == 4);
    consumed.insert(consumed.end(), global.begin(), global.end());
  }
  CHECK(two[0].position() == SamplerPosition{1, 0, 0});  // 50 - 50 = 0 left: next epoch
  const auto epoch0 = shuffled_indices(blocks, 5, 0);
  CHECK(consumed == epoch0);  // the whole permutation in order: nothing skipped, nothing twice

  // Fewer than one new global batch left at the saved offset: the resume starts the next epoch.
  BlockSampler big(blocks, 5, BatchShape{8, 3, 1}, 0);  // 24 a step; 50 - 30 = 20 left
  big.restore(state);
  CHECK(big.position() == SamplerPosition{1, 0, 0});
  const auto epoch1 = shuffled_indices(blocks, 5, 1);
  CHECK(big.next_step()[0] == std::vector<std::uint64_t>(epoch1.begin(), epoch1.begin() + 8));

  // global_batch() at an offset without a whole batch left is an error, not a short batch.
  CHECK_THROWS_WITH(big.global_batch(SamplerPosition{0, 0, 30}), Catch::Contains("fewer than one global batch"));
}

TEST_CASE("impossible sampler shapes are clear errors") {
  CHECK_THROWS_WITH(BlockSampler(10, 1, {0, 1, 1}, 0), Catch::Contains("no zero"));
  CHECK_THROWS_WITH(BlockSampler(10, 1, {1, 2, 1}, 2), Catch::Contains("rank 2 is outside a world of 2"));
  CHECK_THROWS_WITH(BlockSampler(7, 1, {4, 2, 1}, 0),
                    Catch::Contains("7 blocks, fewer than one global batch of 8"));
}

TEST_CASE("evaluation shards cover every block once") {
  for (const std::uint64_t world : {1, 2, 3, 7}) {
    std::uint64_t next = 0;
    for (std::uint64_t r = 0; r < world; ++r) {
      const BlockRange range = eval_shard(20, r, world);
      CHECK(range.begin == next);
      CHECK(range.end >= range.begin);
      next = range.end;
    }
    CHECK(next == 20);
  }
  CHECK_THROWS(eval_shard(20, 3, 3));
}
