// The Tokenizer facade: builds the model (vocabulary, byte symbols, merge table, fingerprint) and
// runs encode = special-token split -> GPT-2 pieces -> cached BPE, and decode.
#include "llmrdzv/tokenizer/tokenizer.hpp"

#include <unordered_map>

#include "bpe_merges.hpp"
#include "byte_map.hpp"
#include "llmrdzv/io/sha256.hpp"
#include "pretokenizer.hpp"
#include "llmrdzv/io/utf8.hpp"
#include "tokenizer_json.hpp"
#include "vocab_files.hpp"

namespace llmrdzv::tokenizer {

struct Tokenizer::Model {
  Kind kind = Kind::bytes;
  std::vector<std::string> tokens;      // by id, byte-mapped spelling
  std::vector<std::string> token_bytes;  // by id, what decode() gives
  std::vector<MergeRule> merges;        // rank order
  BpeMerges merge_table{std::span<const BpeMerges::Merge>{}};
  std::array<TokenId, 256> byte_ids{};
  TokenId eos = 0;
  std::string fingerprint;
};

namespace {

// Pieces longer than this are not cached (long runs are rare and would crowd the cache out).
constexpr std::size_t kMaxCachedPiece = 64;
constexpr std::size_t kMaxCacheEntries = 1 << 18;

struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

std::string fingerprint_of(const Tokenizer::Model& model) {
  io::Sha256 sha;
  sha.update("llmrdzv tokenizer v1\n").update(model.kind == Tokenizer::Kind::bytes ? "bytes\n" : "gpt2_bpe\n");
  sha.update_u64(model.tokens.size());
  for (const std::string& token : model.tokens) sha.update_u64(token.size()).update(token);
  sha.update_u64(model.merges.size());
  for (const MergeRule& m : model.merges) sha.update_u64(m.left).update_u64(m.right);
  sha.update_u64(model.eos);
  return sha.hex_digest();
}

std::shared_ptr<Tokenizer::Model> finish_model(std::shared_ptr<Tokenizer::Model> model,
                                               const std::filesystem::path& vocab_path) {
  std::unordered_map<std::string_view, TokenId> index;
  for (TokenId id = 0; id < model->tokens.size(); ++id) index.emplace(model->tokens[id], id);
  const auto& symbols = byte_symbols();
  for (unsigned b = 0; b < 256; ++b) {
    const auto it = index.find(symbols[b]);
    if (it == index.end()) {
      throw TokenizerError(vocab_path.string() + ": not a byte-level vocabulary: byte " + std::to_string(b) +
                           " (symbol \"" + symbols[b] + "\") has no token");
    }
    model->byte_ids[b] = it->second;
  }
  if (const auto it = index.find(kEndOfText); it != index.end()) {
    model->eos = it->second;
  } else {
    model->eos = static_cast<TokenId>(model->tokens.size());
    model->tokens.emplace_back(kEndOfText);
  }
  model->token_bytes.reserve(model->tokens.size());
  for (const std::string& token : model->tokens) model->token_bytes.push_back(unmap_bytes(token));
  model->token_bytes[model->eos] = std::string(kEndOfText);
  std::vector<BpeMerges::Merge> table;
  table.reserve(model->merges.size());
  for (const MergeRule& m : model->merges) table.push_back({m.left, m.right, m.merged});
  model->merge_table = BpeMerges(table);
  model->fingerprint = fingerprint_of(*model);
  return model;
}

}  // namespace

struct Tokenizer::PieceCache {
  std::unordered_map<std::string, std::vector<TokenId>, StringHash, std::equal_to<>> pieces;
  std::vector<TokenId> scratch;
};

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
  static const std::shared_ptr<const Model> model = [] {
    auto m = std::make_shared<Model>();
    m->kind = Kind::bytes;
    for (const std::string& symbol : byte_symbols()) m->tokens.push_back(symbol);
    return std::shared_ptr<const Model>(finish_model(std::move(m), "<byte tokenizer>"));
  }();
  return Tokenizer(model);
}

Tokenizer Tokenizer::from_files(const std::filesystem::path& vocab_json, const std::filesystem::path& merges_txt) {
  auto model = std::make_shared<Model>();
  model->kind = Kind::gpt2_bpe;
  model->tokens = read_vocab_json(vocab_json);
  model->merges = read_merges_txt(merges_txt, model->tokens);
  return Tokenizer(finish_model(std::move(model), vocab_json));
}

Tokenizer Tokenizer::from_tokenizer_json(const std::filesystem::path& tokenizer_json) {
  TokenizerJson contents = read_tokenizer_json(tokenizer_json);
  auto model = std::make_shared<Model>();
  model->kind = Kind::gpt2_bpe;
  model->tokens = std::move(contents.tokens);
  model->merges = std::move(contents.merges);
  return Tokenizer(finish_model(std::move(model), tokenizer_json));
}

