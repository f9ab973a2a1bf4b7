// tokenizer.json reading and writing (tokenizer_json.hpp). The accepted values are those with which HF
// tokenizers encodes exactly as one of the kinds in tokenizer.hpp; the rest is refused.
#include "tokenizer_json.hpp"

#include <algorithm>

#include "llmrdzv/tokenizer/tokenizer.hpp"
#include "pretokenizer.hpp"
#include "tokenizer_model.hpp"

namespace llmrdzv::tokenizer {
namespace {

constexpr const char* kSpacePiece = "\xE2\x96\x81";  // "▁" (U+2581)

class Reader {
 public:
  explicit Reader(const std::filesystem::path& path) : file_(path.string()) {}

  [[noreturn]] void refuse(const std::string& component, const std::string& why) const {
    refuse_unsupported(file_ + ": " + component, why);
  }

  // The member `key` of `object` at `where`, or nullptr when absent or JSON null.
  const json::Value* member(const json::Value& object, const std::string& where, const char* key) const {
    if (!object.is_object()) refuse(where, "expected an object, got " + std::string(object.kind_name()));
    const json::Value* value = object.find(key);
    return value && !value->is_null() ? value : nullptr;
  }

  std::string string_member(const json::Value& object, const std::string& where, const char* key) const {
    const json::Value* value = member(object, where, key);
    if (!value || !value->is_string()) refuse(where + "." + key, "expected a string");
    return value->as_string();
  }

  // A flag that must have `wanted` (absent or null counts as `absent_means`).
  void require_flag(const json::Value& object, const std::string& where, const char* key, bool wanted,
                    bool absent_means, const std::string& meaning) const {
    const json::Value* value = member(object, where, key);
    if (value && !value->is_bool()) refuse(where + "." + key, "expected true or false");
    if ((value ? value->as_bool() : absent_means) != wanted) {
      refuse(where + "." + key + " = " + (wanted ? "false" : "true"), meaning + " is not supported");
    }
  }

  // An optional string member that, when given, must be empty.
  void require_empty(const json::Value& object, const std::string& where, const char* key) const {
    const json::Value* value = member(object, where, key);
    if (value && !(value->is_string() && value->as_string().empty())) {
      refuse(where + "." + key, "a word prefix or suffix is not part of byte-level BPE");
    }
  }

  // The normalizer: none, NFC (Qwen2's, before a byte-level split), or SentencePiece-style:
  // Sequence[Prepend("▁"), Replace(" " -> "▁")] (older exports of Llama 2) or Replace(" " -> "▁")
  // alone (Gemma's: no "▁" before the text).
  void read_normalizer(const json::Value& root, TokenizerJson& out) const {
    const json::Value* normalizer = member(root, "(top level)", "normalizer");
    if (!normalizer) return;
    const std::string type = type_of(*normalizer, "normalizer");
    if (type == "NFC") {
      out.nfc = true;
      return;
    }
    if (type == "Replace" && is_space_to_metaspace(*normalizer, "normalizer")) {
      out.kind = JsonKind::sentencepiece_bpe;
      out.prefix = SpacePrefix::never;
      return;
    }
    const json::Value* parts = type == "Sequence" ? member(*normalizer, "normalizer", "normalizers") : nullptr;
    const bool legacy = parts && parts->is_array() && parts->as_array().size() == 2 &&
                        type_of(parts->as_array()[0], "normalizer.normalizers[0]") == "Prepend" &&
                        string_member(parts->as_array()[0], "normalizer.normalizers[0]", "prepend") == kSpacePiece &&
                        type_of(parts->as_array()[1], "normalizer.normalizers[1]") == "Replace" &&
                        is_space_to_metaspace(parts->as_array()[1], "normalizer.normalizers[1]");
    if (!legacy) {
      refuse("normalizer " + type, "only NFC, Llama 2's Sequence[Prepend(\"\u2581\"), Replace(\" \", \"\u2581\")] and Gemma's "
                                   "Replace(\" \", \"\u2581\") are supported; other normalizers change the text before encoding");
    }
    out.kind = JsonKind::sentencepiece_bpe;
    out.prefix = SpacePrefix::legacy;
  }

