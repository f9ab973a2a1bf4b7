// Documents to tokens: every selected document encoded (after the tokenizer's BOS when it has one,
// as HF's tokenizer(text) in run_clm's tokenize_function puts it before every example) and
// followed by EOS, the stream run_clm's group_texts concatenates. Shared by the token cache (which writes it to shards) and --streaming
// (which cuts it into blocks on the fly), so both see the same tokens.
#pragma once

#include <vector>

#include "llmrdzv/data/corpus.hpp"
#include "llmrdzv/tokenizer/tokenizer.hpp"

namespace llmrdzv::data {

class DocumentTokenStream {
 public:
  DocumentTokenStream(SourceList sources, DocumentSelection selection, tokenizer::Tokenizer tokenizer,
                      std::size_t chunk_bytes = 1 << 20);

  // Appends the tokens of the next chunk (BOS before a document's first, EOS after its last); false
  // at the end.
  bool next(std::vector<tokenizer::TokenId>& out);

  const tokenizer::Tokenizer& tokenizer() const { return tokenizer_; }

 private:
  DocumentReader reader_;
  tokenizer::Tokenizer tokenizer_;
  bool at_document_start_ = true;
};

}  // namespace llmrdzv::data
