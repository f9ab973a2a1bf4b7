// --streaming: the same tokens and blocks as the token cache, rank slices whose union is the
// 1-rank step, epoch restarts, and resumable state.
#include <catch2/catch.hpp>

#include "corpus_text.hpp"
#include "llmrdzv/data/streaming.hpp"
#include "llmrdzv/data/token_cache.hpp"
#include "scratch_dir.hpp"

using namespace llmrdzv::data;
using llmrdzv::test::corpus_text;
using llmrdzv::testing::ScratchDir;
using llmrdzv::tokenizer::Tokenizer;

namespace {

struct Corpus {
  ScratchDir dir{"stream"};
  SourceList sources;
  Corpus() {
    dir.write("docs/a.txt", corpus_text(11, 150));
    dir.write("docs/b.txt", corpus_text(12, 90));
    sources = list_sources(dir / "docs");
  }
};

using Step = std::vector<std::vector<std::int64_t>>;

}  // namespace

TEST_CASE("streamed blocks are the token cache's blocks in corpus order") {
  Corpus corpus;
  const Tokenizer tokenizer = Tokenizer::bytes();
  const TokenStore store = TokenStore::open_or_build(corpus.sources, {}, tokenizer, {corpus.dir / "cache"});
  const Blocks blocks(store, 32);
  StreamingBlocks stream(corpus.sources, {}, tokenizer, 32, {3, 1, 1}, 0);
  Step step;
  std::uint64_t steps = 0;
  std::vector<std::int64_t> block(32);
  while (stream.next_step(step)) {
    REQUIRE(step.size() == 1);
    REQUIRE(step[0].size() == 3 * 32);
    for (std::uint64_t b = 0; b < 3; ++b) {
      blocks.read(steps * 3 + b, block);
      REQUIRE(std::equal(block.begin(), block.end(), step[0].begin() + static_cast<std::ptrdiff_t>(b * 32)));
    }
    ++steps;
  }
  CHECK(steps == blocks.count() / 3);
  CHECK(stream.position() == SamplerPosition{1, 0});
  REQUIRE(stream.next_step(step));  // the next epoch starts from the beginning again
  blocks.read(0, block);
  CHECK(std::equal(block.begin(), block.end(), step[0].begin()));
}

TEST_CASE("streamed rank slices join into the 1-rank global step") {
  Corpus corpus;
  const Tokenizer tokenizer = Tokenizer::bytes();
  StreamingBlocks one(corpus.sources, {}, tokenizer, 16, {8, 1, 1}, 0);
  std::vector<StreamingBlocks> ranks;
  for (std::uint64_t r = 0; r < 2; ++r) ranks.emplace_back(corpus.sources, DocumentSelection{}, tokenizer, 16, BatchShape{2, 2, 2}, r);
  Step global;
  Step micro;
  for (int s = 0; s < 10; ++s) {
    REQUIRE(one.next_step(global));
    std::vector<std::int64_t> joined;
    for (auto& rank : ranks) {
      REQUIRE(rank.next_step(micro));
      REQUIRE(micro.size() == 2);
      for (const auto& m : micro) joined.insert(joined.end(), m.begin(), m.end());
    }
    REQUIRE(joined == global[0]);
  }
}

TEST_CASE("stream state resumes at the same step and refuses other shapes") {
  Corpus corpus;
  const Tokenizer tokenizer = Tokenizer::bytes();
  StreamingBlocks stream(corpus.sources, {}, tokenizer, 16, {2, 1, 2}, 0);
  Step step;
  for (int s = 0; s < 5; ++s) REQUIRE(stream.next_step(step));
  const std::string state = stream.state();
  CHECK(state == "llmrdzv-stream v1 block_size=16 global_batch=4 epoch=0 step=5");

  StreamingBlocks resumed(corpus.sources, {}, tokenizer, 16, {1, 2, 2}, 1);
  StreamingBlocks same_rank(corpus.sources, {}, tokenizer, 16, {2, 1, 2}, 0);
  same_rank.restore(state);
  CHECK(same_rank.position() == stream.position());
  Step a;
  Step b;
  REQUIRE(stream.next_step(a));
  REQUIRE(same_rank.next_step(b));
  CHECK(a == b);
  CHECK_NOTHROW(resumed.restore(state));

  CHECK_THROWS_WITH(StreamingBlocks(corpus.sources, {}, tokenizer, 8, {2, 1, 2}, 0).restore(state),
                    Catch::Contains("block_size=16") && Catch::Contains("this run has block_size=8"));
  CHECK_THROWS_WITH(stream.restore("llmrdzv-stream v1 block_size=16"), Catch::Contains("malformed"));
  CHECK_THROWS_WITH(stream.restore("llmrdzv-stream v1 block_size=16 global_batch=4 epoch=0 step=100000"),
                    Catch::Contains("past the end"));
  CHECK_THROWS_WITH(StreamingBlocks(corpus.sources, {}, tokenizer, 0, {1, 1, 1}, 0), Catch::Contains("block_size"));
  CHECK_THROWS_WITH(StreamingBlocks(corpus.sources, {}, tokenizer, 4, {1, 1, 1}, 1), Catch::Contains("outside"));
}