  // GPT-2's ByteLevel; Llama 3's or Qwen2's Sequence[Split(its pattern), ByteLevel without regex];
  // Metaspace (SentencePiece-style, as transformers 5 writes Llama 2's); none after the legacy
  // normalizer; none or a Split at " " (which finds none: they are "▁" by then) after Gemma's.
  void read_pre_tokenizer(const json::Value& root, TokenizerJson& out) const {
    const json::Value* pre = member(root, "(top level)", "pre_tokenizer");
    if (out.kind == JsonKind::sentencepiece_bpe) {
      if (!pre) return;
      const std::string type = type_of(*pre, "pre_tokenizer");
      if (out.prefix == SpacePrefix::legacy) refuse("pre_tokenizer " + type, "Llama 2's normalizer comes without a pre-tokenizer");
      const json::Value* pattern = type == "Split" ? member(*pre, "pre_tokenizer", "pattern") : nullptr;
      const json::Value* literal = pattern ? member(*pattern, "pre_tokenizer.pattern", "String") : nullptr;
      if (!literal || !literal->is_string() || literal->as_string() != " ") {
        refuse("pre_tokenizer " + type, "after Gemma's normalizer only a Split at \" \" (Gemma's) is supported");
      }
      require_flag(*pre, "pre_tokenizer", "invert", false, false, "an inverted split");
      return;
    }
    if (!pre) refuse("pre_tokenizer", "missing: byte-level BPE needs GPT-2's or Llama 3's split pattern");
    const std::string type = type_of(*pre, "pre_tokenizer");
    if (type == "ByteLevel") {
      require_byte_level(*pre, "pre_tokenizer", true);
      out.kind = JsonKind::gpt2_bpe;
    } else if (type == "Sequence") {
      const json::Value* parts = member(*pre, "pre_tokenizer", "pretokenizers");
      if (!parts || !parts->is_array() || parts->as_array().size() != 2) {
        refuse("pre_tokenizer Sequence", "expected Llama 3's or Qwen2's two pre-tokenizers, Split and ByteLevel");
      }
      out.kind = read_split(parts->as_array()[0], "pre_tokenizer.pretokenizers[0]");
      const std::string second = type_of(parts->as_array()[1], "pre_tokenizer.pretokenizers[1]");
      if (second != "ByteLevel") refuse("pre_tokenizer.pretokenizers[1] " + second, "expected ByteLevel after the Split");
      require_byte_level(parts->as_array()[1], "pre_tokenizer.pretokenizers[1]", false);
    } else if (type == "Metaspace") {
      read_metaspace(*pre, out);
    } else {
      refuse("pre_tokenizer " + type,
             "only GPT-2's ByteLevel, Llama 3's and Qwen2's Sequence[Split, ByteLevel] and Metaspace are supported");
    }
    if (out.nfc && out.kind == JsonKind::sentencepiece_bpe) {
      refuse("normalizer NFC", "NFC goes with byte-level BPE (Qwen2's) here, not with SentencePiece-style BPE");
    }
  }

  // Post-processors that add nothing (ByteLevel: offsets only; a template of just the text) or a
  // BOS before every text (TemplateProcessing "<special> $A"), alone or in a Sequence.
  void read_post_processor(const json::Value& root, TokenizerJson& out) const {
    if (const json::Value* post = member(root, "(top level)", "post_processor")) read_processor(*post, "post_processor", out);
  }

  void check_decoder(const json::Value& root, const TokenizerJson& out) const {
    const json::Value* decoder = member(root, "(top level)", "decoder");
    if (!decoder || out.kind == JsonKind::sentencepiece_bpe) return;  // decoding is not encoding
    const std::string type = type_of(*decoder, "decoder");
    if (type != "ByteLevel") refuse("decoder " + type, "only the ByteLevel decoder turns byte-level tokens back into the text");
  }

