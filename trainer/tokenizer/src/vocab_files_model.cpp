// vocab.json + merges.txt read with the tokenizer_config.json (and special_tokens_map.json) next to
// them, as transformers 5's AutoTokenizer builds GPT2Tokenizer from them (how OPT ships its
// tokenizer): GPT-2's byte-level BPE; bos/eos/unk "<|endoftext|>" unless the config names others;
// every special token the config names (its *_token keys, extra special tokens and
// added_tokens_decoder) split out of the text, at its vocabulary id or, when the vocabulary lacks
// it, the next id past it; and the BOS before every text when add_bos_token is true. Without a
// config that is plain GPT-2, what GPT2TokenizerFast.from_pretrained gives. A config asking for
// anything else is refused naming the file and key.
#include <algorithm>
#include <array>

#include "tokenizer_config.hpp"
#include "tokenizer_model.hpp"

namespace llmrdzv::tokenizer {
namespace {

// transformers' SPECIAL_TOKENS_ATTRIBUTES, in the order in which it adds them.
constexpr std::array<std::string_view, 7> kNamedTokens = {"bos_token", "eos_token", "unk_token", "sep_token",
                                                          "pad_token", "cls_token", "mask_token"};
// Config keys with which transformers would build another tokenizer than the files say.
constexpr std::array<std::string_view, 6> kForeignKeys = {"vocab", "merges", "post_processor", "tokenizer_truncation",
                                                          "tokenizer_padding", "auto_map"};

using NamedTokens = std::array<std::optional<ConfigToken>, kNamedTokens.size()>;

std::size_t named_index(std::string_view key) {
  return static_cast<std::size_t>(std::find(kNamedTokens.begin(), kNamedTokens.end(), key) - kNamedTokens.begin());
}

void check_config(const TokenizerConfig& config, const std::string& path) {
  const auto refuse_key = [&](const std::string& key, const std::string& why) { refuse_unsupported(path + ": " + key, why); };
  if (config.tokenizer_class && *config.tokenizer_class != "GPT2Tokenizer" && *config.tokenizer_class != "GPT2TokenizerFast") {
    refuse_key("tokenizer_class " + *config.tokenizer_class,
               "next to vocab.json + merges.txt only GPT2Tokenizer (GPT-2's byte-level BPE) is read");
  }
  if (config.add_prefix_space.value_or(false)) refuse_key("add_prefix_space = true", "adding a space before the text is not supported");
  if (config.add_eos_token.value_or(false)) refuse_key("add_eos_token = true", "an EOS appended to every text is not supported");
  if (config.split_special_tokens.value_or(false)) {
    refuse_key("split_special_tokens = true", "encoding special tokens' text as ordinary text is not supported");
  }
  for (const std::string& key : config.keys) {
    if (std::find(kForeignKeys.begin(), kForeignKeys.end(), key) != kForeignKeys.end()) {
      refuse_key(key, "transformers would build the tokenizer from it instead of vocab.json + merges.txt alone");
    }
  }
}

class SpecialTokens {
 public:
  explicit SpecialTokens(Tokenizer::Model& model) : model_(model) {}

  // The token's id: its vocabulary entry, else the next id past the vocabulary (as tokenizers'
  // add_tokens). `where` names it in errors.
  TokenId add(const ConfigToken& token, const std::string& where) {
    if (token.strips) refuse_unsupported(where + " \"" + token.content + "\"", "an added token that strips whitespace is not supported");
    if (!token.special) refuse_unsupported(where + " \"" + token.content + "\"", "a non-special added token is not supported");
    const auto it = std::find(model_.tokens.begin(), model_.tokens.end(), token.content);
    const auto id = static_cast<TokenId>(it - model_.tokens.begin());
    if (it == model_.tokens.end()) model_.tokens.push_back(token.content);
    if (std::none_of(specials_.begin(), specials_.end(), [&](const SpecialToken& t) { return t.id == id; })) {
      specials_.push_back({token.content, id});
    }
    return id;
  }
  std::vector<SpecialToken> take() { return std::move(specials_); }