namespace {
constexpr const char* kVocabPair = "vocab.json + merges.txt";
constexpr const char* kTokenizerJson = "tokenizer.json";
constexpr const char* kBoth = "tokenizer.json (the same as vocab.json + merges.txt)";
}  // namespace

std::string Tokenizer::directory_tokenizer_files(const std::filesystem::path& dir) {
  std::error_code ec;
  const bool pair = std::filesystem::is_regular_file(dir / "vocab.json", ec) && std::filesystem::is_regular_file(dir / "merges.txt", ec);
  const bool json = std::filesystem::is_regular_file(dir / kTokenizerJson, ec);
  return json && pair ? kBoth : json ? kTokenizerJson : pair ? kVocabPair : "";
}

Tokenizer Tokenizer::from_directory(const std::filesystem::path& dir) {
  const std::string files = directory_tokenizer_files(dir);
  if (files == kVocabPair || files.empty()) return from_files(dir / "vocab.json", dir / "merges.txt");
  // tokenizer.json is what transformers' tokenizers use when it is there; a pair next to it that
  // says otherwise would make the slow and fast tokenizers disagree, so it must say the same.
  Tokenizer tokenizer = from_tokenizer_json(dir / kTokenizerJson);
  if (files == kBoth && from_files(dir / "vocab.json", dir / "merges.txt").fingerprint() != tokenizer.fingerprint()) {
    throw TokenizerError(dir.string() + ": tokenizer.json and vocab.json + merges.txt describe different tokenizers "
                         "(transformers uses tokenizer.json): remove the stale form or pass --tokenizer_name");
  }
  return tokenizer;
}

std::vector<std::string> Tokenizer::unreadable_tokenizer_files(const std::filesystem::path& dir) {
  if (!directory_tokenizer_files(dir).empty()) return {};
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

void Tokenizer::encode_append(std::string_view text, std::vector<TokenId>& out) const {
  const Model& model = *model_;
  PieceCache& cache = *cache_;
  auto encode_segment = [&](std::string_view segment) {
    if (model.kind == Kind::bytes) {  // no merges: every piece is its bytes
      for (const char c : segment) out.push_back(model.byte_ids[static_cast<unsigned char>(c)]);
      return;
    }
    PieceScanner scanner(segment);
    std::string_view piece;
    while (scanner.next(piece)) {
      if (piece.size() == 1) {
        out.push_back(model.byte_ids[static_cast<unsigned char>(piece[0])]);
        continue;
      }
      if (const auto it = cache.pieces.find(piece); it != cache.pieces.end()) {
        out.insert(out.end(), it->second.begin(), it->second.end());
        continue;
      }
      std::vector<TokenId>& ids = cache.scratch;
      ids.clear();
      for (const char c : piece) ids.push_back(model.byte_ids[static_cast<unsigned char>(c)]);
      model.merge_table.apply(ids);
      out.insert(out.end(), ids.begin(), ids.end());
      if (piece.size() <= kMaxCachedPiece) {
        if (cache.pieces.size() >= kMaxCacheEntries) cache.pieces.clear();
        cache.pieces.emplace(std::string(piece), ids);
      }
    }
  };
  std::size_t pos = 0;
  while (true) {
    const std::size_t special = text.find(kEndOfText, pos);
    encode_segment(text.substr(pos, special == std::string_view::npos ? std::string_view::npos : special - pos));
    if (special == std::string_view::npos) return;
    out.push_back(model.eos);
    pos = special + kEndOfText.size();
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

Tokenizer::Kind Tokenizer::kind() const { return model_->kind; }
TokenId Tokenizer::eos_id() const { return model_->eos; }
std::size_t Tokenizer::vocab_size() const { return model_->tokens.size(); }
const std::string& Tokenizer::fingerprint() const { return model_->fingerprint; }

const std::string& Tokenizer::token_text(TokenId id) const {
  if (id >= model_->tokens.size()) {
    throw TokenizerError("token id " + std::to_string(id) + " is outside the vocabulary of " +
                         std::to_string(model_->tokens.size()));
  }
  return model_->tokens[id];
}

void Tokenizer::save(const std::filesystem::path& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw TokenizerError("cannot create " + dir.string() + ": " + ec.message());
  write_vocab_json(dir / "vocab.json", model_->tokens);
  write_merges_txt(dir / "merges.txt", model_->tokens, model_->merges);
  write_tokenizer_json(dir / "tokenizer.json", model_->tokens, model_->merges, model_->eos);
  write_tokenizer_config(dir, model_->eos);
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
