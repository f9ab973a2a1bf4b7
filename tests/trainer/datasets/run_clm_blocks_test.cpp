// The blocks the trainer trains on for --dataset_name equal run_clm.py's: run_clm_oracle.py runs
// run_clm's tokenize_function and group_texts maps (datasets.map, batched, 1000 rows a batch) over
// a save_to_disk dataset made here, with a GPT-2-style tokenizer and one whose template puts a BOS
// before every row, both trained by the tokenizers library on the rows; in one process and with
// num_proc=3, whose shards (867, 867 and 866 rows) move the batches' dropped remainders.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "llmrdzv/data/run_clm_blocks.hpp"
#include "llmrdzv/datasets/dataset_files.hpp"
#include "llmrdzv/datasets/text_rows.hpp"
#include "scratch_dir.hpp"

namespace ds = llmrdzv::datasets;
using llmrdzv::testing::ScratchDir;
using llmrdzv::tokenizer::TokenId;

namespace {

// 2600 rows (three map batches, the last one short) of words, line breaks, non-ASCII text and
// empty rows, from a fixed LCG.
std::string corpus() {
  static const char* kWords[] = {"alpha", "beta", "gamma", "delta", "caf\\u00e9", "\\u4e2d\\u6587", "x", "yy", "\\n"};
  std::uint32_t state = 12345;
  std::string out;
  for (int i = 0; i < 2600; ++i) {
    state = state * 1664525u + 1013904223u;
    const unsigned words = (state >> 16) % 12;
    std::string text;
    for (unsigned w = 0; w < words; ++w) {
      state = state * 1664525u + 1013904223u;
      text += (w ? " " : "") + std::string(kWords[(state >> 16) % 9]);
    }
    out += "{\"id\": " + std::to_string(i) + ", \"text\": \"" + text + "\"}\n";
  }
  return out;
}

std::vector<std::vector<TokenId>> read_blocks(const std::string& file) {
  std::vector<std::vector<TokenId>> blocks;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    std::istringstream ids(line);
    blocks.emplace_back();
    for (TokenId id; ids >> id;) blocks.back().push_back(id);
  }
  return blocks;
}

}  // namespace

TEST_CASE("dataset rows become run_clm.py's group_texts blocks", "[datasets][oracle][run_clm]") {
  const ScratchDir dir("run-clm-blocks");
  dir.write("corpus.jsonl", corpus());
  constexpr std::uint64_t kBlock = 16;
  const std::string command = std::string(LLMRDZV_TEST_PYTHON) + " " + LLMRDZV_RUN_CLM_ORACLE + " " + dir.path().string() +
                              " " + std::to_string(kBlock) + " > " + dir.file("oracle.log") + " 2>&1";
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  const ds::DatasetFiles found = ds::find_dataset({dir.file("saved"), "", "main", ""});
  const ds::TextRows rows = ds::read_text_rows(found.splits.at("train"), found.format, "");
  REQUIRE(rows.size() == 2600);
  for (const char* name : {"gpt2", "bos"}) {
    const auto tokenizer = llmrdzv::tokenizer::Tokenizer::from_directory(dir.file(std::string("tokenizer-") + name));
    std::vector<std::vector<std::vector<TokenId>>> by_workers;
    for (const unsigned workers : {1u, 3u}) {
      INFO(name << " tokenizer, " << workers << " workers");
      const auto expected = read_blocks(dir.file(std::string("blocks-") + name + "-" + std::to_string(workers) + ".txt"));
      REQUIRE(expected.size() > 100);
      by_workers.push_back(expected);
      std::vector<TokenId> ids;
      const auto report = llmrdzv::data::group_rows(
          rows.size(), [&](std::uint64_t i) { return rows.row(i); }, tokenizer, {kBlock, workers},
          [&](std::span<const TokenId> batch) { ids.insert(ids.end(), batch.begin(), batch.end()); });
      CHECK(report.batches == 3);
      REQUIRE(report.blocks == expected.size());
      REQUIRE(ids.size() == expected.size() * kBlock);
      for (std::size_t b = 0; b < expected.size(); ++b) {
        INFO("block " << b);
        REQUIRE(std::vector<TokenId>(ids.begin() + static_cast<std::ptrdiff_t>(b * kBlock),
                                     ids.begin() + static_cast<std::ptrdiff_t>((b + 1) * kBlock)) == expected[b]);
      }
    }
    // The shards change which tokens are dropped: the two runs differ, or the test shows nothing.
    CHECK(by_workers[0] != by_workers[1]);
  }
}

TEST_CASE("run_clm's map shards are datasets' contiguous shards", "[datasets][run_clm]") {
  using llmrdzv::data::map_shards;
  const auto ranges = [](std::uint64_t rows, unsigned workers) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    for (const auto& r : map_shards(rows, workers)) out.emplace_back(r.first, r.count);
    return out;
  };
  using Ranges = std::vector<std::pair<std::uint64_t, std::uint64_t>>;
  CHECK(ranges(2600, 3) == Ranges{{0, 867}, {867, 867}, {1734, 866}});
  CHECK(ranges(2600, 0) == Ranges{{0, 2600}});
  CHECK(ranges(2600, 1) == Ranges{{0, 2600}});
  CHECK(ranges(10, 4) == Ranges{{0, 3}, {3, 3}, {6, 2}, {8, 2}});
  CHECK(ranges(2, 5) == Ranges{{0, 1}, {1, 1}});  // num_proc lowered to the row count
  CHECK(ranges(0, 3) == Ranges{{0, 0}});
}