  void read_model(const json::Value& root, TokenizerJson& out) const {
    const json::Value* model = member(root, "(top level)", "model");
    if (!model) refuse("model", "missing");
    const std::string type = type_of(*model, "model");
    if (type != "BPE") refuse("model " + type, "only BPE models are supported (WordPiece, Unigram and WordLevel are not)");
    if (const json::Value* dropout = member(*model, "model", "dropout"); dropout && !(dropout->is_number() && dropout->as_double() == 0)) {
      refuse("model.dropout", "BPE dropout makes encoding random");
    }
    require_empty(*model, "model", "continuing_subword_prefix");
    require_empty(*model, "model", "end_of_word_suffix");
    out.ignore_merges = flag(*model, "model", "ignore_merges");
    if (out.kind == JsonKind::sentencepiece_bpe) {
      out.byte_fallback = flag(*model, "model", "byte_fallback");
      out.fuse_unk = flag(*model, "model", "fuse_unk");
      if (member(*model, "model", "unk_token")) out.unk = string_member(*model, "model", "unk_token");
    } else {
      require_flag(*model, "model", "byte_fallback", false, false, "byte fallback (SentencePiece-style BPE, as Llama 2's)");
      require_flag(*model, "model", "fuse_unk", false, false, "fusing unknown tokens");
      if (member(*model, "model", "unk_token")) refuse("model.unk_token", "byte-level BPE never needs an unknown token");
      if (out.kind == JsonKind::gpt2_bpe && out.ignore_merges) {
        refuse("model.ignore_merges = true", "taking whole words from the vocabulary before merging goes with Llama 3's split pattern");
      }
    }
    const json::Value* vocab = member(*model, "model", "vocab");
    if (!vocab) refuse("model.vocab", "missing");
    out.tokens = vocab_from_json(*vocab, file_ + ": model.vocab");
    if (out.unk && std::find(out.tokens.begin(), out.tokens.end(), *out.unk) == out.tokens.end()) {
      refuse("model.unk_token", "\"" + *out.unk + "\" is not in the vocabulary");
    }
    const json::Value* merges = member(*model, "model", "merges");
    if (!merges || !merges->is_array()) refuse("model.merges", "expected an array");
    std::vector<MergeSpelling> spellings;
    spellings.reserve(merges->as_array().size());
    for (std::size_t i = 0; i < merges->as_array().size(); ++i) {
      const json::Value& merge = merges->as_array()[i];
      const std::string at = "model.merges[" + std::to_string(i) + "]";
      const std::string where = file_ + ": " + at;
      // Two spellings: "left right" (tokenizers < 0.20) and ["left", "right"].
      if (merge.is_string()) {
        const std::string_view text = merge.as_string();
        const std::size_t space = text.find(' ');
        if (space == std::string_view::npos || space == 0 || space + 1 == text.size() || text.find(' ', space + 1) != std::string_view::npos) {
          throw TokenizerError(where + ": expected two tokens separated by one space, got \"" + std::string(text) + "\"");
        }
        spellings.push_back({text.substr(0, space), text.substr(space + 1), where, at});
      } else if (merge.is_array() && merge.as_array().size() == 2 && merge.as_array()[0].is_string() && merge.as_array()[1].is_string()) {
        spellings.push_back({merge.as_array()[0].as_string(), merge.as_array()[1].as_string(), where, at});
      } else {
        throw TokenizerError(where + ": expected \"left right\" or [\"left\", \"right\"]");
      }
    }
    out.merges = resolve_merges(spellings, out.tokens);
  }

