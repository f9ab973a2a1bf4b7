// A tokenizer.json read together with the tokenizer_config.json (and config.json) next to it, as
// transformers 5's AutoTokenizer combines them: the config names the EOS, and the class
// AutoTokenizer loads (auto_tokenizer_class.hpp) may rebuild the tokenizer from the file's
// vocabulary (GPT2Tokenizer: GPT-2's pre-tokenizer; LlamaTokenizer: Metaspace with the prefix its
// `legacy` and `add_prefix_space` choose, which save() writes out as such; GemmaTokenizer: spaces
// as "▁", no prefix; Qwen2Tokenizer: NFC and Qwen2's split). A combination that would encode
// otherwise than this trainer is refused naming the file and key.
#include <algorithm>

#include "auto_tokenizer_class.hpp"
#include "tokenizer_config.hpp"
#include "tokenizer_model.hpp"

namespace llmrdzv::tokenizer {
namespace {

class Combiner {
 public:
  Combiner(const std::filesystem::path& json_path, const std::filesystem::path& config_path)
      : json_path_(json_path.string()), config_path_(config_path.string()) {}

  // The added tokens extend the vocabulary: each is its own vocabulary entry or the next id past it.
  void add_tokens(Tokenizer::Model& model, std::vector<SpecialToken> added) const {
    std::stable_sort(added.begin(), added.end(), [](const SpecialToken& a, const SpecialToken& b) { return a.id < b.id; });
    for (const SpecialToken& t : added) {
      const std::string named = json_path_ + ": added_tokens \"" + t.content + "\" (id " + std::to_string(t.id) + ")";
      if (t.id < model.tokens.size()) {
        if (model.tokens[t.id] != t.content) refuse_unsupported(named, "the vocabulary has \"" + model.tokens[t.id] + "\" at that id");
      } else if (t.id == model.tokens.size()) {
        if (std::find(model.tokens.begin(), model.tokens.end(), t.content) != model.tokens.end()) {
          refuse_unsupported(named, "the vocabulary has it at another id");
        }
        model.tokens.push_back(t.content);
      } else {
        refuse_unsupported(named, "ids must continue the vocabulary of " + std::to_string(model.tokens.size()) + " without gaps");
      }
    }
  }

  // A special token the config names: an added token, or a vocabulary entry (transformers then
  // makes it special too).
  TokenId config_token(Tokenizer::Model& model, std::vector<SpecialToken>& specials, const std::string& key,
                       const std::string& content) const {
    if (const auto it = std::find_if(specials.begin(), specials.end(), [&](const SpecialToken& t) { return t.content == content; });
        it != specials.end()) {
      return it->id;
    }
    const auto it = std::find(model.tokens.begin(), model.tokens.end(), content);
    if (it == model.tokens.end()) {
      refuse_unsupported(config_path_ + ": " + key + " \"" + content + "\"", "not in the vocabulary (transformers would add it at a new id)");
    }
    const auto id = static_cast<TokenId>(it - model.tokens.begin());
    specials.push_back({content, id});
    return id;
  }

  // What the class AutoTokenizer loads (`named`: the file and key that chose it) makes of the file
  // (a class not named here keeps the file's).
  void apply_class(TokenizerJson& json, const std::string& cls, const std::string& named, const TokenizerConfig& config) const {
    if (cls == "GPT2Tokenizer") {
      // GPT2Tokenizer.__init__: BPE, no normalizer, ByteLevel with GPT-2's pattern, over any
      // byte-level vocabulary.
      if (json.kind == JsonKind::sentencepiece_bpe) {
        refuse_unsupported(named, "transformers rebuilds GPT-2's byte-level pre-tokenizer over this tokenizer.json's vocabulary, "
                                  "which is SentencePiece-style");
      }
      json.kind = JsonKind::gpt2_bpe;
      json.nfc = json.ignore_merges = false;
      if (config.add_prefix_space.value_or(false)) refuse_unsupported(config_path_ + ": add_prefix_space = true", "adding a space before the text is not supported");
    } else if (cls == "LlamaTokenizer") {  // over SentencePiece-style files only (auto_tokenizer_class)
      // LlamaTokenizer.__init__: BPE(fuse_unk=True, byte_fallback=True, no unk token), no normalizer,
      // Metaspace(prepend_scheme = "first" unless legacy, "never" without add_prefix_space, split=False).
      json.prefix = !config.add_prefix_space.value_or(true) ? SpacePrefix::never
                    : config.legacy.value_or(false)        ? SpacePrefix::always
                                                            : SpacePrefix::first;
      json.fuse_unk = json.byte_fallback = true;
      json.unk.reset();
      json.ignore_merges = false;
    } else if (cls == "GemmaTokenizer") {
      // GemmaTokenizer.__init__: BPE(fuse_unk=True, byte_fallback=True), Replace(" " -> "▁"), a
      // Split at " " that finds none.
      if (json.kind != JsonKind::sentencepiece_bpe || json.prefix != SpacePrefix::never) {
        refuse_unsupported(named, "transformers rebuilds Gemma's normalizer over this tokenizer.json's vocabulary, which has "
                                  "another pipeline");
      }
      json.fuse_unk = json.byte_fallback = true;
      json.ignore_merges = false;
    } else if (cls == "Qwen2Tokenizer") {
      // Qwen2Tokenizer.__init__: BPE (ignore_merges off), NFC, Split(Qwen2's pattern), ByteLevel,
      // over any byte-level vocabulary (a Qwen2 model directory gets it whatever its files say).
      if (json.kind == JsonKind::sentencepiece_bpe) {
        refuse_unsupported(named, "transformers rebuilds Qwen2's NFC and byte-level split over this tokenizer.json's "
                                  "vocabulary, which is SentencePiece-style");
      }
      json.kind = JsonKind::qwen2_bpe;
      json.nfc = true;
      if (config.add_prefix_space.value_or(false)) refuse_unsupported(config_path_ + ": add_prefix_space = true", "adding a space before the text is not supported");
      json.ignore_merges = false;
    }
  }

