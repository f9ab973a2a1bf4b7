// Documents to the BOS/EOS-delimited token stream (see token_stream.hpp).
#include "llmrdzv/data/token_stream.hpp"

namespace llmrdzv::data {

DocumentTokenStream::DocumentTokenStream(SourceList sources, DocumentSelection selection,
                                         tokenizer::Tokenizer tokenizer, std::size_t chunk_bytes)
    : reader_(std::move(sources), selection, chunk_bytes, tokenizer.cut_places()), tokenizer_(std::move(tokenizer)) {}

bool DocumentTokenStream::next(std::vector<tokenizer::TokenId>& out) {
  DocumentReader::Chunk chunk;
  if (!reader_.next(chunk)) return false;
  using Part = tokenizer::Tokenizer::Part;
  if (at_document_start_ && tokenizer_.bos_id()) out.push_back(*tokenizer_.bos_id());
  tokenizer_.encode_append(chunk.text, out, at_document_start_ ? Part::start : Part::continuation);
  if (chunk.ends_document) out.push_back(tokenizer_.eos_id());
  at_document_start_ = chunk.ends_document;
  return true;
}

}  // namespace llmrdzv::data
