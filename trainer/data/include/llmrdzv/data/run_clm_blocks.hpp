// run_clm.py's preprocessing of a dataset's rows, for --dataset_name: each row tokenised as
// tokenizer(row) tokenises it (the tokenizer's BOS template, no EOS unless its template appends
// one; nothing between rows), then group_texts: datasets.map(batched=True) hands it 1000 rows at a
// time, and each batch's tokens, concatenated, are cut into block_size blocks with that batch's
// remainder dropped. With --preprocessing_num_workers N run_clm.py maps with num_proc=N: datasets
// cuts the rows into N contiguous shards (Dataset.shard(contiguous=True): the first n % N shards one
// row longer) and batches each shard from its own start, so the batches, and the dropped
// remainders, follow those shards here too; N is also the tokeniser threads.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "llmrdzv/data/token_cache.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"

namespace llmrdzv::data {

// datasets.map's default batch size, which run_clm.py keeps.
inline constexpr std::uint64_t kMapBatchRows = 1000;

struct RunClmGrouping {
  std::uint64_t block_size = 0;
  unsigned workers = 1;  // --preprocessing_num_workers: run_clm's num_proc shards, and tokeniser threads
};

// Row ranges [first, first + count) of datasets.map(num_proc=workers): one range for 0 or 1
// workers, at most one per row (datasets lowers num_proc to the row count).
struct RowRange {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
};
std::vector<RowRange> map_shards(std::uint64_t rows, unsigned workers);

struct GroupingReport {
  std::uint64_t blocks = 0;
  std::uint64_t batches = 0;
  std::uint64_t short_batches = 0;  // batches with fewer tokens than a block: no block (run_clm.py refuses them)
};

// Hands `sink` the blocks of `rows` rows (row(i) is row i's text), shard by shard and batch by
// batch, in order.
GroupingReport group_rows(std::uint64_t rows, const std::function<std::string_view(std::uint64_t)>& row,
                          const tokenizer::Tokenizer& tokenizer, const RunClmGrouping& grouping,
                          const TokenStore::TokenSink& sink);

}  // namespace llmrdzv::data