 private:
  std::string json_path_;
  std::string config_path_;
};

Tokenizer::Kind kind_of(JsonKind kind) {
  switch (kind) {
    case JsonKind::gpt2_bpe: return Tokenizer::Kind::gpt2_bpe;
    case JsonKind::llama3_bpe: return Tokenizer::Kind::llama3_bpe;
    case JsonKind::qwen2_bpe: return Tokenizer::Kind::qwen2_bpe;
    case JsonKind::sentencepiece_bpe: return Tokenizer::Kind::sentencepiece_bpe;
  }
  return Tokenizer::Kind::gpt2_bpe;
}

}  // namespace

std::shared_ptr<const Tokenizer::Model> tokenizer_json_model(const std::filesystem::path& tokenizer_json) {
  const std::filesystem::path config_path = tokenizer_json.parent_path() / "tokenizer_config.json";
  const Combiner combiner(tokenizer_json, config_path);
  std::string text = read_whole_file(tokenizer_json);
  TokenizerJson json = read_tokenizer_json(tokenizer_json, text);
  const std::optional<TokenizerConfig> config = read_tokenizer_config(config_path);
  const AutoTokenizerClass cls = auto_tokenizer_class(tokenizer_json.parent_path(), config ? config->tokenizer_class : std::nullopt,
                                                      json.kind != JsonKind::sentencepiece_bpe);
  if (cls.name) combiner.apply_class(json, *cls.name, cls.why, config ? *config : TokenizerConfig{});
  // What LlamaTokenizer rebuilt is what its save_pretrained writes: the Metaspace form, which
  // AutoTokenizer reads alike whichever class a model directory's config.json then picks.
  if (cls.name == "LlamaTokenizer") text = llama_rebuilt_json(tokenizer_json, text, json.prefix);

  auto model = std::make_shared<Tokenizer::Model>();
  model->kind = kind_of(json.kind);
  model->nfc = json.nfc;
  model->tokens = std::move(json.tokens);
  model->merges = std::move(json.merges);
  model->ignore_merges = json.ignore_merges;
  model->prefix = json.prefix;
  model->fuse_unk = json.fuse_unk;
  combiner.add_tokens(*model, json.added);
  std::vector<SpecialToken> specials = std::move(json.added);
  if (json.unk) model->unk = static_cast<TokenId>(std::find(model->tokens.begin(), model->tokens.end(), *json.unk) - model->tokens.begin());

  // EOS: the config's eos_token, else "<|endoftext|>".
  const std::string eos = config && config->eos_token ? *config->eos_token : std::string(kEndOfText);
  const bool eos_known = (config && config->eos_token) ||
                         std::any_of(specials.begin(), specials.end(), [](const SpecialToken& t) { return t.content == kEndOfText; });
  if (!eos_known) {
    refuse_unsupported(tokenizer_json.string() + ": added_tokens", "no tokenizer_config.json eos_token and no \"<|endoftext|>\": "
                                                                "which token ends a document is unknown");
  }
  model->eos = combiner.config_token(*model, specials, "eos_token", eos);
  // BOS: the file's post-processor's. transformers 5 drops a tokenizer_config.json's add_bos_token
  // and add_eos_token when a tokenizer.json is there (PreTrainedTokenizerBase._from_pretrained), so
  // they change nothing here either.
  if (json.bos) model->bos = json.bos->id;
  model->specials = SpecialTokenFinder(std::move(specials));
  if (!is_plain_gpt2(*model)) {
    const auto name = [&](std::optional<TokenId> id) { return id ? std::optional(model->tokens[*id]) : std::nullopt; };
    // Read as it is although the config names a class that rebuilds: saved naming none, so that
    // a model directory of another type does not rebuild it.
    const bool config_rebuilds = config && config->tokenizer_class && !cls.name &&
                                 auto_tokenizer_class(std::nullopt, config->tokenizer_class, json.kind != JsonKind::sentencepiece_bpe).name;
    model->source_files = {{"tokenizer.json", std::move(text)},
                           {"tokenizer_config.json", !config ? minimal_tokenizer_config(*name(model->eos), name(model->bos))
                                                     : config_rebuilds ? as_is_tokenizer_config(*config)
                                                                       : config->text}};
  }
  return finish_model(std::move(model), tokenizer_json.string(), json.byte_fallback);
}

}  // namespace llmrdzv::tokenizer
