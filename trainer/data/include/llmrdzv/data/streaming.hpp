// --streaming: blocks cut from documents tokenised on the fly, never holding the corpus or its
// tokens (only one text chunk and less than one global batch of ids). Blocks come in corpus order
// (no shuffle, like a streamed HF dataset without a shuffle buffer); global step s is blocks
// [s*G, (s+1)*G) and rank r takes the r-th slice of it, cut into micro-batches, as BlockSampler
// does, so the union over ranks equals a 1-rank run's step. Every rank tokenises the whole stream
// and keeps only its slice. The tokens equal the token cache's for the same inputs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "llmrdzv/data/sampler.hpp"
#include "llmrdzv/data/token_stream.hpp"

namespace llmrdzv::data {

class StreamingBlocks {
 public:
  StreamingBlocks(SourceList sources, DocumentSelection selection, tokenizer::Tokenizer tokenizer,
                  std::uint64_t block_size, BatchShape shape, std::uint64_t rank);

  // Fills micro_batches with this rank's `accumulation` micro-batches of the next global step,
  // each per_device_batch * block_size ids (row-major [batch, block_size]); false when the epoch's
  // stream has no full global batch left, after which the next call starts the next epoch.
  bool next_step(std::vector<std::vector<std::int64_t>>& micro_batches);
  SamplerPosition position() const { return position_; }

  // "llmrdzv-stream v1 block_size=K global_batch=G epoch=E step=T"; restore re-reads the stream
  // up to that step (throws DataError on a malformed state or another block size / global batch).
  std::string state() const;
  void restore(std::string_view state);

 private:
  void restart_epoch();
  bool fill(std::uint64_t count);

  SourceList sources_;
  DocumentSelection selection_;
  tokenizer::Tokenizer tokenizer_;
  std::uint64_t block_size_;
  BatchShape shape_;
  std::uint64_t rank_;
  SamplerPosition position_;
  std::unique_ptr<DocumentTokenStream> stream_;
  std::vector<tokenizer::TokenId> pending_;
  std::size_t pending_begin_ = 0;
};

}  // namespace llmrdzv::data
