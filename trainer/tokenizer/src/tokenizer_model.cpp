// Building the shared model (tokenizer_model.hpp): the vocabulary with its added tokens, the byte
// tokens, EOS and BOS, the merge table and the fingerprint, for every source, and the byte tokenizer.
#include "tokenizer_model.hpp"

#include <algorithm>

#include "byte_map.hpp"
#include "llmrdzv/io/sha256.hpp"
#include "tokenizer_config.hpp"

namespace llmrdzv::tokenizer {
namespace {

constexpr std::string_view kSpacePiece = "\xE2\x96\x81";  // "▁" (U+2581)

const char* kind_name(Tokenizer::Kind kind) {
  switch (kind) {
    case Tokenizer::Kind::bytes: return "bytes";
    case Tokenizer::Kind::gpt2_bpe: return "gpt2_bpe";
    case Tokenizer::Kind::llama3_bpe: return "llama3_bpe";
    case Tokenizer::Kind::qwen2_bpe: return "qwen2_bpe";
    case Tokenizer::Kind::sentencepiece_bpe: return "sentencepiece_bpe";
  }
  return "?";
}

// Over the kind, every token, every merge and the EOS; what else changes encoding is added only
// when it differs from GPT-2's, so GPT-2 fingerprints (and the token caches they key) stay as they were.
std::string fingerprint_of(const Tokenizer::Model& model) {
  io::Sha256 sha;
  sha.update("llmrdzv tokenizer v1\n").update(std::string(kind_name(model.kind)) + "\n");
  sha.update_u64(model.tokens.size());
  for (const std::string& token : model.tokens) sha.update_u64(token.size()).update(token);
  sha.update_u64(model.merges.size());
  for (const MergeRule& m : model.merges) sha.update_u64(m.left).update_u64(m.right);
  sha.update_u64(model.eos);
  if (!is_plain_gpt2(model)) {
    sha.update("bos ").update_u64(model.bos ? *model.bos : kNoToken);
    sha.update("specials ").update_u64(model.specials.tokens().size());
    for (const SpecialToken& t : model.specials.tokens()) sha.update_u64(t.id);
    sha.update("ignore_merges ").update_u64(model.ignore_merges);
    sha.update("prefix ").update_u64(static_cast<std::uint64_t>(model.prefix));
    sha.update("unk ").update_u64(model.unk ? *model.unk : kNoToken).update_u64(model.fuse_unk);
    for (const TokenId id : model.byte_ids) sha.update_u64(id);
    if (model.nfc) sha.update("nfc ");
  }
  return sha.hex_digest();
}

std::unordered_map<std::string_view, TokenId> index_of(const std::vector<std::string>& tokens) {
  std::unordered_map<std::string_view, TokenId> index;
  index.reserve(tokens.size());
  for (TokenId id = 0; id < tokens.size(); ++id) index.emplace(tokens[id], id);
  return index;
}

// Byte-level: every byte needs its symbol's token; the text of a token is its bytes unmapped.
void finish_byte_level(Tokenizer::Model& model, const std::string& source) {
  const auto& symbols = byte_symbols();
  for (unsigned b = 0; b < 256; ++b) {
    const auto it = model.index.find(symbols[b]);
    if (it == model.index.end()) {
      throw TokenizerError(source + ": not a byte-level vocabulary: byte " + std::to_string(b) + " (symbol \"" +
                           symbols[b] + "\") has no token");
    }
    model.byte_ids[b] = it->second;
  }
  for (const std::string& token : model.tokens) model.token_bytes.push_back(unmap_bytes(token));
}

// SentencePiece-style: "▁" is a space, "<0xNN>" the byte NN. Chunks may be cut before a space when
// no token joins "▁" to a character before it (so no merge crosses such a cut).
void finish_sentencepiece(Tokenizer::Model& model, bool byte_fallback) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned b = 0; b < 256; ++b) {
    const std::string name = std::string("<0x") + kHex[b >> 4] + kHex[b & 15] + ">";
    const auto it = model.index.find(name);
    model.byte_ids[b] = byte_fallback && it != model.index.end() ? it->second : kNoToken;
  }
  bool joins = !model.index.contains(kSpacePiece);
  for (TokenId id = 0; id < model.tokens.size(); ++id) {
    const std::string& token = model.tokens[id];
    std::string text;
    for (std::size_t pos = 0; pos < token.size();) {
      if (token.compare(pos, kSpacePiece.size(), kSpacePiece) == 0) {
        joins = joins || (pos > 0 && text.back() != ' ');
        text += ' ';
        pos += kSpacePiece.size();
      } else {
        text += token[pos++];
      }
    }
    model.token_bytes.push_back(std::move(text));
  }
  for (unsigned b = 0; b < 256; ++b) {
    if (model.byte_ids[b] != kNoToken) model.token_bytes[model.byte_ids[b]] = std::string(1, static_cast<char>(b));
  }
  model.cut_rule = joins ? CutRule::none : CutRule::before_spaces;
}

}  // namespace

std::shared_ptr<const Tokenizer::Model> finish_model(std::shared_ptr<Tokenizer::Model> model, const std::string& source,
                                                     bool byte_fallback) {
  model->index = index_of(model->tokens);
  if (model->kind == Tokenizer::Kind::sentencepiece_bpe) {
    finish_sentencepiece(*model, byte_fallback);
  } else {
    finish_byte_level(*model, source);
    // Qwen2's pattern splits at the same places as Llama 3's; and NFC never joins across them: the
    // character after a cut follows '\r', '\n' or starts with ' ', none of which composes.
    model->cut_rule = model->kind == Tokenizer::Kind::llama3_bpe || model->kind == Tokenizer::Kind::qwen2_bpe
                          ? CutRule::llama3
                          : CutRule::gpt2;
  }
  for (const SpecialToken& t : model->specials.tokens()) model->token_bytes[t.id] = t.content;
  std::vector<BpeMerges::Merge> table;
  table.reserve(model->merges.size());
  for (const MergeRule& m : model->merges) table.push_back({m.left, m.right, m.merged});
  model->merge_table = BpeMerges(table);
  model->fingerprint = fingerprint_of(*model);
  return model;
}

void refuse_unsupported(const std::string& what, const std::string& why) {
  throw TokenizerError(what + ": " + why + " (this trainer reads GPT-2, Llama 3 and Qwen2 byte-level BPE and Llama 2 "
                       "SentencePiece-style BPE tokenizers; give --tokenizer_name a directory with a supported tokenizer)");
}

bool is_plain_gpt2(const Tokenizer::Model& model) {
  const auto& specials = model.specials.tokens();
  return (model.kind == Tokenizer::Kind::bytes || model.kind == Tokenizer::Kind::gpt2_bpe) && !model.bos &&
         specials.size() == 1 && specials[0].content == kEndOfText && specials[0].id == model.eos;
}

std::shared_ptr<const Tokenizer::Model> bytes_model() {
  auto model = std::make_shared<Tokenizer::Model>();
  model->kind = Tokenizer::Kind::bytes;
  for (const std::string& symbol : byte_symbols()) model->tokens.push_back(symbol);
  model->eos = static_cast<TokenId>(model->tokens.size());
  model->tokens.emplace_back(kEndOfText);
  model->specials = SpecialTokenFinder({{std::string(kEndOfText), model->eos}});
  return finish_model(std::move(model), "<byte tokenizer>", false);
}

}  // namespace llmrdzv::tokenizer