  // added_tokens, special or matched in the raw text (HF splits them out of any text first, with
  // the whitespace before an lstrip one and after an rstrip one), each at its own vocabulary entry
  // or past the vocabulary, extending it without gaps.
  // `normalized_text`: the tokenizer has a normalizer, so that a token HF matches in the
  // normalized text would be found elsewhere than in the raw text.
  void read_added_tokens(const json::Value& root, TokenizerJson& out, bool normalized_text) const {
    const json::Value* added = member(root, "(top level)", "added_tokens");
    if (!added) return;
    if (!added->is_array()) refuse("added_tokens", "expected an array");
    for (std::size_t i = 0; i < added->as_array().size(); ++i) {
      const json::Value& token = added->as_array()[i];
      const std::string where = "added_tokens[" + std::to_string(i) + "]";
      const std::string content = string_member(token, where, "content");
      const std::string named = where + " \"" + content + "\"";
      if (content.empty()) refuse(named, "an empty token");
      // HF matches a token in the raw text unless it is "normalized" (by default the non-special
      // ones): then in the normalizer's output, which is the raw text only where there is none.
      const json::Value* special = member(token, named, "special");
      if (special && !special->is_bool()) refuse(named + ".special", "expected true or false");
      const bool is_special = special && special->as_bool();
      if (normalized_text) {
        require_flag(token, named, "normalized", false, !is_special,
                     is_special ? "a special token matched in the normalized text"
                                : "a non-special added token matched after normalization");
      }
      require_flag(token, named, "single_word", false, false, "single_word (the token matched only between non-word characters)");
      const json::Value* id = member(token, where, "id");
      if (!id || !id->is_integer() || id->as_integer() < 0) refuse(where + ".id", "expected a whole number");
      out.added.push_back({content, static_cast<std::uint32_t>(id->as_integer()), flag(token, named, "lstrip"),
                           flag(token, named, "rstrip")});
    }
  }

 private:
  bool flag(const json::Value& object, const std::string& where, const char* key) const {
    const json::Value* value = member(object, where, key);
    if (value && !value->is_bool()) refuse(where + "." + key, "expected true or false");
    return value && value->as_bool();
  }

  // A Replace(" " -> "▁") at `where`.
  bool is_space_to_metaspace(const json::Value& replace, const std::string& where) const {
    const json::Value* pattern = member(replace, where, "pattern");
    const json::Value* literal = pattern ? member(*pattern, where + ".pattern", "String") : nullptr;
    return literal && literal->is_string() && literal->as_string() == " " &&
           string_member(replace, where, "content") == kSpacePiece;
  }

  void require_byte_level(const json::Value& pre, const std::string& where, bool gpt2_regex) const {
    require_flag(pre, where, "add_prefix_space", false, false, "adding a space before the text");
    require_flag(pre, where, "use_regex", gpt2_regex, true,
                 gpt2_regex ? "byte-level without GPT-2's split pattern" : "GPT-2's split pattern after Llama 3's");
  }

  // Llama 3's or Qwen2's Split: which of the two kinds it makes.
  JsonKind read_split(const json::Value& split, const std::string& where) const {
    const std::string type = type_of(split, where);
    if (type != "Split") refuse(where + " " + type, "expected Llama 3's or Qwen2's Split");
    const json::Value* pattern = member(split, where, "pattern");
    const json::Value* regex = pattern ? member(*pattern, where + ".pattern", "Regex") : nullptr;
    if (!regex || !regex->is_string()) refuse(where + ".pattern", "expected {\"Regex\": Llama 3's or Qwen2's pattern}");
    if (regex->as_string() != kLlama3Pattern && regex->as_string() != kQwen2Pattern) {
      refuse(where + ".pattern \"" + regex->as_string() + "\"", "only Llama 3's and Qwen2's split patterns are supported");
    }
    const std::string behavior = string_member(split, where, "behavior");
    if (behavior != "Isolated") refuse(where + ".behavior " + behavior, "only Isolated (every match a pre-token) is supported");
    require_flag(split, where, "invert", false, false, "an inverted split");
    return regex->as_string() == kQwen2Pattern ? JsonKind::qwen2_bpe : JsonKind::llama3_bpe;
  }

