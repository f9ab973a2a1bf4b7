// The Tokenizer facade: encode = special-token split -> per kind (GPT-2 / Llama 3 pieces with a
// piece cache, or SentencePiece-style BPE) -> ids, and decode, save and the directory rules.
#include "llmrdzv/tokenizer/tokenizer.hpp"

#include <algorithm>

#include "byte_map.hpp"
#include "llmrdzv/io/utf8.hpp"
#include "piece_cache.hpp"
#include "pretokenizer.hpp"
#include "sentencepiece_bpe.hpp"
#include "tokenizer_config.hpp"
#include "tokenizer_json.hpp"
#include "tokenizer_model.hpp"
#include "unicode_nfc.hpp"
#include "vocab_files.hpp"

namespace llmrdzv::tokenizer {

namespace {

// The length of the well-formed UTF-8 run at the start of `text`.
std::size_t valid_prefix(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  std::size_t pos = 0;
  while (pos < text.size()) {
    char32_t cp;
    const std::size_t len = p[pos] < 0x80 ? 1 : utf8::decode(p + pos, text.size() - pos, cp);
    if (len == 0) break;
    pos += len;
  }
  return pos;
}

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const Model> model)
    : model_(std::move(model)), cache_(std::make_unique<PieceCache>()) {}
Tokenizer::Tokenizer(const Tokenizer& other) : Tokenizer(other.model_) {}
Tokenizer& Tokenizer::operator=(const Tokenizer& other) {
  if (this != &other) {
    model_ = other.model_;
    cache_ = std::make_unique<PieceCache>();
  }
  return *this;
}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::bytes() {
  static const std::shared_ptr<const Model> model = bytes_model();
  return Tokenizer(model);
}

Tokenizer Tokenizer::from_files(const std::filesystem::path& vocab_json, const std::filesystem::path& merges_txt) {
  return Tokenizer(vocab_files_model(vocab_json, merges_txt, false));
}

Tokenizer Tokenizer::from_tokenizer_json(const std::filesystem::path& tokenizer_json) {
  return Tokenizer(tokenizer_json_model(tokenizer_json));
}

namespace {

// Which forms dir holds, and the configuration files read with them.
struct DirectoryFiles {
  bool pair = false;
  bool json = false;
  bool config = false;
  bool special_tokens_map = false;  // read with the pair when the config has no added_tokens_decoder
};

DirectoryFiles directory_files(const std::filesystem::path& dir) {
  std::error_code ec;
  const auto has = [&](const char* name) { return std::filesystem::is_regular_file(dir / name, ec); };
  DirectoryFiles files{has("vocab.json") && has("merges.txt"), has("tokenizer.json"), has("tokenizer_config.json")};
  if (files.pair && !files.json && files.config && has("special_tokens_map.json")) {
    files.special_tokens_map = !read_tokenizer_config(dir / "tokenizer_config.json")->added_tokens_decoder;
  }
  return files;
}

}  // namespace

std::string Tokenizer::directory_tokenizer_files(const std::filesystem::path& dir) {
  const DirectoryFiles files = directory_files(dir);
  if (!files.pair && !files.json) return "";
  std::string names = files.json ? "tokenizer.json" : "vocab.json + merges.txt";
  if (files.config) names += " + tokenizer_config.json";
  if (files.special_tokens_map) names += " + special_tokens_map.json";
  return files.json && files.pair ? names + " (the same as vocab.json + merges.txt)" : names;
}

Tokenizer Tokenizer::from_directory(const std::filesystem::path& dir) {
  const DirectoryFiles files = directory_files(dir);
  if (!files.json) return Tokenizer(vocab_files_model(dir / "vocab.json", dir / "merges.txt", true));
  // tokenizer.json is what transformers' tokenizers use when it is there; a pair next to it that
  // says otherwise would make the slow and fast tokenizers disagree, so it must say the same.
  Tokenizer tokenizer = from_tokenizer_json(dir / "tokenizer.json");
  if (files.pair) {
    // Read with the tokenizer_config.json, as transformers' slow tokenizer would: its EOS may be
    // another token than "<|endoftext|>" (a trained tokenizer's first special token).
    const Tokenizer pair(vocab_files_model(dir / "vocab.json", dir / "merges.txt", true));
    const Model& a = *pair.model_;
    const Model& b = *tokenizer.model_;
    const bool same = a.tokens.size() <= b.tokens.size() && std::equal(a.tokens.begin(), a.tokens.end(), b.tokens.begin()) &&
                      a.merges.size() == b.merges.size() &&
                      std::equal(a.merges.begin(), a.merges.end(), b.merges.begin(), [](const MergeRule& x, const MergeRule& y) {
                        return x.left == y.left && x.right == y.right;
                      });
    if (!same) {
      throw TokenizerError(dir.string() + ": tokenizer.json and vocab.json + merges.txt describe different tokenizers "
                           "(transformers uses tokenizer.json): remove the stale form or pass --tokenizer_name");
    }
  }
  return tokenizer;
}

std::vector<std::string> Tokenizer::unreadable_tokenizer_files(const std::filesystem::path& dir) {
  if (const DirectoryFiles files = directory_files(dir); files.pair || files.json) return {};
  static const char* const kTokenizerFiles[] = {
      "tokenizer.model",        "spiece.model",     "sentencepiece.bpe.model",
      "vocab.txt",          "tokenizer_config.json",  "special_tokens_map.json", "added_tokens.json",
      "vocab.json",         "merges.txt"};
  std::vector<std::string> present;
  for (const char* name : kTokenizerFiles) {
    std::error_code ec;
    if (std::filesystem::exists(dir / name, ec)) present.emplace_back(name);
  }
  return present;
}

std::vector<TokenId> Tokenizer::encode(std::string_view text) const {
  std::vector<TokenId> out;
  out.reserve(text.size() / 3 + 1);
  encode_append(text, out);
  return out;
}

std::vector<TokenId> Tokenizer::encode_document(std::string_view text) const {
  std::vector<TokenId> out;
  if (model_->bos) out.push_back(*model_->bos);
  encode_append(text, out);
  return out;
}

void Tokenizer::encode_append(std::string_view text, std::vector<TokenId>& out, Part part) const {
  const Model& model = *model_;
  PieceCache& cache = *cache_;
  const auto byte_level_piece = [&](std::string_view piece) {
    if (piece.size() == 1) {
      out.push_back(model.byte_ids[static_cast<unsigned char>(piece[0])]);
      return;
    }
    if (const std::vector<TokenId>* known = cache.find(piece)) {
      out.insert(out.end(), known->begin(), known->end());
      return;
    }
    std::vector<TokenId>& ids = cache.scratch;
    ids.clear();
    if (model.ignore_merges) {  // the byte-mapped piece itself, when the vocabulary has it
      cache.mapped.clear();
      for (const char c : piece) cache.mapped += byte_symbols()[static_cast<unsigned char>(c)];
      if (const auto it = model.index.find(cache.mapped); it != model.index.end()) ids.push_back(it->second);
    }
    if (ids.empty()) {
      for (const char c : piece) ids.push_back(model.byte_ids[static_cast<unsigned char>(c)]);
      model.merge_table.apply(ids);
    }
    out.insert(out.end(), ids.begin(), ids.end());
    cache.remember(piece, ids);
  };
  // SentencePiece-style: runs of valid UTF-8 and invalid bytes, each run a text of its own.
  const auto sentencepiece_segment = [&](std::string_view segment, bool continues) {
    for (std::size_t pos = 0; pos < segment.size();) {
      const std::size_t len = valid_prefix(segment.substr(pos));
      if (len == 0) {
        const TokenId id = model.byte_ids[static_cast<unsigned char>(segment[pos++])];
        if (id != kNoToken) out.push_back(id);
        else if (model.unk) out.push_back(*model.unk);
        continue;
      }
      const std::string_view run = segment.substr(pos, len);
      const bool starts_text = !(continues && pos == 0);
      const bool spaced = run.starts_with(' ') || run.starts_with("\xE2\x96\x81");
      const bool prefix = model.prefix == SpacePrefix::legacy   ? starts_text
                          : model.prefix == SpacePrefix::always ? starts_text && !spaced
                          : model.prefix == SpacePrefix::first  ? starts_text && pos == 0 && !spaced
                                                                : false;
      encode_sentencepiece(model, run, prefix, out, cache);
      pos += len;
    }
  };
  const SplitPattern pattern = model.kind == Kind::llama3_bpe  ? SplitPattern::llama3
                               : model.kind == Kind::qwen2_bpe ? SplitPattern::qwen2
                                                               : SplitPattern::gpt2;
  std::size_t pos = 0;
  while (true) {
    const SpecialTokenFinder::Match special = model.specials.find(text, pos);
    const std::string_view segment = text.substr(pos, special.pos == std::string_view::npos ? std::string_view::npos : special.pos - pos);
    if (model.kind == Kind::bytes) {  // no merges: every piece is its bytes
      for (const char c : segment) out.push_back(model.byte_ids[static_cast<unsigned char>(c)]);
    } else if (model.kind == Kind::sentencepiece_bpe) {
      // Metaspace's "first" prefixes only the text at offset 0; the legacy normalizer every text.
      const bool continues = pos == 0 ? part == Part::continuation : model.prefix == SpacePrefix::first;
      if (!segment.empty()) sentencepiece_segment(segment, continues);
    } else {
      const bool normalize = model.nfc && !is_nfc_quick(segment);
      const std::string normalized = normalize ? nfc(segment) : std::string();
      PieceScanner scanner(normalize ? std::string_view(normalized) : segment, pattern);
      for (std::string_view piece; scanner.next(piece);) byte_level_piece(piece);
    }
    if (special.pos == std::string_view::npos) return;
    out.push_back(special.id);
    pos = special.pos + special.length;
  }
}

std::string Tokenizer::decode(std::span<const TokenId> ids) const {
  std::string out;
  for (const TokenId id : ids) {
    if (id >= model_->token_bytes.size()) {
      throw TokenizerError("cannot decode token id " + std::to_string(id) + ": the vocabulary has " +
                           std::to_string(model_->token_bytes.size()) + " ids");
    }
    out += model_->token_bytes[id];
  }
  return out;
}

std::size_t Tokenizer::text_bytes(TokenId id) const {
  if (id >= model_->token_bytes.size()) {
    throw TokenizerError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                         std::to_string(model_->token_bytes.size()));
  }
  if (id == model_->eos || id == model_->bos) return 0;
  for (const SpecialToken& special : model_->specials.tokens()) {
    if (special.id == id) return 0;
  }
  return model_->token_bytes[id].size();
}

