// run_clm.py's tokenize_function and group_texts over dataset rows (run_clm_blocks.hpp).
#include "llmrdzv/data/run_clm_blocks.hpp"

#include <algorithm>
#include <exception>
#include <thread>
#include <vector>

#include "llmrdzv/data/corpus.hpp"

namespace llmrdzv::data {

std::vector<RowRange> map_shards(std::uint64_t rows, unsigned workers) {
  const std::uint64_t shards = std::max<std::uint64_t>(1, std::min<std::uint64_t>(workers, rows));
  // Dataset.shard(num_shards, index, contiguous=True): div rows each, the first `mod` one more.
  const std::uint64_t div = rows / shards;
  const std::uint64_t mod = rows % shards;
  std::vector<RowRange> out;
  for (std::uint64_t i = 0; i < shards; ++i) out.push_back({div * i + std::min(i, mod), div + (i < mod ? 1 : 0)});
  return out;
}

GroupingReport group_rows(std::uint64_t rows, const std::function<std::string_view(std::uint64_t)>& row,
                          const tokenizer::Tokenizer& tokenizer, const RunClmGrouping& grouping,
                          const TokenStore::TokenSink& sink) {
  if (grouping.block_size == 0) throw DataError("run_clm grouping: block_size must be at least 1");
  const unsigned threads = std::clamp(grouping.workers, 1u, 64u);
  GroupingReport report;
  std::vector<std::vector<tokenizer::TokenId>> encoded(kMapBatchRows);
  std::vector<tokenizer::TokenId> batch;
  for (const RowRange& shard : map_shards(rows, grouping.workers)) {
    for (std::uint64_t done = 0; done < shard.count; done += kMapBatchRows) {
      const std::uint64_t first = shard.first + done;
      const std::uint64_t count = std::min(kMapBatchRows, shard.count - done);
      // tokenizer(rows): the rows of a batch are independent, so threads share them.
      std::vector<std::exception_ptr> failures(threads);
      const auto encode_from = [&](unsigned t) {
        try {
          for (std::uint64_t i = t; i < count; i += threads) encoded[i] = tokenizer.encode_document(row(first + i));
        } catch (...) {
          failures[t] = std::current_exception();
        }
      };
      {
        std::vector<std::jthread> workers;
        for (unsigned t = 1; t < threads; ++t) workers.emplace_back(encode_from, t);
        encode_from(0);
      }
      for (const std::exception_ptr& failure : failures) {
        if (failure) std::rethrow_exception(failure);
      }
      batch.clear();
      for (std::uint64_t i = 0; i < count; ++i) batch.insert(batch.end(), encoded[i].begin(), encoded[i].end());
      const std::uint64_t kept = batch.size() / grouping.block_size * grouping.block_size;
      ++report.batches;
      if (kept == 0) ++report.short_batches;
      report.blocks += kept / grouping.block_size;
      if (kept > 0) sink(std::span<const tokenizer::TokenId>(batch.data(), kept));
    }
  }
  return report;
}

}  // namespace llmrdzv::data