  void read_metaspace(const json::Value& pre, TokenizerJson& out) const {
    if (string_member(pre, "pre_tokenizer", "replacement") != kSpacePiece) {
      refuse("pre_tokenizer.replacement", "only \"\u2581\" is supported");
    }
    require_flag(pre, "pre_tokenizer", "split", false, true, "splitting at every \"\u2581\"");
    const json::Value* scheme = member(pre, "pre_tokenizer", "prepend_scheme");
    const std::string name = scheme ? string_member(pre, "pre_tokenizer", "prepend_scheme") : flag(pre, "pre_tokenizer", "add_prefix_space") ? "always" : "never";
    if (name == "first") out.prefix = SpacePrefix::first;
    else if (name == "always") out.prefix = SpacePrefix::always;
    else if (name == "never") out.prefix = SpacePrefix::never;
    else refuse("pre_tokenizer.prepend_scheme " + name, "expected first, always or never");
    out.kind = JsonKind::sentencepiece_bpe;
  }

  void read_processor(const json::Value& post, const std::string& where, TokenizerJson& out) const {
    const std::string type = type_of(post, where);
    if (type == "ByteLevel") return;
    if (type == "Sequence") {
      const json::Value* processors = member(post, where, "processors");
      if (!processors || !processors->is_array()) refuse(where + ".processors", "expected an array");
      for (std::size_t i = 0; i < processors->as_array().size(); ++i) {
        read_processor(processors->as_array()[i], where + ".processors[" + std::to_string(i) + "]", out);
      }
      return;
    }
    if (type != "TemplateProcessing") refuse(where + " " + type, "it adds special tokens around every text; not supported");
    const json::Value* single = member(post, where, "single");
    if (!single || !single->is_array()) refuse(where + ".single", "expected an array");
    const auto& items = single->as_array();
    const bool text_last = !items.empty() && member(items.back(), where + ".single", "Sequence");
    if (!text_last || items.size() > 2) {
      refuse(where + " TemplateProcessing", "only \"$A\" and \"<special> $A\" (a BOS) are supported; tokens after the text "
                                            "(an EOS) or around it are not");
    }
    if (items.size() == 1) return;
    const json::Value* special = member(items[0], where + ".single[0]", "SpecialToken");
    if (!special) refuse(where + ".single[0]", "expected a special token before the text");
    const std::string bos = string_member(*special, where + ".single[0].SpecialToken", "id");
    if (out.bos) refuse(where, "a second template with a BOS");
    // special_tokens: {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}} must hold it as one id.
    const json::Value* specials = member(post, where, "special_tokens");
    const json::Value* entry = specials ? member(*specials, where + ".special_tokens", bos.c_str()) : nullptr;
    const json::Value* ids = entry ? member(*entry, where + ".special_tokens." + bos, "ids") : nullptr;
    if (!ids || !ids->is_array() || ids->as_array().size() != 1 || !ids->as_array()[0].is_integer()) {
      refuse(where + ".special_tokens", "\"" + bos + "\" must map to exactly one id");
    }
    out.bos = SpecialToken{bos, static_cast<std::uint32_t>(ids->as_array()[0].as_integer())};
  }

  std::string type_of(const json::Value& component, const std::string& where) const {
    return string_member(component, where, "type");
  }

