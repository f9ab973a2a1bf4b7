// `trainer tokenizer`: a byte-level BPE vocabulary trained on a corpus read as training reads it
// (text files, .jsonl files, folders: data/corpus.hpp), with HF's ByteLevelBPETokenizer.train's
// merges (tokenizer/bpe_training.hpp), written where --tokenizer_name can take it.
#pragma once

#include <cstdio>

#include "llmrdzv/train/options.hpp"

namespace llmrdzv::train {

struct TokenizerTrainingResult {
  std::size_t vocab_size = 0;
  std::size_t merges = 0;
  std::size_t distinct_words = 0;
  std::uint64_t text_bytes = 0;
};

// Every document is fed line by line (each line with its "\n" one sequence), as HF's trainer reads
// a file. Progress goes to `progress` (a live line on a terminal, a line per stage otherwise).
// Throws data::DataError (unreadable corpus, text that is not UTF-8: file and line named) or
// tokenizer::TokenizerError (a vocabulary size below the starting tokens, unwritable output).
TokenizerTrainingResult train_tokenizer(const TokenizerOptions& options, std::FILE* progress);

}  // namespace llmrdzv::train