 private:
  Tokenizer::Model& model_;
  std::vector<SpecialToken> specials_;
};

}  // namespace

std::shared_ptr<const Tokenizer::Model> vocab_files_model(const std::filesystem::path& vocab_json,
                                                          const std::filesystem::path& merges_txt, bool with_config) {
  auto model = std::make_shared<Tokenizer::Model>();
  model->kind = Tokenizer::Kind::gpt2_bpe;
  model->tokens = read_vocab_json(vocab_json);
  model->merges = read_merges_txt(merges_txt, model->tokens);
  const std::filesystem::path dir = vocab_json.parent_path();
  const std::filesystem::path config_path = dir / "tokenizer_config.json";
  const std::filesystem::path map_path = dir / "special_tokens_map.json";
  const std::optional<TokenizerConfig> config = with_config ? read_tokenizer_config(config_path) : std::nullopt;

  NamedTokens named;
  for (const std::size_t i : {named_index("bos_token"), named_index("eos_token"), named_index("unk_token")}) {
    named[i] = ConfigToken{std::string(kEndOfText)};  // GPT2Tokenizer's defaults
  }
  std::vector<std::pair<std::string, ConfigToken>> others;  // model-specific *_token keys, then extra special tokens
  std::optional<TokenizerConfig> map;
  if (config) {
    check_config(*config, config_path.string());
    for (const auto& [key, token] : config->tokens) {
      if (const std::size_t i = named_index(key); i < named.size()) named[i] = token;
      else if (token) others.emplace_back(config_path.string() + ": " + key, *token);
    }
    for (const ConfigToken& token : config->extra_special_tokens) others.emplace_back(config_path.string() + ": extra_special_tokens", token);
    // Without added_tokens_decoder, transformers still reads the older files: special_tokens_map.json
    // overrides the config's named tokens; added_tokens.json adds tokens (not supported).
    if (!config->added_tokens_decoder) {
      std::error_code ec;
      if (std::filesystem::exists(dir / "added_tokens.json", ec)) {
        refuse_unsupported((dir / "added_tokens.json").string(), "tokens added past vocab.json this way are not supported");
      }
      map = read_tokenizer_config(map_path);
      if (map) {
        for (const std::string& key : map->keys) {
          if (named_index(key) == named.size()) refuse_unsupported(map_path.string() + ": " + key, "only named special tokens are supported there");
        }
        for (const auto& [key, token] : map->tokens) named[named_index(key)] = token;
      }
    }
  }

  // The order in which transformers adds them, which gives the ids of those past the vocabulary.
  SpecialTokens specials(*model);
  auto decoder = config && config->added_tokens_decoder ? *config->added_tokens_decoder
                                                         : std::vector<std::pair<std::uint32_t, ConfigToken>>{};
  std::sort(decoder.begin(), decoder.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [id, token] : decoder) {
    const std::string where = config_path.string() + ": added_tokens_decoder " + std::to_string(id);
    if (const TokenId actual = specials.add(token, where); actual != id) {
      refuse_unsupported(where + " \"" + token.content + "\"", "transformers gives it id " + std::to_string(actual));
    }
  }
  std::array<std::optional<TokenId>, kNamedTokens.size()> named_ids;
  for (std::size_t i = 0; i < named.size(); ++i) {
    if (!named[i]) continue;
    ConfigToken token = *named[i];
    token.special = true;  // transformers makes every named token special
    named_ids[i] = specials.add(token, config_path.string() + ": " + std::string(kNamedTokens[i]));
  }
  for (const auto& [where, token] : others) specials.add(token, where);

  const auto eos = named_ids[named_index("eos_token")];
  if (!eos) refuse_unsupported(config_path.string() + ": eos_token", "null: which token ends a document is unknown");
  model->eos = *eos;
  if (config && config->add_bos_token.value_or(false)) model->bos = named_ids[named_index("bos_token")];
  model->specials = SpecialTokenFinder(specials.take());
  if (!is_plain_gpt2(*model)) {
    for (const std::filesystem::path& file : {vocab_json, merges_txt, config_path, map_path}) {
      if (file != map_path || map) model->source_files.emplace_back(file.filename().string(), read_whole_file(file));
    }
  }
  return finish_model(std::move(model), vocab_json.string(), false);
}

}  // namespace llmrdzv::tokenizer