Tokenizer::Kind Tokenizer::kind() const { return model_->kind; }
TokenId Tokenizer::eos_id() const { return model_->eos; }
std::optional<TokenId> Tokenizer::bos_id() const { return model_->bos; }
CutRule Tokenizer::cut_rule() const { return model_->cut_rule; }

CutPlaces Tokenizer::cut_places() const {
  CutPlaces places(model_->cut_rule);
  for (const SpecialToken& token : model_->specials.tokens()) {
    if (token.lstrip) places.lstrip.push_back(token.content);
    if (token.rstrip) places.rstrip.push_back(token.content);
  }
  return places;
}
std::size_t Tokenizer::vocab_size() const { return model_->tokens.size(); }
const std::string& Tokenizer::fingerprint() const { return model_->fingerprint; }

const std::string& Tokenizer::token_text(TokenId id) const {
  if (id >= model_->tokens.size()) {
    throw TokenizerError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                         std::to_string(model_->tokens.size()));
  }
  return model_->tokens[id];
}

std::vector<std::pair<std::string, std::string>> Tokenizer::files() const {
  if (!model_->source_files.empty()) return model_->source_files;
  const SpecialToken eos{std::string(kEndOfText), model_->eos};
  std::vector<std::pair<std::string, std::string>> files = {
      {"vocab.json", vocab_json_text(model_->tokens)},
      {"merges.txt", merges_txt_text(model_->tokens, model_->merges)},
      {"tokenizer.json", tokenizer_json_text(model_->tokens, model_->merges, {eos})},
  };
  for (auto& file : tokenizer_config_files({eos})) files.push_back(std::move(file));
  return files;
}

void Tokenizer::save(const std::filesystem::path& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw TokenizerError("cannot create " + dir.string() + ": " + ec.message());
  for (const auto& [name, text] : files()) write_text(dir / name, text);
}

std::string replace_invalid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  for (std::size_t i = 0; i < bytes.size();) {
    char32_t cp = 0;
    const std::size_t n = utf8::decode(p + i, bytes.size() - i, cp);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

}  // namespace llmrdzv::tokenizer
