// Documents to the EOS-joined token stream (see token_stream.hpp).
#include "llmrdzv/data/token_stream.hpp"

namespace llmrdzv::data {

DocumentTokenStream::DocumentTokenStream(SourceList sources, DocumentSelection selection,
                                         tokenizer::Tokenizer tokenizer, std::size_t chunk_bytes)
    : reader_(std::move(sources), selection, chunk_bytes), tokenizer_(std::move(tokenizer)) {}

bool DocumentTokenStream::next(std::vector<tokenizer::TokenId>& out) {
  DocumentReader::Chunk chunk;
  if (!reader_.next(chunk)) return false;
  tokenizer_.encode_append(chunk.text, out);
  if (chunk.ends_document) out.push_back(tokenizer_.eos_id());
  return true;
}

}  // namespace llmrdzv::data