  std::string file_;
};

}  // namespace

TokenizerJson read_tokenizer_json(const std::filesystem::path& path, const std::string& text) {
  const json::Value root = parse_json_file(path, text);
  const Reader reader(path);
  if (!root.is_object()) reader.refuse("(top level)", "expected a JSON object, got " + std::string(root.kind_name()));
  TokenizerJson result;
  reader.read_normalizer(root, result);
  reader.read_pre_tokenizer(root, result);
  reader.read_post_processor(root, result);
  reader.check_decoder(root, result);
  reader.read_model(root, result);
  const json::Value* normalizer = root.find("normalizer");
  reader.read_added_tokens(root, result, normalizer && !normalizer->is_null());
  if (result.bos) {
    const SpecialToken& bos = *result.bos;
    const auto it = std::find_if(result.added.begin(), result.added.end(), [&](const SpecialToken& t) { return t.content == bos.content; });
    if (it == result.added.end()) reader.refuse("post_processor", "its BOS \"" + bos.content + "\" is not a special added token");
    if (it->id != bos.id) {
      reader.refuse("post_processor.special_tokens", "\"" + bos.content + "\" has id " + std::to_string(bos.id) +
                                                     " but the added token's is " + std::to_string(it->id));
    }
  }
  return result;
}

std::string tokenizer_json_text(const std::vector<std::string>& tokens, const std::vector<MergeRule>& merges,
                                const std::vector<SpecialToken>& specials) {
  const auto byte_level = [](bool add_prefix_space, bool trim_offsets) {
    return json::Object{{"type", "ByteLevel"}, {"add_prefix_space", add_prefix_space}, {"trim_offsets", trim_offsets},
                        {"use_regex", true}};
  };
  json::Object vocab;
  vocab.reserve(tokens.size());
  for (std::size_t id = 0; id < tokens.size(); ++id) vocab.emplace_back(tokens[id], static_cast<std::int64_t>(id));
  json::Array merge_list;
  merge_list.reserve(merges.size());
  for (const MergeRule& m : merges) merge_list.emplace_back(json::Array{tokens[m.left], tokens[m.right]});
  json::Array added;
  for (const SpecialToken& t : specials) {
    added.emplace_back(json::Object{{"id", static_cast<std::int64_t>(t.id)}, {"content", t.content}, {"single_word", false},
                                    {"lstrip", false}, {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  const json::Object document{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", std::move(added)},
      {"normalizer", nullptr},
      {"pre_tokenizer", byte_level(false, true)},
      {"post_processor", byte_level(true, false)},
      {"decoder", byte_level(true, true)},
      {"model", json::Object{{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
                             {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""}, {"fuse_unk", false},
                             {"byte_fallback", false}, {"ignore_merges", false}, {"vocab", std::move(vocab)},
                             {"merges", std::move(merge_list)}}},
  };
  return json::write(document) + "\n";
}

}  // namespace llmrdzv::tokenizer

namespace llmrdzv::tokenizer {
namespace {

// object[key] = value, replacing the member or adding it at the end.
void set_member(json::Object& object, const std::string& key, json::Value value) {
  for (auto& [name, member] : object) {
    if (name == key) {
      member = std::move(value);
      return;
    }
  }
  object.emplace_back(key, std::move(value));
}

}  // namespace

std::string llama_rebuilt_json(const std::filesystem::path& path, const std::string& text, SpacePrefix prefix) {
  json::Value root = json::parse(text);  // read_tokenizer_json has read it already
  json::Value* model = nullptr;
  if (root.is_object()) {
    for (auto& [name, member] : root.as_object()) {
      if (name == "model") model = &member;
    }
  }
  if (!model || !model->is_object()) throw TokenizerError(path.string() + ": model: expected an object");
  set_member(model->as_object(), "fuse_unk", true);
  set_member(model->as_object(), "byte_fallback", true);
  set_member(model->as_object(), "unk_token", nullptr);
  set_member(model->as_object(), "ignore_merges", false);
  const std::string scheme = prefix == SpacePrefix::never ? "never" : prefix == SpacePrefix::always ? "always" : "first";
  set_member(root.as_object(), "normalizer", nullptr);
  set_member(root.as_object(), "pre_tokenizer",
             json::Object{{"type", "Metaspace"}, {"replacement", std::string(kSpacePiece)}, {"prepend_scheme", scheme},
                          {"split", false}});
  json::Array decoders{json::Object{{"type", "Replace"}, {"pattern", json::Object{{"String", std::string(kSpacePiece)}}},
                                    {"content", " "}},
                       json::Object{{"type", "ByteFallback"}}, json::Object{{"type", "Fuse"}}};
  if (prefix != SpacePrefix::never) {
    decoders.emplace_back(json::Object{{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
  }
  set_member(root.as_object(), "decoder", json::Object{{"type", "Sequence"}, {"decoders", std::move(decoders)}});
  return json::write(root) + "\n";
}

}  // namespace llmrdzv::tokenizer
