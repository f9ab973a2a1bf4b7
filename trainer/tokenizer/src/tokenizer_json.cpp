// tokenizer.json reading and writing (tokenizer_json.hpp). The accepted values are those with which HF
// tokenizers encodes exactly as GPT-2's byte-level BPE (see tokenizer.hpp); the rest is refused.
#include "tokenizer_json.hpp"

#include "llmrdzv/tokenizer/tokenizer.hpp"

namespace llmrdzv::tokenizer {
namespace {

class Reader {
 public:
  explicit Reader(const std::filesystem::path& path) : file_(path.string()) {}

  [[noreturn]] void refuse(const std::string& component, const std::string& why) const {
    throw TokenizerError(file_ + ": " + component + ": " + why +
                         " (this trainer reads byte-level BPE tokenizers as GPT-2 ships them; give --tokenizer_name a "
                         "directory with a supported tokenizer)");
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

  void check_normalizer(const json::Value& root) const {
    if (const json::Value* normalizer = member(root, "(top level)", "normalizer")) {
      refuse("normalizer " + type_of(*normalizer, "normalizer"), "normalizers change the text before encoding");
    }
  }

  void check_pre_tokenizer(const json::Value& root) const {
    const json::Value* pre = member(root, "(top level)", "pre_tokenizer");
    if (!pre) refuse("pre_tokenizer", "missing: without GPT-2's ByteLevel pre-tokenizer the text would not be split as GPT-2 splits it");
    const std::string type = type_of(*pre, "pre_tokenizer");
    if (type != "ByteLevel") {
      refuse("pre_tokenizer " + type, type == "Sequence" || type == "Split"
                                           ? "a split pattern of its own (as Llama 3's) is not supported yet"
                                           : "only GPT-2's ByteLevel pre-tokenizer is supported");
    }
    require_flag(*pre, "pre_tokenizer", "add_prefix_space", false, false, "adding a space before the text");
    require_flag(*pre, "pre_tokenizer", "use_regex", true, true, "byte-level without GPT-2's split pattern");
  }

  void check_post_processor(const json::Value& root) const {
    if (const json::Value* post = member(root, "(top level)", "post_processor")) check_processor(*post, "post_processor");
  }

  // Post-processors that leave the ids alone: ByteLevel (offsets only), a TemplateProcessing whose
  // single-text template is just the text (what transformers 5 writes for GPT-2), a Sequence of those.
  void check_processor(const json::Value& post, const std::string& where) const {
    const std::string type = type_of(post, where);
    if (type == "ByteLevel") return;
    if (type == "Sequence") {
      const json::Value* processors = member(post, where, "processors");
      if (!processors || !processors->is_array()) refuse(where + ".processors", "expected an array");
      for (std::size_t i = 0; i < processors->as_array().size(); ++i) {
        check_processor(processors->as_array()[i], where + ".processors[" + std::to_string(i) + "]");
      }
      return;
    }
    if (type == "TemplateProcessing") {
      const json::Value* single = member(post, where, "single");
      if (!single || !single->is_array()) refuse(where + ".single", "expected an array");
      if (single->as_array().size() != 1 || !member(single->as_array()[0], where + ".single", "Sequence")) {
        refuse(where + " TemplateProcessing", "its template adds to every text (special tokens such as a BOS); not supported yet");
      }
      return;
    }
    refuse(where + " " + type, "it adds special tokens around every text; not supported yet");
  }

  void check_decoder(const json::Value& root) const {
    const json::Value* decoder = member(root, "(top level)", "decoder");
    if (!decoder) return;
    const std::string type = type_of(*decoder, "decoder");
    if (type != "ByteLevel") refuse("decoder " + type, "only the ByteLevel decoder turns byte-level tokens back into the text");
  }

  TokenizerJson read_model(const json::Value& root) const {
    const json::Value* model = member(root, "(top level)", "model");
    if (!model) refuse("model", "missing");
    const std::string type = type_of(*model, "model");
    if (type != "BPE") refuse("model " + type, "only BPE models are supported (WordPiece, Unigram and WordLevel are not)");
    if (const json::Value* dropout = member(*model, "model", "dropout"); dropout && !(dropout->is_number() && dropout->as_double() == 0)) {
      refuse("model.dropout", "BPE dropout makes encoding random");
    }
    require_flag(*model, "model", "byte_fallback", false, false, "byte fallback (SentencePiece-style BPE, as Llama 2's)");
    require_flag(*model, "model", "ignore_merges", false, false, "taking whole words from the vocabulary before merging (as Llama 3)");
    require_flag(*model, "model", "fuse_unk", false, false, "fusing unknown tokens");
    require_empty(*model, "model", "continuing_subword_prefix");
    require_empty(*model, "model", "end_of_word_suffix");
    if (member(*model, "model", "unk_token")) refuse("model.unk_token", "byte-level BPE never needs an unknown token");

    TokenizerJson result;
    const json::Value* vocab = member(*model, "model", "vocab");
    if (!vocab) refuse("model.vocab", "missing");
    result.tokens = vocab_from_json(*vocab, file_ + ": model.vocab");
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
    result.merges = resolve_merges(spellings, result.tokens);
    return result;
  }

  // added_tokens: exactly one, "<|endoftext|>" (the Tokenizer splits it out of any text as EOS,
  // which is what HF does with a special added token that strips nothing), at its vocabulary id or
  // right after the vocabulary (where the Tokenizer puts it when the vocabulary lacks it).
  void check_added_tokens(const json::Value& root, const std::vector<std::string>& tokens) const {
    const json::Value* added = member(root, "(top level)", "added_tokens");
    if (!added || !added->is_array() || added->as_array().size() != 1) {
      refuse("added_tokens", "expected exactly one added token, \"<|endoftext|>\" (without it HF encodes that text as "
                             "ordinary pieces where this trainer reads an end of text)");
    }
    const json::Value& token = added->as_array()[0];
    const std::string where = "added_tokens[0]";
    const std::string content = string_member(token, where, "content");
    if (content != kEndOfText) refuse(where + " \"" + content + "\"", "only \"<|endoftext|>\" is supported as an added token");
    require_flag(token, where, "special", true, false, "a non-special <|endoftext|>");
    for (const char* flag : {"lstrip", "rstrip", "single_word"}) {
      require_flag(token, where, flag, false, false, std::string(flag) + " (whitespace around <|endoftext|> absorbed or required)");
    }
    const json::Value* id = member(token, where, "id");
    if (!id || !id->is_integer()) refuse(where + ".id", "expected a whole number");
    std::size_t expected = tokens.size();
    for (std::size_t t = 0; t < tokens.size(); ++t) {
      if (tokens[t] == kEndOfText) expected = t;
    }
    if (id->as_integer() != static_cast<std::int64_t>(expected)) {
      refuse(where + ".id", "\"<|endoftext|>\" has id " + std::to_string(id->as_integer()) + " but its place is " + std::to_string(expected));
    }
  }

 private:
  std::string type_of(const json::Value& component, const std::string& where) const {
    return string_member(component, where, "type");
  }

  std::string file_;
};

}  // namespace

TokenizerJson read_tokenizer_json(const std::filesystem::path& path) {
  const std::string text = read_whole_file(path);
  const json::Value root = parse_json_file(path, text);
  const Reader reader(path);
  if (!root.is_object()) reader.refuse("(top level)", "expected a JSON object, got " + std::string(root.kind_name()));
  reader.check_normalizer(root);
  reader.check_pre_tokenizer(root);
  reader.check_post_processor(root);
  reader.check_decoder(root);
  TokenizerJson result = reader.read_model(root);
  reader.check_added_tokens(root, result.tokens);
  return result;
}

void write_tokenizer_json(const std::filesystem::path& path, const std::vector<std::string>& tokens,
                          const std::vector<MergeRule>& merges, std::uint32_t eos) {
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
  const json::Object document{
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", json::Array{json::Object{{"id", static_cast<std::int64_t>(eos)}, {"content", std::string(kEndOfText)},
                                                {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                                                {"normalized", false}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer", byte_level(false, true)},
      {"post_processor", byte_level(true, false)},
      {"decoder", byte_level(true, true)},
      {"model", json::Object{{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr},
                             {"continuing_subword_prefix", ""}, {"end_of_word_suffix", ""}, {"fuse_unk", false},
                             {"byte_fallback", false}, {"ignore_merges", false}, {"vocab", std::move(vocab)},
                             {"merges", std::move(merge_list)}}},
  };
  write_text(path, json::write(document) + "\n");
}

}  // namespace llmrdzv::tokenizer
