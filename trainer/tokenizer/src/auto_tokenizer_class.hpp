// Which tokenizer class transformers 5's AutoTokenizer loads from a directory. The hub's
// tokenizer_class (tokenizer_config.json's, else config.json's) is not always the one used: next
// to a config.json, the model type's registered class can override it (transformers keeps a list
// of model types whose hub class is wrong, Qwen2's and Phi-3's among them), and a model type
// registered to the plain backend (Mistral, Phi-3) reads tokenizer.json as it is. The class then
// decides whether the file is rebuilt (LlamaTokenizer: Metaspace instead of Llama 2's normalizer).
#pragma once

#include <filesystem>
#include <optional>
#include <string>

namespace llmrdzv::tokenizer {

struct AutoTokenizerClass {
  std::optional<std::string> name;  // without "Fast"; nullopt: tokenizer.json as it is
  std::string why;                  // for messages: the file and key the choice came from
};

// `hub_class`: tokenizer_config.json's tokenizer_class; `byte_level`: the tokenizer.json's
// pre-tokenizer is byte-level. Reads dir/config.json's model_type and tokenizer_class when there
// is one (no `dir`: a directory without); a model type outside this trainer's families keeps the
// hub's class.
AutoTokenizerClass auto_tokenizer_class(const std::optional<std::filesystem::path>& dir,
                                        const std::optional<std::string>& hub_class, bool byte_level);

}  // namespace llmrdzv::tokenizer
