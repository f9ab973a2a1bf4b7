// run_clm.py's preprocessing of a dataset's rows, for --dataset_name: each row tokenised as
// tokenizer(row) tokenises it (the tokenizer's BOS template, no EOS unless its template appends
// one; nothing between rows), then group_texts: datasets.map(batched=True) hands it 1000 rows at a
// time, and each batch's tokens, concatenated, are cut into block_size blocks with that batch's
// remainder dropped. The batches are those of run_clm.py's one-process map: --preprocessing_num_workers
// is tokeniser threads here, which leave the blocks as they are.
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>

#include "llmrdzv/data/token_cache.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"

namespace llmrdzv::data {

// datasets.map's default batch size, which run_clm.py keeps.
inline constexpr std::uint64_t kMapBatchRows = 1000;

struct RunClmGrouping {
  std::uint64_t block_size = 0;
  unsigned threads = 1;  // --preprocessing_num_workers: threads tokenising a batch's rows
};

struct GroupingReport {
  std::uint64_t blocks = 0;
  std::uint64_t batches = 0;
  std::uint64_t short_batches = 0;  // batches with fewer tokens than a block: no block (run_clm.py refuses them)
};

// Hands `sink` the blocks of `rows` rows (row(i) is row i's text), batch by batch, in order.
GroupingReport group_rows(std::uint64_t rows, const std::function<std::string_view(std::uint64_t)>& row,
                          const tokenizer::Tokenizer& tokenizer, const RunClmGrouping& grouping,
                          const TokenStore::TokenSink& sink);

}  // namespace llmrdzv::data
