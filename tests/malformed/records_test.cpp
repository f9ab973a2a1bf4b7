// Damaged records a resumed run reads back: the sampler position saved in a checkpoint (refused
// with DataError, or a position the sampler can go on from) and a metrics.jsonl torn or edited
// by hand (cut back to its last good line; every line after the resume is a record of its own).
#include <catch2/catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "feed_damaged.hpp"
#include "llmrdzv/data/corpus.hpp"
#include "llmrdzv/data/sampler.hpp"
#include "llmrdzv/io/json.hpp"
#include "llmrdzv/train/metrics_log.hpp"
#include "scratch_dir.hpp"

using namespace llmrdzv;
using testing::Broken;
using testing::feed_damaged;
using testing::ScratchDir;

TEST_CASE("a damaged sampler position is refused with DataError or resumes inside the corpus", "[malformed][sampler]") {
  constexpr std::uint64_t kBlocks = 1000;
  const data::BatchShape shape{4, 2, 3};
  data::BlockSampler saved(kBlocks, 7, shape, 0);
  for (int i = 0; i < 50; ++i) saved.next_step();  // into the second epoch (41 steps each)
  const std::vector<std::string> seeds = {saved.state(),
                                          "llmrdzv-sampler v1 seed=7 blocks=1000 shuffle=1 global_batch=24 epoch=1 step=9"};
  feed_damaged<data::DataError>("BlockSampler::restore", seeds, 20000, [&](const std::string& state) {
    data::BlockSampler sampler(kBlocks, 7, shape, 0);
    sampler.restore(state);
    for (int step = 0; step < 2; ++step)
      for (const auto& micro : sampler.next_step())
        for (const auto block : micro)
          if (block >= kBlocks) throw Broken("block " + std::to_string(block) + " of " + std::to_string(kBlocks));
  });
}

TEST_CASE("a damaged metrics.jsonl is cut back to its good lines when a run resumes", "[malformed][metrics]") {
  ScratchDir scratch("malformed-metrics");
  std::string seed;
  for (int step = 1; step <= 8; ++step)
    seed += "{\"step\":" + std::to_string(step) + ",\"loss\":" + std::to_string(4.0 - 0.1 * step) + ",\"epoch\":0.5}\n";
  seed += "{\"step\":8,\"eval_loss\":3.1,\"eval_perplexity\":22.2}\n";
  const std::string path = scratch.file("metrics.jsonl");
  // Nothing is refused here: the damage is cut off (a failing write would be a runtime_error).
  const auto report = feed_damaged<std::runtime_error>("MetricsLog resumed at step 5", {seed}, 5000, [&](const std::string& text) {
    scratch.write("metrics.jsonl", text);
    {
      train::MetricsLog log(path, 5);
      log.write({{"step", 6}, {"loss", 3.5}});
    }
    const std::string after = testing::read_file(path);
    const std::string resumed_line = "{\"step\":6,\"loss\":3.5}\n";
    if (after.size() < resumed_line.size() || after.compare(after.size() - resumed_line.size(), std::string::npos, resumed_line) != 0)
      throw Broken("the resumed run's record is not a line of its own at the end: \"" + testing::printable(after) + "\"");
    const std::string kept = after.substr(0, after.size() - resumed_line.size());
    if (text.compare(0, kept.size(), kept) != 0) throw Broken("the kept part is not the start of the file");
    std::istringstream lines(kept);
    for (std::string line; std::getline(lines, line);) {
      const json::Value record = json::parse(line);  // throws ParseError on a torn line that was kept
      const json::Value* step = record.find("step");
      if (step != nullptr && step->as_integer() > 5) throw Broken("a record past step 5 was kept: " + line);
    }
  }, testing::Refusals::none_expected);
  CHECK(report.accepted > 0);
}
